// Parsing and validation of the MEMTOOL_* variables, generated from options.def.
#include "memtool/interpose/options.hpp"
#include "memtool/interpose/rank.hpp"

#include "memtool/engine/strategy.hpp"
#include "memtool/swapper/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "kernel_name_matcher.hpp"
#include "memtool/trace/bytes.hpp"
#include "memtool/trace/name_table.hpp"

namespace memtool::interpose {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Each parser returns an empty string on success, else what was expected.
std::string parse(std::string_view text, bool& out) {
  const std::string value = lower(text);
  if (value == "1" || value == "true" || value == "yes" || value == "on") {
    out = true;
    return {};
  }
  if (value == "0" || value == "false" || value == "no" || value == "off" || value.empty()) {
    out = false;
    return {};
  }
  return "expected 0 or 1";
}

// Whole numbers from `least` (1 for count, 0 for count_or_zero) to kMaxCount.
constexpr std::uint32_t kMaxCount = 256;
std::string parse_count(std::string_view text, std::uint32_t least, std::uint32_t& out) {
  std::uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < least || value > kMaxCount) {
    return fmt::format("expected a whole number from {} to {}", least, kMaxCount);
  }
  out = value;
  return {};
}

// Sizes: the one grammar of memtool/trace/bytes.hpp, with what each option type accepts.
constexpr trace::ByteGrammar grammar_of(OptionType type) {
  switch (type) {
    case OptionType::budget:
      return {.share_of = "the device's memory", .zero = true, .rate = false};
    case OptionType::rate:
      return {.share_of = {}, .zero = true, .rate = true};
    case OptionType::buffer_size:
      return {.share_of = {}, .zero = false, .rate = false};
    default:
      return {};
  }
}

std::string parse_size(std::string_view text, OptionType type, std::uint64_t& out) {
  std::string problem;
  const auto size = trace::parse_bytes(text, grammar_of(type), &problem);
  if (size) out = size->bytes;
  return problem;
}

std::string parse_size(std::string_view text, OptionType type, Budget& out) {
  std::string problem;
  const auto size = trace::parse_bytes(text, grammar_of(type), &problem);
  if (size) out = Budget{size->bytes, size->percent};
  return problem;
}

std::string parse(std::string_view text, SwapMode& out) {
  const std::string value = lower(text);
  if (value == "explicit")
    out = SwapMode::explicit_copies;
  else if (value == "uvm" || value.empty())
    out = SwapMode::uvm;
  else
    return "expected one of explicit|uvm";
  return {};
}

// A name from a table (`table` of entries with a `name`), or `extra`.
template <class Table>
std::string parse_name(std::string_view text, const Table& table, std::string_view extra, std::string& out) {
  const std::string value = lower(text);
  if (value == extra || trace::find_named(table, value) != nullptr) {
    out = value;
    return {};
  }
  return "expected one of " + trace::names_of(table, "|") + "|" + std::string(extra);
}

// A strategy of the engine's table (memtool/engine/strategy.hpp), or off.
std::string parse_strategy(std::string_view text, std::string& out) {
  return parse_name(text, engine::strategies(), "off", out);
}

// A swapper strategy (memtool/swapper/plan.hpp), or belady: the swap policy's own rule alone.
std::string parse_swap_policy(std::string_view text, std::string& out) {
  return parse_name(text, swapper::strategies(), "belady", out);
}

std::string parse(std::string_view text, LogLevel& out) {
  const std::string value = lower(text);
  if (value == "off")
    out = LogLevel::off;
  else if (value == "error")
    out = LogLevel::error;
  else if (value == "warn" || value == "warning")
    out = LogLevel::warn;
  else if (value == "info")
    out = LogLevel::info;
  else if (value == "debug")
    out = LogLevel::debug;
  else
    return "expected one of off|error|warn|info|debug";
  return {};
}

std::string parse(std::string_view text, Toggle& out) {
  const std::string value = lower(text);
  if (value == "auto" || value.empty())
    out = Toggle::automatic;
  else if (value == "on" || value == "1")
    out = Toggle::on;
  else if (value == "off" || value == "0")
    out = Toggle::off;
  else
    return "expected one of auto|on|off";
  return {};
}

std::string parse_text(std::string_view text, OptionType type, std::string& out) {
  if (type == OptionType::regex && !text.empty()) {
    std::string problem;
    if (!KernelNameMatcher::compile(text, &problem)) return fmt::format("not a valid regular expression ({})", problem);
  }
  if ((type == OptionType::path || type == OptionType::path_template) && text.find('\0') != std::string_view::npos) {
    return "a path cannot contain NUL";
  }
  out = std::string(text);
  return {};
}

template <OptionType T, class V>
std::string parse_value(std::string_view text, V& out) {
  if constexpr (T == OptionType::path || T == OptionType::path_template || T == OptionType::regex) {
    return parse_text(text, T, out);
  } else if constexpr (T == OptionType::strategy) {
    return parse_strategy(text, out);
  } else if constexpr (T == OptionType::swap_policy) {
    return parse_swap_policy(text, out);
  } else if constexpr (T == OptionType::count || T == OptionType::count_or_zero) {
    return parse_count(text, T == OptionType::count ? 1 : 0, out);
  } else if constexpr (T == OptionType::bytes || T == OptionType::rate || T == OptionType::buffer_size ||
                       T == OptionType::budget) {
    return parse_size(text, T, out);
  } else {
    return parse(text, out);
  }
}

bool known_option(std::string_view name) {
  return std::any_of(kOptionTable.begin(), kOptionTable.end(),
                     [&](const OptionInfo& option) { return option.name == name; });
}

}  // namespace

Options default_options() {
  Options options;
#define MEMTOOL_OPTION(field, NAME, type, default_value, description) \
  (void)parse_value<OptionType::type>(default_value, options.field);
#include "memtool/interpose/options.def"
#undef MEMTOOL_OPTION
  return options;
}

namespace {
// A refused value as quoted in its error: the first kQuotedChars characters of a long one, so
// the reason after it stays within a log line.
std::string shortened(std::string_view text) {
  constexpr std::size_t kQuotedChars = 200;
  if (text.size() <= kQuotedChars) return std::string(text);
  return fmt::format("{}... ({} characters)", text.substr(0, kQuotedChars), text.size());
}
}  // namespace

ParsedOptions parse_options(const EnvLookup& lookup, const char* const* environment) {
  ParsedOptions parsed;
  parsed.options = default_options();
#define MEMTOOL_OPTION(field, NAME, type, default_value, description)                               \
  if (const char* text = lookup("MEMTOOL_" #NAME); text != nullptr) {                               \
    const std::string problem = parse_value<OptionType::type>(text, parsed.options.field);          \
    if (!problem.empty())                                                                           \
      parsed.errors.push_back(fmt::format("MEMTOOL_" #NAME "='{}': {}", shortened(text), problem)); \
  }
#include "memtool/interpose/options.def"
#undef MEMTOOL_OPTION

  for (const char* const* entry = environment; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view assignment{*entry};
    if (assignment.rfind("MEMTOOL_", 0) != 0) continue;
    const std::string_view name = assignment.substr(0, assignment.find('='));
    if (!known_option(name)) {
      parsed.warnings.push_back(fmt::format("unknown variable {} ignored (see `memtool help env`)", name));
    }
  }
  return parsed;
}

std::string expand_path_template(std::string_view path_template, long pid, const EnvLookup& lookup) {
  std::string out;
  out.reserve(path_template.size() + 16);
  for (std::size_t i = 0; i < path_template.size(); ++i) {
    const char c = path_template[i];
    if (c != '%' || i + 1 == path_template.size()) {
      out.push_back(c);
      continue;
    }
    const char next = path_template[i + 1];
    if (next == 'p') {
      out += std::to_string(pid);
    } else if (next == 'r') {
      const auto rank = rank_from_environment(lookup);  // rank.hpp: which launcher's variable
      out += rank ? std::to_string(rank->rank) : std::string("0");
    } else if (next == '%') {
      out.push_back('%');
    } else {
      out.push_back('%');
      out.push_back(next);
    }
    ++i;
  }
  return out;
}

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::off:
      return "off";
    case LogLevel::error:
      return "error";
    case LogLevel::warn:
      return "warn";
    case LogLevel::info:
      return "info";
    case LogLevel::debug:
      return "debug";
  }
  return "?";
}

std::string_view to_string(Toggle toggle) {
  switch (toggle) {
    case Toggle::automatic:
      return "auto";
    case Toggle::on:
      return "on";
    case Toggle::off:
      return "off";
  }
  return "?";
}

std::string_view to_string(SwapMode mode) { return mode == SwapMode::uvm ? "uvm" : "explicit"; }

}  // namespace memtool::interpose
