// EventClock: TSC-scaled CLOCK_MONOTONIC (see event_clock.hpp).
#include "memtool/interpose/event_clock.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace memtool::interpose {

namespace {

constexpr std::uint64_t kCalibrationNs = 1'000'000;  // the first rate: after 1 ms of baseline
constexpr std::uint64_t kSegmentNs = 10'000'000;     // re-anchor every 10 ms
constexpr std::uint64_t kMaxLagNs = 1'000'000;       // further behind than this: jump forward
constexpr std::uint64_t kTightPairTicks = 4000;      // a clock_gettime this short was not interrupted

using detail::u128;

std::uint64_t clock_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

#if defined(__x86_64__)
// The kernel times CLOCK_MONOTONIC with the TSC only after checking that it is invariant and
// synchronised across CPUs: its choice is the test we trust.
bool kernel_clocksource_is_tsc() noexcept {
  const int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[32] = {};
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  return n >= 3 && std::strncmp(text, "tsc", 3) == 0 && (n == 3 || text[3] == '\n');
}

bool cpu_has_invariant_tsc() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000007, &a, &b, &c, &d) != 0 && (d & (1u << 8)) != 0;
}

// A (TSC, CLOCK_MONOTONIC) pair taken together: the TSC on both sides of clock_gettime, the
// tightest of a few tries (an interrupt or a preemption in between would skew the rate).
bool read_pair(std::uint64_t& tsc, std::uint64_t& ns) noexcept {
  std::uint64_t best = ~std::uint64_t{0};
  for (int attempt = 0; attempt < 4 && best > kTightPairTicks; ++attempt) {
    const std::uint64_t before = __builtin_ia32_rdtsc();
    const std::uint64_t now = clock_ns();
    const std::uint64_t after = __builtin_ia32_rdtsc();
    if (after < before) return false;
    if (after - before < best) {
      best = after - before;
      tsc = before + best / 2;
      ns = now;
    }
  }
  return true;
}
#endif

}  // namespace

EventClock::EventClock(Source source) {
#if defined(__x86_64__)
  tsc_usable_ = source == Source::automatic && cpu_has_invariant_tsc() && kernel_clocksource_is_tsc();
#else
  (void)source;
#endif
}

std::uint64_t EventClock::monotonic_now() noexcept {
  last_ns_ = std::max(last_ns_, clock_ns());
  return last_ns_;
}

// Back to clock_gettime for good, never below the latest time the fast path can have given.
std::uint64_t EventClock::give_up_tsc() noexcept {
  tsc_usable_ = false;
  last_ns_ =
      std::max(last_ns_, base_ns_ + static_cast<std::uint64_t>((static_cast<u128>(segment_ticks_) * mult_) >> 32));
  return monotonic_now();
}

std::uint64_t EventClock::resync(std::uint64_t tsc) noexcept {
#if defined(__x86_64__)
  std::uint64_t pair_tsc = 0;
  std::uint64_t real = 0;
  if (tsc < base_tsc_ || !read_pair(pair_tsc, real) || pair_tsc < first_tsc_ || pair_tsc < base_tsc_) {
    return give_up_tsc();  // a TSC that runs backwards is not a clock
  }
  if (first_tsc_ == 0) {
    first_tsc_ = pair_tsc;
    first_ns_ = real;
  }
  std::uint64_t current = 0;  // where our clock stands at pair_tsc
  if (segment_ticks_ == 0) {
    if (real - first_ns_ < kCalibrationNs || pair_tsc == first_tsc_) return monotonic_now();
    current = std::max(real, last_ns_);
  } else {
    current = base_ns_ + static_cast<std::uint64_t>((static_cast<u128>(pair_tsc - base_tsc_) * mult_) >> 32);
    current = std::max(current, last_ns_);
    if (real > current + kMaxLagNs) current = real;  // far behind (a suspended VM): jump forward
  }
  const auto rate = static_cast<std::uint64_t>((static_cast<u128>(real - first_ns_) << 32) / (pair_tsc - first_tsc_));
  if (rate == 0) return give_up_tsc();
  segment_ticks_ = std::max<std::uint64_t>(static_cast<std::uint64_t>((static_cast<u128>(kSegmentNs) << 32) / rate), 1);
  // Steer: at the end of the segment CLOCK_MONOTONIC reads about real + kSegmentNs; aim there
  // from `current`, at no less than half and no more than twice the measured rate.
  const std::uint64_t target = real + kSegmentNs;
  const std::uint64_t steered =
      target > current ? static_cast<std::uint64_t>((static_cast<u128>(target - current) << 32) / segment_ticks_) : 0;
  mult_ = std::clamp(steered, rate / 2, rate * 2);
  base_tsc_ = pair_tsc;
  base_ns_ = current;
  last_ns_ = current;
  return current;
#else
  (void)tsc;
  return monotonic_now();
#endif
}

}  // namespace memtool::interpose
