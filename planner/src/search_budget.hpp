// The improving search's budget. The time limit is turned into a number of *work units*
// (conflicts visited, search nodes scanned): decisions depend only on this count, so a plan is
// the same on every machine and under any load. kWorkUnitsPerSecond was measured on the
// project's 2-core development machine. A wall-clock guard (at 4× the limit plus 1 s, checked
// at the same deterministic points) only stops a search on a machine far slower than that one:
// it is the one way two runs can differ, and it is counted in `wall_clock_stops`.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace memtool::planner::detail {

inline constexpr double kWorkUnitsPerSecond = 500e6;

class SearchBudget {
 public:
  explicit SearchBudget(double seconds) : SearchBudget(units_for(seconds), seconds * 4 + 1) {}
  SearchBudget(std::uint64_t units, double wall_seconds)
      : limit_(units), wall_limit_(wall_seconds), start_(std::chrono::steady_clock::now()) {}

  [[nodiscard]] static std::uint64_t units_for(double seconds) {
    return seconds > 0 ? static_cast<std::uint64_t>(seconds * kWorkUnitsPerSecond) : 0;
  }
  // A slice of what is left, at most `units`, for one phase of the search (same wall-clock
  // guard); absorb() charges what it used back.
  [[nodiscard]] SearchBudget part(std::uint64_t units) const {
    SearchBudget child(std::min(units, left()), 0);
    child.wall_limit_ = wall_limit_;
    child.start_ = start_;
    return child;
  }
  void absorb(const SearchBudget& child) {
    used_ += child.used_;
    if (child.wall_clock_stopped_) {
      used_ = std::max(used_, limit_);
      wall_clock_stopped_ = true;
    }
  }

  void spend(std::uint64_t units) { used_ += units; }
  [[nodiscard]] bool exhausted() {
    if (used_ >= limit_) return true;
    if (++checks_ % 64 == 0 && std::chrono::steady_clock::now() - start_ > wall_limit_) {
      used_ = limit_;
      wall_clock_stopped_ = true;
      return true;
    }
    return false;
  }
  [[nodiscard]] std::uint64_t used() const { return used_; }
  [[nodiscard]] std::uint64_t limit() const { return limit_; }
  [[nodiscard]] std::uint64_t left() const { return used_ >= limit_ ? 0 : limit_ - used_; }
  [[nodiscard]] bool wall_clock_stopped() const { return wall_clock_stopped_; }

 private:
  std::uint64_t limit_;
  std::uint64_t used_ = 0;
  std::uint64_t checks_ = 0;
  std::chrono::duration<double> wall_limit_;
  std::chrono::steady_clock::time_point start_;
  bool wall_clock_stopped_ = false;
};

}  // namespace memtool::planner::detail
