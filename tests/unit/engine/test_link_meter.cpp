// The host link fitted from timed copies (link_meter.hpp): latency and bandwidth recovered from
// copies of several sizes (with a few slow outliers too), bandwidth alone from copies of one
// size, nothing from too few; and the meter's samples on a scripted GPU clock, each copy's own
// time on its direction's engine, not its wait for another stream's copy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <map>

#include "link_meter.hpp"
#include "scripted_timing_device.hpp"

using namespace memtool::engine;
using memtool::engine::detail::CopySample;
using memtool::engine::detail::fit_link;
using memtool::engine::detail::LinkFit;
using memtool::engine::detail::LinkMeter;
using memtool::engine::detail::SpareTimingEvents;

namespace {

using memtool::engine::test::ScriptedTimingDevice;

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

// Copies on a link of `bytes_per_ns` with `latency_ns` per copy.
std::vector<CopySample> copies(std::initializer_list<std::uint64_t> sizes, double bytes_per_ns, double latency_ns) {
  std::vector<CopySample> out;
  for (const std::uint64_t bytes : sizes)
    out.push_back(CopySample{bytes, latency_ns + static_cast<double>(bytes) / bytes_per_ns});
  return out;
}

}  // namespace

TEST_CASE("link meter: bandwidth and latency from copies of several sizes", "[engine][swap][link]") {
  const std::optional<LinkFit> fit = fit_link(copies({1 * MiB, 2 * MiB, 8 * MiB, 64 * MiB, 3 * MiB}, 25.0, 8000.0));
  REQUIRE(fit);
  CHECK(fit->bytes_per_ns == Approx(25.0).epsilon(1e-6));
  CHECK(fit->latency_ns == Approx(8000.0).epsilon(1e-6));
}

TEST_CASE("link meter: copies of one size give the bandwidth, latency folded in", "[engine][swap][link]") {
  const std::optional<LinkFit> fit = fit_link(copies({4 * MiB, 4 * MiB, 4 * MiB, 4 * MiB}, 50.0, 0.0));
  REQUIRE(fit);
  CHECK(fit->bytes_per_ns == Approx(50.0).epsilon(1e-6));
  CHECK(fit->latency_ns == 0.0);
}

TEST_CASE("link meter: a noisy intercept below zero is a line through the origin", "[engine][swap][link]") {
  // The small copies ran a little fast: the free fit's intercept is negative.
  std::vector<CopySample> samples = copies({1 * MiB, 2 * MiB, 16 * MiB, 32 * MiB}, 10.0, 0.0);
  samples[0].ns *= 0.5;
  samples[1].ns *= 0.6;
  const std::optional<LinkFit> fit = fit_link(samples);
  REQUIRE(fit);
  CHECK(fit->latency_ns == 0.0);
  CHECK(fit->bytes_per_ns > 9.5);
  CHECK(fit->bytes_per_ns < 10.5);
}

TEST_CASE("link meter: copies that queued behind others do not bend the fit", "[engine][swap][link]") {
  // What fakecuda at 0.55 GB/s and no latency gave a learning lstm replay: swap-ins of three
  // sizes, three of the 4 MiB ones 2-4 times as long (they waited for the engine). Least squares
  // read 0.59 GB/s and 3 ms of latency from these.
  std::vector<CopySample> samples = copies({1120 * 1024, 1120 * 1024}, 0.55, 0.0);
  for (int i = 0; i < 13; ++i) samples.push_back(copies({4 * MiB}, 0.55, 0.0)[0]);
  for (int i = 0; i < 6; ++i) samples.push_back(copies({20000 * 1024}, 0.55, 0.0)[0]);
  for (const double stretch : {2.2, 2.4, 4.2}) samples.push_back({4 * MiB, stretch * (4 * MiB) / 0.55});
  const std::optional<LinkFit> fit = fit_link(samples);
  REQUIRE(fit);
  CHECK(fit->bytes_per_ns == Approx(0.55).epsilon(0.01));
  CHECK(fit->latency_ns < 100'000.0);
}

TEST_CASE("link meter: too few copies, too few bytes or no time say nothing", "[engine][swap][link]") {
  CHECK_FALSE(fit_link(copies({8 * MiB, 8 * MiB, 8 * MiB}, 20.0, 0.0)));                     // three copies
  CHECK_FALSE(fit_link(copies({64 * 1024, 64 * 1024, 64 * 1024, 64 * 1024}, 20.0, 0.0)));    // 256 KiB in all
  CHECK_FALSE(fit_link({{8 * MiB, 0.0}, {8 * MiB, 0.0}, {8 * MiB, -1.0}, {8 * MiB, 0.0}}));  // untimed
}

namespace {

// One copy to the device, in the order the host issues it: on `stream`, not before `issued` (ns).
struct Issued {
  StreamId stream;
  std::uint64_t bytes;
  double issued;
};

// The GPU's side, as fakecuda's link model (tests/fakecuda/src/link.hpp): each stream runs its
// copies in order, and a copy its stream has reached (its start event fires then) takes the
// direction's one engine in turn, FIFO across streams, for latency + bytes / bandwidth. The
// meter times each copy as the swap policy does; answers the link it fits.
LinkFit metered(const std::vector<Issued>& copies, double bytes_per_ns, double latency_ns) {
  std::vector<double> start(copies.size());
  std::vector<double> end(copies.size());
  std::vector<bool> served(copies.size(), false);
  std::map<StreamId, double> stream_free;
  double engine_free = 0;
  for (std::size_t n = 0; n < copies.size(); ++n) {
    // The next the engine serves: of each stream's first copy not yet served, the one reached first.
    std::size_t next = copies.size();
    std::map<StreamId, bool> seen;
    for (std::size_t i = 0; i < copies.size(); ++i) {
      if (served[i] || seen[copies[i].stream]) continue;
      seen[copies[i].stream] = true;
      start[i] = std::max(copies[i].issued, stream_free[copies[i].stream]);
      if (next == copies.size() || start[i] < start[next]) next = i;
    }
    const double begin = std::max(start[next], engine_free);
    end[next] = begin + latency_ns + static_cast<double>(copies[next].bytes) / bytes_per_ns;
    engine_free = stream_free[copies[next].stream] = end[next];
    served[next] = true;
  }
  ScriptedTimingDevice device({}, true);
  for (std::size_t i = 0; i < copies.size(); ++i) {
    device.script.push_back(start[i]);
    device.script.push_back(end[i]);
  }
  SpareTimingEvents events;
  LinkMeter meter(device, events);
  for (const Issued& c : copies) {
    const EventId begun = meter.start(LinkMeter::Direction::to_device, c.stream);
    REQUIRE(begun != 0);
    meter.finish(begun, LinkMeter::Direction::to_device, c.stream, c.bytes);
  }
  meter.poll();
  CHECK(meter.samples(LinkMeter::Direction::to_device) == copies.size());
  memtool::swapper::Link fallback;
  fallback.h2d_bytes_per_ns = 1000.0;
  bool measured = false;
  const memtool::swapper::Link link = meter.link(fallback, &measured);
  meter.release();
  events.destroy_all(device);
  REQUIRE(measured);
  return LinkFit{link.h2d_bytes_per_ns, static_cast<double>(link.h2d_latency_ns)};
}

}  // namespace

TEST_CASE("link meter: a burst of copies on two streams, queued for one engine, reads the link",
          "[engine][swap][link]") {
  // The side stream's copies back and the program's copies on demand, all issued at once: each
  // stream's first copy starts at 0, and every copy after the first waits for the other stream's.
  std::vector<Issued> burst;
  const std::uint64_t sizes[] = {2 * MiB, 9 * MiB, 4 * MiB, 16 * MiB, 1 * MiB, 6 * MiB, 12 * MiB, 3 * MiB};
  for (std::size_t i = 0; i < std::size(sizes); ++i) burst.push_back(Issued{i % 2 == 0 ? 7u : 9u, sizes[i], 0.0});
  const LinkFit fit = metered(burst, 0.55, 0.0);
  CHECK(fit.bytes_per_ns == Approx(0.55).epsilon(0.01));
  CHECK(fit.latency_ns < 10'000.0);
}

TEST_CASE("link meter: copies that find their engine idle keep their own times", "[engine][swap][link]") {
  // Apart in time, on two streams, one issued after a later-issued one has run (its stream was
  // busy until then): the engine's order is not the host's. Latency and bandwidth exactly.
  const std::vector<Issued> lone = {
      {7, 4 * MiB, 200e6}, {9, 1 * MiB, 0.0}, {9, 8 * MiB, 50e6}, {7, 2 * MiB, 300e6}, {9, 16 * MiB, 100e6}};
  const LinkFit fit = metered(lone, 25.0, 8000.0);
  CHECK(fit.bytes_per_ns == Approx(25.0).epsilon(1e-6));
  CHECK(fit.latency_ns == Approx(8000.0).epsilon(1e-3));
}

TEST_CASE("link meter: a learned iteration's few copies back, most queued, read the link", "[engine][swap][link]") {
  // As a resnet18 replay's learning gave at 0.55 GB/s: 8 copies back, the larger ones issued in
  // runs on the swap-in stream and on demand on the program's, each waiting for the one before
  // (the longer the copies, the longer the waits: every pair's slope reads the queueing).
  const double ms = 1e6;
  const std::vector<Issued> copies = {
      {1, 2 * MiB, 0.0},     {1, 4 * MiB, 20 * ms},   {5, 4 * MiB, 20.1 * ms}, {1, 4 * MiB, 20.2 * ms},
      {5, 9 * MiB, 60 * ms}, {1, 9 * MiB, 60.1 * ms}, {5, 9 * MiB, 60.2 * ms}, {1, 9 * MiB, 60.3 * ms},
  };
  const LinkFit fit = metered(copies, 0.55, 0.0);
  CHECK(fit.bytes_per_ns == Approx(0.55).epsilon(0.03));
}
