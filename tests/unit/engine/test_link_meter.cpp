// The host link fitted from timed copies (link_meter.hpp): latency and bandwidth recovered from
// copies of several sizes (with a few slow outliers too), bandwidth alone from copies of one
// size, nothing from too few.
#include <catch2/catch.hpp>

#include "link_meter.hpp"

using memtool::engine::detail::CopySample;
using memtool::engine::detail::fit_link;
using memtool::engine::detail::LinkFit;

namespace {

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
