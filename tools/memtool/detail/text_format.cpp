// Implementation of the text helpers: sizes, tables and the ASCII live-bytes chart.
#include "detail/text_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace memtool::cli {

std::string group_thousands(std::uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  const std::size_t lead = digits.size() % 3;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (i + 3 - lead) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string human_bytes_exact(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  return fmt::format("{} ({} B)", human_bytes(bytes), group_thousands(bytes));
}

std::string human_bytes_delta(std::int64_t delta) {
  if (delta == 0) return "0 B";
  const auto magnitude = delta < 0 ? static_cast<std::uint64_t>(-(delta + 1)) + 1 : static_cast<std::uint64_t>(delta);
  return fmt::format("{}{}", delta < 0 ? "-" : "+", human_bytes(magnitude));
}

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> left_aligned)
    : header_(std::move(header)), left_(std::move(left_aligned)) {
  left_.resize(header_.size(), false);
}

void TextTable::add_row(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string TextTable::render(std::string_view indent) const {
  std::vector<std::size_t> widths(header_.size());
  for (std::size_t c = 0; c < header_.size(); ++c) widths[c] = header_[c].size();
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());

  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line{indent};
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c != 0) line += "  ";
      line += left_[c] ? fmt::format("{:<{}}", row[c], widths[c]) : fmt::format("{:>{}}", row[c], widths[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  emit(header_);
  std::vector<std::string> rule;
  rule.reserve(widths.size());
  for (std::size_t w : widths) rule.emplace_back(w, '-');
  emit(rule);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string ascii_chart(const std::vector<std::uint64_t>& values, const std::vector<std::uint64_t>& markers,
                        const ChartOptions& options) {
  if (values.empty()) return "  (no data)\n";
  const auto width = static_cast<std::size_t>(std::max(8, options.width));
  const auto height = static_cast<std::size_t>(std::max(4, options.height));
  const std::size_t columns = std::min(width, values.size());

  // Column maxima, so a one-event peak still shows.
  std::vector<std::uint64_t> column_max(columns, 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::size_t c = i * columns / values.size();
    column_max[c] = std::max(column_max[c], values[i]);
  }
  const std::uint64_t top = std::max<std::uint64_t>(1, *std::max_element(column_max.begin(), column_max.end()));

  std::vector<std::string> labels(height);
  std::size_t label_width = 0;
  for (std::size_t r = 0; r < height; ++r) {
    if (r % 4 == 0 || r + 1 == height) {
      const double level = static_cast<double>(top) * static_cast<double>(height - r) / static_cast<double>(height);
      labels[r] = human_bytes(static_cast<std::uint64_t>(std::llround(level)));
    }
    label_width = std::max(label_width, labels[r].size());
  }

  std::string out;
  for (std::size_t r = 0; r < height; ++r) {
    // A cell is filled when the column's value reaches the middle of the cell's band.
    const double threshold =
        static_cast<double>(top) * (static_cast<double>(height - r) - 0.5) / static_cast<double>(height);
    std::string line = fmt::format("  {:>{}} |", labels[r], label_width);
    for (std::size_t c = 0; c < columns; ++c) {
      const auto v = static_cast<double>(column_max[c]);
      const bool peak = column_max[c] == top;
      line += v >= threshold ? (peak ? '@' : '#') : ' ';
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  std::string axis = fmt::format("  {:>{}} +{}", "", label_width, std::string(columns, '-'));
  out += axis + '\n';
  if (!markers.empty()) {
    std::string ticks(columns, ' ');
    for (std::uint64_t m : markers) {
      if (m >= values.size()) continue;
      ticks[m * columns / values.size()] = '|';
    }
    while (!ticks.empty() && ticks.back() == ' ') ticks.pop_back();
    out += fmt::format("  {:>{}}  {}\n", "", label_width, ticks);
  }
  out += fmt::format("  {:>{}}  0{:>{}}\n", "", label_width, fmt::format("{} {}", values.size(), options.x_label),
                     columns > 1 ? columns - 1 : 1);
  return out;
}

}  // namespace memtool::cli
