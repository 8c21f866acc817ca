// Event timestamps: CLOCK_MONOTONIC nanoseconds, read from the TSC where that is safe.
//
// clock_gettime(CLOCK_MONOTONIC) through the vDSO costs ≈ 20 ns on the machines we measure
// (two pages to touch, a fenced rdtsc, a sequence-lock retry loop), a fifth of the budget of a
// recorded launch; a bare rdtsc costs less than half of that. So when the kernel itself
// times CLOCK_MONOTONIC with an invariant TSC (its clocksource is "tsc"), we read the TSC and
// scale it to nanoseconds, re-anchoring to CLOCK_MONOTONIC every ~10 ms:
//   * the rate comes from the longest baseline we have (the first calibration pair to now),
//     so it sharpens as the program runs;
//   * each re-anchoring steers the next 10 ms so that our time converges back onto
//     CLOCK_MONOTONIC instead of jumping (errors are microseconds; more than 1 ms — a
//     suspended VM, a migrated one — resets onto the real clock);
//   * time never goes backwards, and a TSC that does turns the fast path off for good.
// During the first millisecond (calibration), and wherever the TSC is not the kernel's
// clocksource or the CPU is not x86-64, every read is clock_gettime.
//
// Not thread-safe: the owner serialises reads (the recorder reads under its emit lock, which
// also makes timestamps follow sequence numbers).
#pragma once

#include <cstdint>

namespace memtool::interpose {

namespace detail {
__extension__ typedef unsigned __int128 u128;  // tick × multiplier products (GCC/Clang)
}  // namespace detail

class EventClock {
 public:
  enum class Source { automatic, monotonic_only };
  explicit EventClock(Source source = Source::automatic);

  // Non-decreasing, in CLOCK_MONOTONIC's nanoseconds.
  std::uint64_t now_ns() noexcept {
#if defined(__x86_64__)
    if (tsc_usable_) {
      const std::uint64_t tsc = __builtin_ia32_rdtsc();
      const std::uint64_t ticks = tsc - base_tsc_;
      if (ticks < segment_ticks_) {  // also false when the TSC went below base_tsc_
        return base_ns_ + static_cast<std::uint64_t>((static_cast<detail::u128>(ticks) * mult_) >> 32);
      }
      return resync(tsc);
    }
#endif
    return monotonic_now();
  }

  [[nodiscard]] bool uses_tsc() const noexcept { return tsc_usable_; }
  [[nodiscard]] bool calibrated() const noexcept { return segment_ticks_ != 0; }

 private:
  std::uint64_t monotonic_now() noexcept;  // clock_gettime, made non-decreasing
  std::uint64_t resync(std::uint64_t tsc) noexcept;
  std::uint64_t give_up_tsc() noexcept;

  // The fast path's fields first (one cache line with the rest).
  bool tsc_usable_ = false;
  std::uint64_t base_tsc_ = 0;  // this segment: time = base_ns_ + (tsc - base_tsc_) * mult_ / 2^32
  std::uint64_t base_ns_ = 0;
  std::uint64_t mult_ = 0;           // ns per tick, 32.32 fixed point
  std::uint64_t segment_ticks_ = 0;  // 0 while calibrating: every read takes resync()
  std::uint64_t first_tsc_ = 0;      // the calibration baseline's start (0: none yet)
  std::uint64_t first_ns_ = 0;
  std::uint64_t last_ns_ = 0;  // the latest time handed out at a resync or slow read
};

}  // namespace memtool::interpose
