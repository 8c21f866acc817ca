// Event timestamps: never backwards, and CLOCK_MONOTONIC's time whether they come from the TSC
// (after the first millisecond's calibration) or from clock_gettime.
#include <catch2/catch.hpp>

#include <time.h>

#include <chrono>
#include <thread>

#include "memtool/interpose/event_clock.hpp"

using memtool::interpose::EventClock;

namespace {

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Reads the clock for `duration`, checking every reading against CLOCK_MONOTONIC read just
// before and after it (a preemption only widens that window). Returns the readings made.
std::uint64_t follow(EventClock& clock, std::chrono::milliseconds duration, std::uint64_t& previous) {
  // What the TSC path may be off by: microseconds in practice; 1 ms late at most by design.
  constexpr std::uint64_t kTolerance = 2'000'000;
  const std::uint64_t end = monotonic_ns() + static_cast<std::uint64_t>(duration.count()) * 1'000'000;
  std::uint64_t readings = 0;
  std::uint64_t failures = 0;
  for (std::uint64_t before = monotonic_ns(); before < end; before = monotonic_ns()) {
    const std::uint64_t t = clock.now_ns();
    const std::uint64_t after = monotonic_ns();
    if (t < previous || t + kTolerance < before || t > after + kTolerance) ++failures;
    previous = t;
    ++readings;
  }
  CHECK(failures == 0);
  return readings;
}

}  // namespace

TEST_CASE("event time follows CLOCK_MONOTONIC and never goes backwards", "[interpose][clock]") {
  EventClock clock;
  INFO("uses the TSC: " << clock.uses_tsc());
  std::uint64_t previous = 0;
  CHECK(follow(clock, std::chrono::milliseconds(40), previous) > 1000);
  if (clock.uses_tsc()) CHECK(clock.calibrated());  // 40 ms of readings span several segments
  // A long quiet stretch (no readings across many segments), then reading again.
  std::this_thread::sleep_for(std::chrono::milliseconds(35));
  follow(clock, std::chrono::milliseconds(15), previous);
}

TEST_CASE("the monotonic-only clock never uses the TSC", "[interpose][clock]") {
  EventClock clock(EventClock::Source::monotonic_only);
  CHECK_FALSE(clock.uses_tsc());
  std::uint64_t previous = 0;
  CHECK(follow(clock, std::chrono::milliseconds(5), previous) > 100);
  CHECK_FALSE(clock.uses_tsc());
}
