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
  TreeBuilder(const std::size_t* consumed, std::size_t total, const Progress& progress)
      : consumed_(consumed), total_(total), progress_(progress) {}

  bool null() { return add(document_.tree.add_none(here())); }
  bool boolean(bool value) { return add(document_.tree.add_bool(here(), value)); }
  bool number_integer(number_integer_t value) {
    const bool negative = value < 0;
    // Magnitude without overflowing on INT64_MIN.
    const std::uint64_t magnitude =
        negative ? ~static_cast<std::uint64_t>(value) + 1 : static_cast<std::uint64_t>(value);
    return add(document_.tree.add_integer(here(), negative, magnitude));
  }
  bool number_unsigned(number_unsigned_t value) {
    return add(document_.tree.add_integer(here(), false, value));
  }
  bool number_float(number_float_t value, const string_t& /*text*/) {
    return add(document_.tree.add_float(here(), value));
  }
  bool string(string_t& value) { return add(document_.tree.add_text(here(), value)); }
  bool binary(binary_t& /*value*/) { return false; }  // not produced by the JSON parser

  bool start_object(std::size_t /*elements*/) { return open(ValueKind::dict); }
  bool key(string_t& value) {
    document_.tree.append(open_.back(), document_.tree.add_text(here(), value));
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*elements*/) { return open(ValueKind::list); }
  bool end_array() { return close(); }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) {
    error_position_ = position;
    error_message_ = error.what();
    return false;
  }

  JsonDocument& document() { return document_; }
  [[nodiscard]] std::size_t error_position() const { return error_position_; }
  [[nodiscard]] const std::string& error_message() const { return error_message_; }

 private:
  [[nodiscard]] std::uint64_t here() const { return *consumed_; }

  bool add(ValueRef ref) {
    if (*consumed_ >= next_progress_ && progress_) {
      progress_(*consumed_, total_);
      next_progress_ = *consumed_ + kProgressStep;
    }
    if (open_.empty()) {
      document_.root = ref;
    } else {
      document_.tree.append(open_.back(), ref);
    }
    return true;
  }

  bool open(ValueKind kind) {
    // The bracket has just been consumed: point at it.
    const std::uint64_t at = here() == 0 ? 0 : here() - 1;
    const ValueRef ref = document_.tree.add_container(at, kind);
    add(ref);
    open_.push_back(ref);
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  static constexpr std::size_t kProgressStep = std::size_t{4} << 20;

  const std::size_t* consumed_;
  std::size_t total_;
  const Progress& progress_;
  std::size_t next_progress_ = kProgressStep;
  JsonDocument document_;
  std::vector<ValueRef> open_;
  std::size_t error_position_ = 0;
  std::string error_message_;
};

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1,
// column 7: "; our InputError already says where, so keep what follows.
std::string short_message(const std::string& what) {
  const std::size_t column = what.find("column ");
  if (column != std::string::npos) {
    const std::size_t colon = what.find(": ", column);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  return what;
}

}  // namespace

JsonDocument read_json(std::string_view text, const std::string& name,
                       const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  std::size_t consumed = 0;
  TreeBuilder builder(&consumed, text.size(), progress);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(CountingIterator(text.data(), &consumed),
                                   CountingIterator(text.data() + text.size(), &consumed), &builder);
  } catch (const std::length_error&) {
    throw InputError(name, consumed, "JSON document holds more values than we can index");
  } catch (const nlohmann::json::exception& error) {
    throw InputError(name, consumed, short_message(error.what()));
  }
  if (!ok) {
    // nlohmann counts the character it stopped on; report the offset of that byte.
    const std::size_t position = builder.error_position();
    const std::size_t offset = position == 0 ? 0 : position - 1;
    throw InputError(name, offset < text.size() ? offset : text.size(), short_message(builder.error_message()));
  }
  return std::move(builder.document());
}

}  // namespace memtool::trace::detail
