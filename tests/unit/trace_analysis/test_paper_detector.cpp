// The paper's brute-force detector: finds simple periods, agrees with the online detector on
// small inputs, and shows the weakness we fixed (internal repetition gets cut to a layer run).
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "memtool/trace/iteration_detector.hpp"
#include "memtool/trace/paper_detector.hpp"

using memtool::trace::IterationDetector;
using memtool::trace::PaperIterationDetector;

namespace {

std::vector<std::uint64_t> random_tokens(std::mt19937_64& rng, std::size_t count, std::uint64_t alphabet) {
  std::vector<std::uint64_t> t(count);
  for (auto& x : t) x = rng() % alphabet;
  return t;
}

}  // namespace

TEST_CASE("paper detector: longest square, cut once, > 100 tokens", "[paper]") {
  std::mt19937_64 rng(3);
  std::vector<std::uint64_t> s = random_tokens(rng, 70, 1000);
  const auto iteration = random_tokens(rng, 150, 1000);
  for (int k = 0; k < 3; ++k) s.insert(s.end(), iteration.begin(), iteration.end());
  const auto found = PaperIterationDetector::find(s, 100);
  REQUIRE(found);
  CHECK(found->period == 150);
  CHECK(found->first_boundary == 70);
  // Short iterations are refused (the paper's threshold)...
  std::vector<std::uint64_t> short_period;
  for (int k = 0; k < 3; ++k) {
    short_period.insert(short_period.end(), iteration.begin(), iteration.begin() + 60);
  }
  CHECK_FALSE(PaperIterationDetector::find(short_period, 100));
  // ... unless enough of them repeat: the longest square is then a multiple of the period,
  // and cutting once does not bring it back down (a weakness of the baseline).
  for (int k = 0; k < 17; ++k) {
    short_period.insert(short_period.end(), iteration.begin(), iteration.begin() + 60);
  }
  const auto multiple = PaperIterationDetector::find(short_period, 100);
  REQUIRE(multiple);
  CHECK(multiple->period == 300);
}

TEST_CASE("paper detector checks at 300 tokens, then doubling", "[paper]") {
  std::mt19937_64 rng(4);
  const auto iteration = random_tokens(rng, 250, 1000);
  PaperIterationDetector d;
  std::vector<std::uint64_t> found_at;
  for (int k = 0; k < 6; ++k) {
    for (const auto t : iteration) {
      if (d.push(t)) found_at.push_back(d.tokens_seen());
    }
  }
  // 300 tokens hold no repeat of a 250-token iteration; 600 do.
  CHECK(found_at == std::vector<std::uint64_t>{600});
  CHECK(d.period()->period == 250);
}

TEST_CASE("online and paper detectors agree on small periodic streams", "[paper][detector]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 12; ++trial) {
    const std::size_t period = 101 + rng() % 300;
    const std::size_t warm = rng() % 200;
    std::vector<std::uint64_t> s = random_tokens(rng, warm, 500);
    const auto iteration = random_tokens(rng, period, 500);
    for (int k = 0; k < 6; ++k) s.insert(s.end(), iteration.begin(), iteration.end());
    PaperIterationDetector paper;
    IterationDetector online;
    for (const auto t : s) {
      paper.push(t);
      online.push(t);
    }
    INFO("trial " << trial << " period " << period << " warm-up " << warm);
    REQUIRE(paper.period());
    REQUIRE(online.period());
    CHECK(paper.period()->period == period);
    CHECK(online.period()->period == period);
  }
}

TEST_CASE("paper detector cuts an iteration with repeated layers to the layers", "[paper]") {
  std::mt19937_64 rng(6);
  const auto head = random_tokens(rng, 30, 1000);
  const auto layer = random_tokens(rng, 60, 1000);
  std::vector<std::uint64_t> iteration = head;
  for (int k = 0; k < 8; ++k) iteration.insert(iteration.end(), layer.begin(), layer.end());
  std::vector<std::uint64_t> s;
  for (int k = 0; k < 3; ++k) s.insert(s.end(), iteration.begin(), iteration.end());
  const auto paper = PaperIterationDetector::find(s, 100);
  REQUIRE(paper);
  CHECK(paper->period != iteration.size());  // the inner square of layers wins the cut
  IterationDetector online;
  for (const auto t : s) online.push(t);
  REQUIRE(online.period());
  CHECK(online.period()->period == iteration.size());
}
