// render_man_pages (see man_page.hpp): roff with the man(7) macros, nothing groff-specific, so
// man, mandoc and groff -man all read it.
#include "detail/man_page.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cctype>

#include "memtool/interpose/options_table.hpp"
#include "verbs.hpp"

namespace memtool::cli {
namespace {

// Text safe inside a roff line: backslashes escaped, hyphens as the minus sign man pages use
// for options, a break point after '|' and ',' (lists of names), and a leading '.' or '\''
// (a request) guarded.
std::string roff(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (const char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else if (c == '\n')
      out += "\n.br\n";  // a line break the help text asked for
    else if (c == '|' || c == ',')
      out += std::string(1, c) + "\\:";  // long a|b|c lists may break here
    else
      out.push_back(c);
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string header(std::string_view page, std::string_view version) {
  return fmt::format(".TH {} 1 \"\" \"memtool {}\" \"memtool manual\"\n", upper(page), version);
}

bool is_flag(const CLI::Option& option) { return option.get_expected_min() == 0; }

// The options of a verb as CLI11 holds them, without --help (every page says that once).
std::vector<const CLI::Option*> options_of(const CLI::App& verb) {
  const CLI::Option* help = verb.get_help_ptr();
  return verb.get_options([help](const CLI::Option* option) { return option != help && !option->get_group().empty(); });
}

std::string synopsis(const CLI::App& verb) {
  std::string out = fmt::format(".B memtool {}\n", verb.get_name());
  for (const CLI::Option* option : options_of(verb)) {
    if (option->get_positional()) continue;
    const std::string name = roff(option->get_name(false, false));
    if (is_flag(*option)) {
      out += fmt::format("[\\fB{}\\fR]\n", name);
    } else {
      out += fmt::format("{}\\fB{}\\fR \\fI{}\\fR{}\n", option->get_required() ? "" : "[", name,
                         roff(option->get_type_name()), option->get_required() ? "" : "]");
    }
  }
  for (const CLI::Option* option : options_of(verb)) {
    if (!option->get_positional()) continue;
    const bool many = option->get_items_expected_max() > 1;
    const std::string name = roff(option->get_name(true, false));
    out += option->get_required() ? fmt::format("\\fI{}\\fR{}\n", name, many ? " ..." : "")
                                  : fmt::format("[\\fI{}\\fR{}]\n", name, many ? " ..." : "");
  }
  return out;
}

std::string options_section(const CLI::App& verb) {
  std::string out = ".SH OPTIONS\n";
  for (const CLI::Option* option : options_of(verb)) {
    std::string names = roff(option->get_name(true, true));
    std::string term = option->get_positional() ? fmt::format("\\fI{}\\fR", names) : fmt::format("\\fB{}\\fR", names);
    if (!option->get_positional() && !is_flag(*option))
      term += fmt::format(" \\fI{}\\fR", roff(option->get_type_name()));
    std::string text = option->get_description();
    if (!option->get_default_str().empty()) text += fmt::format(" (default: {})", option->get_default_str());
    if (option->get_required()) text += " (required)";
    out += fmt::format(".TP\n{}\n{}\n", term, roff(text));
  }
  out += ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nPrint this help and exit.\n";
  return out;
}

std::string environment_section() {
  std::string out =
      ".SH ENVIRONMENT\nlibmemtool.so reads these variables; a bad value is reported on stderr and the "
      "library then stays out of the way (every call passes straight to the driver). "
      "\\fBmemtool doctor\\fR checks the ones set.\n";
  for (const auto& option : interpose::kOptionTable) {
    const std::string default_text =
        option.default_value.empty() ? std::string("unset") : fmt::format("default {}", option.default_value);
    out += fmt::format(".TP\n\\fB{}\\fR=\\fI{}\\fR ({})\n{}\n", roff(option.name),
                       roff(interpose::value_syntax(option.type)), roff(default_text), roff(option.description));
  }
  return out;
}

constexpr std::string_view kExitStatus =
    ".SH EXIT STATUS\n"
    "0 on success; 1 when something failed; 2 for a bad input file or argument (one line on stderr naming the file "
    "and byte offset). \\fBmemtool record\\fR and \\fBmemtool run\\fR exit with the program's status, always; "
    "\\fBmemtool plan \\-\\-capacity\\fR exits with 3 when no plan fits; \\fBmemtool doctor\\fR with 1 when a "
    "check fails.\n";

std::string see_also(const CLI::App& app, std::string_view except) {
  std::string out = ".SH SEE ALSO\n";
  std::vector<std::string> pages;
  if (except != "memtool") pages.emplace_back("\\fBmemtool\\fR(1)");
  for (const CLI::App* verb : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (verb->get_name() != except) pages.push_back(fmt::format("\\fBmemtool\\-{}\\fR(1)", verb->get_name()));
  }
  for (std::size_t i = 0; i < pages.size(); ++i) out += pages[i] + (i + 1 < pages.size() ? ",\n" : "\n");
  return out;
}

std::string verb_page(const CLI::App& app, const CLI::App& verb, std::string_view version) {
  const VerbInfo* info = find_verb(verb.get_name());
  const std::string page = fmt::format("memtool-{}", verb.get_name());
  std::string out = header(page, version);
  out += fmt::format(".SH NAME\nmemtool\\-{} \\- {}\n", roff(verb.get_name()), roff(verb.get_description()));
  out += ".SH SYNOPSIS\n" + synopsis(verb);
  if (info != nullptr) out += fmt::format(".SH DESCRIPTION\n{}\n", roff(info->description));
  out += options_section(verb);
  if (info != nullptr) out += fmt::format(".SH EXAMPLE\n.nf\n{}\n.fi\n", roff(info->example));
  out += kExitStatus;
  const std::string& name = verb.get_name();
  if (name == "run" || name == "record" || name == "doctor") out += environment_section();
  out += see_also(app, name);
  return out;
}

std::string program_page(const CLI::App& app, std::string_view version) {
  std::string out = header("memtool", version);
  out += fmt::format(".SH NAME\nmemtool \\- {}\n", roff(kProgramSummary));
  out += ".SH SYNOPSIS\n.B memtool\n\\fIVERB\\fR [\\fIOPTIONS\\fR]\n.br\n.B memtool \\-\\-version\n";
  out += fmt::format(".SH DESCRIPTION\n{}\n", roff(kProgramDescription));
  out += ".SH COMMANDS\n";
  for (const CLI::App* verb : app.get_subcommands([](const CLI::App*) { return true; })) {
    out += fmt::format(".TP\n\\fBmemtool\\-{}\\fR(1)\n{}\n", roff(verb->get_name()), roff(verb->get_description()));
  }
  out += fmt::format(".SH FILES\n{}\n", roff(kLibraryLookup));
  out += environment_section();
  out += kExitStatus;
  out += see_also(app, "memtool");
  return out;
}

}  // namespace

std::vector<ManPage> render_man_pages(const CLI::App& app, std::string_view version) {
  std::vector<ManPage> pages;
  pages.push_back({"memtool.1", program_page(app, version)});
  for (const CLI::App* verb : app.get_subcommands([](const CLI::App*) { return true; })) {
    pages.push_back({fmt::format("memtool-{}.1", verb->get_name()), verb_page(app, *verb, version)});
  }
  return pages;
}

std::string wrap_paragraph(std::string_view text, std::size_t width, std::string_view indent) {
  std::string out;
  std::size_t line = 0;
  bool words_on_line = false;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && text[at] == ' ') ++at;
    std::size_t end = text.find(' ', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(at, end - at);
    at = end;
    if (word.empty()) break;
    if (words_on_line && line + 1 + word.size() > width) {
      out += '\n';
      out += indent;
      line = indent.size();
    } else if (words_on_line) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
    words_on_line = true;
  }
  return out;
}

}  // namespace memtool::cli
