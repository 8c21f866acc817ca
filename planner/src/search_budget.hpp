// The improving search's budget. The time limit is turned into a number of *work units*
// (conflicts visited, search nodes scanned): decisions depend only on this count, so a plan is
// the same on every machine and under any load. kWorkUnitsPerSecond was measured on the
// project's 2-core development machine. A clock guard (at 4× the limit plus 1 s of this thread's
// CPU time, checked at the same deterministic points) only stops a search on a machine far
// slower than that one: it is the one way two runs can differ (clock_stopped() says so). CPU
// time, not wall time, so that a loaded machine, which runs the thread less often but not
// slower, does not trip it. Reading a thread's CPU clock is a system call (2.5 µs on the
// development machine, against 0.09 µs for the wall clock), so the wall clock is read, and
// the CPU clock only once the wall clock passes a deadline: the CPU time a thread can have
// used by then is at most the wall time passed.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace memtool::planner::detail {

inline constexpr double kWorkUnitsPerSecond = 500e6;

class SearchBudget {
 public:
  explicit SearchBudget(double seconds) : SearchBudget(units_for(seconds), seconds * 4 + 1) {}
  SearchBudget(std::uint64_t units, double cpu_seconds)
      : limit_(units),
        clock_limit_(thread_seconds() + cpu_seconds),
        wall_deadline_(std::chrono::steady_clock::now() + wall(cpu_seconds)) {}

  [[nodiscard]] static std::uint64_t units_for(double seconds) {
    return seconds > 0 ? static_cast<std::uint64_t>(seconds * kWorkUnitsPerSecond) : 0;
  }
  // This thread's CPU time, in seconds.
  [[nodiscard]] static double thread_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  // A slice of what is left, at most `units`, for one phase of the search (same clock guard);
  // absorb() charges what it used back.
  [[nodiscard]] SearchBudget part(std::uint64_t units) const {
    SearchBudget child = *this;
    child.limit_ = std::min(units, left());
    child.used_ = 0;
    child.checks_ = 0;
    return child;
  }
  void absorb(const SearchBudget& child) {
    used_ += child.used_;
    wall_deadline_ = std::max(wall_deadline_, child.wall_deadline_);
    if (child.clock_stopped_) {
      used_ = std::max(used_, limit_);
      clock_stopped_ = true;
    }
  }

  void spend(std::uint64_t units) { used_ += units; }
  [[nodiscard]] bool exhausted() {
    if (used_ >= limit_) return true;
    if (++checks_ % 64 == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now < wall_deadline_) return false;
      const double left_seconds = clock_limit_ - thread_seconds();
      if (left_seconds <= 0) {
        used_ = limit_;
        clock_stopped_ = true;
        return true;
      }
      wall_deadline_ = now + wall(left_seconds);
    }
    return false;
  }
  [[nodiscard]] std::uint64_t used() const { return used_; }
  [[nodiscard]] std::uint64_t limit() const { return limit_; }
  [[nodiscard]] std::uint64_t left() const { return used_ >= limit_ ? 0 : limit_ - used_; }
  [[nodiscard]] bool clock_stopped() const { return clock_stopped_; }

 private:
  static std::chrono::steady_clock::duration wall(double seconds) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  }

  std::uint64_t limit_;
  std::uint64_t used_ = 0;
  std::uint64_t checks_ = 0;
  double clock_limit_;  // this thread's CPU seconds at which the guard stops the search
  std::chrono::steady_clock::time_point wall_deadline_;  // the CPU clock is not read before it
  bool clock_stopped_ = false;
};

}  // namespace memtool::planner::detail
