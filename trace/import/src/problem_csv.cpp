// MiniMalloc-style CSV → Problem, line by line with exact offsets (see problem_csv.hpp).
#include "memtool/trace/problem_csv.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <unordered_map>

#include "file_bytes.hpp"
#include "memtool/trace/input_error.hpp"
#include "memtool/trace/limits.hpp"

namespace memtool::trace {
namespace {

constexpr std::string_view kHeader = "id,lower,upper,size";
constexpr std::string_view kHeaderWithAlignment = "id,lower,upper,size,alignment";
constexpr std::array<std::string_view, 5> kColumns{"id", "lower", "upper", "size", "alignment"};

// A short, printable rendering of untrusted text for messages.
std::string quoted(std::string_view text) {
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > 40) out += "...";
  return out + "'";
}

class CsvProblemParser {
 public:
  CsvProblemParser(std::string_view text, const std::string& name) : text_(text), name_(name) { problem_.name = name; }

  Problem run() {
    if (text_.empty()) fail(0, fmt::format("empty file: expected the header '{}'", kHeader));
    parse_header();
    std::size_t blank_at = std::string_view::npos;
    std::size_t blank_line = 0;
    while (pos_ < text_.size()) {
      const std::size_t row_start = pos_;
      const std::string_view row = next_line();
      ++line_;
      if (row.empty()) {
        if (blank_at == std::string_view::npos) {
          blank_at = row_start;
          blank_line = line_;
        }
        continue;
      }
      if (blank_at != std::string_view::npos) {
        fail(blank_at, fmt::format("line {}: blank line inside the table (rows follow on line {})", blank_line, line_));
      }
      parse_row(row, row_start);
    }
    return std::move(problem_);
  }

 private:
  [[noreturn]] void fail(std::size_t offset, const std::string& message) const {
    throw InputError(name_, offset, message);
  }

  // The next line without its "\n" or "\r\n"; advances past the terminator.
  std::string_view next_line() {
    const std::size_t end = text_.find('\n', pos_);
    std::string_view line = text_.substr(pos_, end == std::string_view::npos ? std::string_view::npos : end - pos_);
    pos_ = end == std::string_view::npos ? text_.size() : end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  }

  void parse_header() {
    const std::string_view header = next_line();
    line_ = 1;
    if (header == kHeader) {
      columns_ = 4;
    } else if (header == kHeaderWithAlignment) {
      columns_ = 5;
    } else {
      fail(0, fmt::format("expected the header '{}' (optionally ',alignment'), found {}", kHeader, quoted(header)));
    }
  }

  std::uint64_t parse_number(std::string_view field, std::size_t offset, std::size_t column) {
    if (field.empty()) fail(offset, fmt::format("line {}: '{}' is empty", line_, kColumns[column]));
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < field.size(); ++i) {
      const char c = field[i];
      if (c < '0' || c > '9') {
        fail(offset + i, fmt::format("line {}: '{}' is {}, expected a non-negative decimal integer", line_,
                                     kColumns[column], quoted(field)));
      }
      const auto digit = static_cast<std::uint64_t>(c - '0');
      if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
        fail(offset,
             fmt::format("line {}: '{}' value {} does not fit in 64 bits", line_, kColumns[column], quoted(field)));
      }
      value = value * 10 + digit;
    }
    return value;
  }

  void parse_row(std::string_view row, std::size_t row_start) {
    std::array<std::uint64_t, 5> values{0, 0, 0, 0, 1};
    std::array<std::size_t, 5> offsets{};
    std::size_t column = 0;
    std::size_t begin = 0;
    while (true) {
      const std::size_t comma = row.find(',', begin);
      const std::size_t end = comma == std::string_view::npos ? row.size() : comma;
      if (column == columns_) {
        fail(row_start + begin - 1, fmt::format("line {}: more than {} fields (header '{}')", line_, columns_,
                                                columns_ == 4 ? kHeader : kHeaderWithAlignment));
      }
      offsets[column] = row_start + begin;
      values[column] = parse_number(row.substr(begin, end - begin), offsets[column], column);
      ++column;
      if (comma == std::string_view::npos) break;
      begin = comma + 1;
    }
    if (column < columns_) {
      fail(row_start + row.size(), fmt::format("line {}: {} fields, expected {}", line_, column, columns_));
    }
    const auto [id, lower, upper, size, alignment] = values;
    if (lower >= upper) {
      fail(offsets[1],
           fmt::format("line {}: lower {} must be less than upper {} (upper is exclusive)", line_, lower, upper));
    }
    if (size == 0) fail(offsets[3], fmt::format("line {}: size must be positive", line_));
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      fail(offsets[4], fmt::format("line {}: alignment {} is not a power of two", line_, alignment));
    }
    // The planner's own limits, said here with the line: sizes, alignments and their sum
    // (each size rounded up to its alignment) up to 2^62 bytes.
    if (size > kMaxAccountedBytes) {
      fail(offsets[3], fmt::format("line {}: size {} is over 2^62 bytes, more than memtool can plan", line_, size));
    }
    if (alignment > kMaxAccountedBytes) {
      fail(offsets[4], fmt::format("line {}: alignment {} is over 2^62 bytes", line_, alignment));
    }
    const std::uint64_t footprint = (size + alignment - 1) & ~(alignment - 1);
    if (footprint > kMaxAccountedBytes - total_footprint_) {
      fail(offsets[3], fmt::format("line {}: the sizes add up to more than 2^62 bytes here, more than memtool "
                                   "can plan",
                                   line_));
    }
    total_footprint_ += footprint;
    auto [it, inserted] = first_line_of_id_.try_emplace(id, line_);
    if (!inserted) fail(offsets[0], fmt::format("line {}: duplicate id {} (first on line {})", line_, id, it->second));

    BufferRequest request;
    request.id = id;
    request.size = size;
    request.alignment = alignment;
    request.intervals.push_back(LiveInterval{lower, upper});
    problem_.buffers.push_back(std::move(request));
    if (upper > problem_.time_horizon) problem_.time_horizon = upper;
  }

  std::string_view text_;
  const std::string& name_;
  std::size_t pos_ = 0;
  std::size_t line_ = 0;
  std::size_t columns_ = 4;
  Problem problem_;
  std::uint64_t total_footprint_ = 0;
  std::unordered_map<std::uint64_t, std::size_t> first_line_of_id_;
};

}  // namespace

Problem parse_problem_csv(std::string_view text, const std::string& name) { return CsvProblemParser(text, name).run(); }

Problem read_problem_csv(const std::string& path) {
  const std::string text = detail::read_file_bytes(path);
  return parse_problem_csv(text, path);
}

}  // namespace memtool::trace
