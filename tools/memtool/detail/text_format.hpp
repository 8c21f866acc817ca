// Text helpers shared by the verbs: human-readable sizes with exact bytes, aligned tables,
// and an ASCII chart of a series (in the spirit of ms_print).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/trace/bytes.hpp"

namespace memtool::cli {

// "1.50 GiB" (binary units, three significant digits): memtool's one size printer.
using trace::human_bytes;
// "1.50 GiB (1,610,612,736 B)".
std::string human_bytes_exact(std::uint64_t bytes);
// "1,610,612,736".
std::string group_thousands(std::uint64_t value);
// Signed change, "+12.0 MiB" / "-512 B" / "0 B".
std::string human_bytes_delta(std::int64_t delta);

// A table with a header row; columns right-aligned unless marked left.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header, std::vector<bool> left_aligned = {});
  void add_row(std::vector<std::string> row);
  [[nodiscard]] std::string render(std::string_view indent = "  ") const;
  [[nodiscard]] std::size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<bool> left_;
  std::vector<std::vector<std::string>> rows_;
};

struct ChartOptions {
  int width = 72;   // columns of the plot area
  int height = 16;  // rows of the plot area
  std::string x_label = "events";
};

// Plots `values` (one per x step; resampled to `width` columns by taking each column's maximum so
// peaks are never lost) as a filled ASCII area with a byte-scaled y axis. `markers` are x values
// (same scale as the index in `values`) drawn as '|' ticks under the axis, e.g. iteration starts.
std::string ascii_chart(const std::vector<std::uint64_t>& values, const std::vector<std::uint64_t>& markers,
                        const ChartOptions& options);

}  // namespace memtool::cli
