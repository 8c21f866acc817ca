// JSON → ValueTree through nlohmann's SAX interface (see json_reader.hpp).
#include "json_reader.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "memtool/trace/input_error.hpp"

namespace memtool::trace::detail {
namespace {

// An input iterator over the text that counts the bytes nlohmann has consumed, so values can
// be given an offset (the SAX callbacks do not carry one).
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* at, std::size_t* consumed) : at_(at), consumed_(consumed) {}
  reference operator*() const { return *at_; }
  CountingIterator& operator++() {
    ++at_;
    ++*consumed_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  friend bool operator==(const CountingIterator& a, const CountingIterator& b) { return a.at_ == b.at_; }

 private:
  const char* at_;
  std::size_t* consumed_;
};

class TreeBuilder {
 public:
  using json = nlohmann::json;
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  using Progress = std::function<void(std::uint64_t, std::uint64_t)>;
  TreeBuilder(const std::size_t* consumed, std::size_t total, DecodeBudget& budget, const Progress& progress)
      : consumed_(consumed), total_(total), progress_(progress), budget_(budget), document_{ValueTree(&budget)} {}

  bool null() { return add(document_.tree.add_none(here())); }
  bool boolean(bool value) { return add(document_.tree.add_bool(here(), value)); }
  bool number_integer(number_integer_t value) {
    const bool negative = value < 0;
    // Magnitude without overflowing on INT64_MIN.
    const std::uint64_t magnitude =
        negative ? ~static_cast<std::uint64_t>(value) + 1 : static_cast<std::uint64_t>(value);
    return add(document_.tree.add_integer(here(), negative, magnitude));
  }
  bool number_unsigned(number_unsigned_t value) { return add(document_.tree.add_integer(here(), false, value)); }
  bool number_float(number_float_t value, const string_t& /*text*/) {
    return add(document_.tree.add_float(here(), value));
  }
  bool string(string_t& value) { return add(document_.tree.add_text(here(), value)); }
  bool binary(binary_t& /*value*/) { return false; }  // not produced by the JSON parser

  bool start_object(std::size_t /*elements*/) { return open(ValueKind::dict); }
  bool key(string_t& value) {
    stack(document_.tree.add_text(here(), value));
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*elements*/) { return open(ValueKind::list); }
  bool end_array() { return close(); }

  bool parse_error(std::size_t position, const std::string& /*last_token*/, const nlohmann::detail::exception& error) {
    error_position_ = position;
    error_message_ = error.what();
    return false;
  }

  JsonDocument& document() { return document_; }
  [[nodiscard]] std::size_t error_position() const { return error_position_; }
  [[nodiscard]] const std::string& error_message() const { return error_message_; }

 private:
  [[nodiscard]] std::uint64_t here() const { return *consumed_; }

  // The items of the open containers wait on one stack; a container takes its items in one
  // piece when it closes, so each is a single run of the tree's slots.
  void stack(ValueRef ref) {
    if (items_.size() == items_charged_) {
      budget_.charge(sizeof(ValueRef));
      ++items_charged_;
    }
    items_.push_back(ref);
  }

  bool add(ValueRef ref) {
    if (*consumed_ >= next_progress_ && progress_) {
      progress_(*consumed_, total_);
      next_progress_ = *consumed_ + kProgressStep;
    }
    if (open_.empty()) {
      document_.root = ref;
    } else {
      stack(ref);
    }
    return true;
  }

  bool open(ValueKind kind) {
    // The bracket has just been consumed: point at it.
    const std::uint64_t at = here() == 0 ? 0 : here() - 1;
    const ValueRef ref = document_.tree.add_container(at, kind);
    add(ref);
    if (open_.size() == open_charged_) {
      budget_.charge(sizeof(OpenContainer));
      ++open_charged_;
    }
    open_.push_back({ref, static_cast<std::uint32_t>(items_.size())});  // <= values, so < 2^32
    return true;
  }

  bool close() {
    const OpenContainer container = open_.back();
    open_.pop_back();
    document_.tree.append(container.ref, std::span<const ValueRef>(items_).subspan(container.first_item));
    items_.resize(container.first_item);
    return true;
  }

  static constexpr std::size_t kProgressStep = std::size_t{4} << 20;

  struct OpenContainer {  // 8 bytes: a file of brackets holds one per byte
    ValueRef ref;
    std::uint32_t first_item;  // its first item on items_
  };

  const std::size_t* consumed_;
  std::size_t total_;
  const Progress& progress_;
  DecodeBudget& budget_;
  std::size_t next_progress_ = kProgressStep;
  JsonDocument document_;
  std::vector<OpenContainer> open_;
  std::size_t open_charged_ = 0;
  std::vector<ValueRef> items_;
  std::size_t items_charged_ = 0;
  std::size_t error_position_ = 0;
  std::string error_message_;
};

// nlohmann quotes the offending token whole ("number overflow parsing '<5 MB of digits>'"):
// each quoted part is cut to its first bytes and its length.
std::string cut_quotes(std::string_view message) {
  constexpr std::size_t kMaxQuoted = 40;
  std::string out;
  std::size_t at = 0;
  while (at < message.size()) {
    const std::size_t open = message.find('\'', at);
    const std::size_t close = open == std::string_view::npos ? open : message.find('\'', open + 1);
    if (close == std::string_view::npos) break;
    const std::string_view quoted = message.substr(open + 1, close - open - 1);
    out.append(message.substr(at, open + 1 - at));
    if (quoted.size() > kMaxQuoted) {
      out += fmt::format("{}... ({} bytes)", quoted.substr(0, kMaxQuoted), quoted.size());
    } else {
      out.append(quoted);
    }
    out += '\'';
    at = close + 1;
  }
  out.append(message.substr(at < message.size() ? at : message.size()));
  return out;
}

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1,
// column 7: " or "[json.exception.out_of_range.406] "; our InputError already says where, so
// keep what follows.
std::string short_message(const std::string& what) {
  std::string_view message = what;
  if (const std::size_t column = message.find("column "); column != std::string_view::npos) {
    if (const std::size_t colon = message.find(": ", column); colon != std::string_view::npos) {
      message.remove_prefix(colon + 2);
    }
  } else if (message.starts_with("[json.exception.")) {
    if (const std::size_t bracket = message.find("] "); bracket != std::string_view::npos) {
      message.remove_prefix(bracket + 2);
    }
  }
  return cut_quotes(message);
}

}  // namespace

JsonDocument read_json(std::string_view text, const std::string& name, DecodeBudget& budget,
                       const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  std::size_t consumed = 0;
  TreeBuilder builder(&consumed, text.size(), budget, progress);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(CountingIterator(text.data(), &consumed),
                                   CountingIterator(text.data() + text.size(), &consumed), &builder);
  } catch (const std::length_error&) {
    throw InputError(name, consumed, "JSON document holds more values than we can index");
  } catch (const DecodeBudget::Exceeded&) {
    throw InputError(name, consumed, budget.message());
  } catch (const nlohmann::json::exception& error) {
    throw InputError(name, consumed, short_message(error.what()));
  }
  if (!ok) {
    // nlohmann counts the character it stopped on; report the offset of that byte.
    const std::size_t position = builder.error_position();
    const std::size_t offset = position == 0 ? 0 : position - 1;
    throw InputError(name, offset < text.size() ? offset : text.size(), short_message(builder.error_message()));
  }
  builder.document().tree.finish();  // a no-op: every container took its items in one piece
  return std::move(builder.document());
}

JsonDocument read_json(std::string_view text, const std::string& name,
                       const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  DecodeBudget budget(text.size());
  return read_json(text, name, budget, progress);
}

}  // namespace memtool::trace::detail
