// The online iteration detector on synthetic token streams: warm-up, tiny and large periods,
// noise (substitutions, insertions, deletions), internal repetition, marks, bounds.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "memtool/trace/iteration_detector.hpp"

using memtool::trace::DetectedPeriod;
using memtool::trace::IterationDetector;
using memtool::trace::IterationDetectorOptions;

namespace {

using Tokens = std::vector<std::uint64_t>;

Tokens random_tokens(std::mt19937_64& rng, std::size_t count, std::uint64_t alphabet) {
  Tokens t(count);
  for (auto& x : t) x = rng() % alphabet;
  return t;
}

void append(Tokens& out, const Tokens& part, std::size_t times = 1) {
  for (std::size_t i = 0; i < times; ++i) out.insert(out.end(), part.begin(), part.end());
}

struct Run {
  std::optional<DetectedPeriod> final;
  std::vector<std::uint64_t> reported;  // every period push() announced, in order
};

Run feed(const Tokens& tokens, const IterationDetectorOptions& options = {}) {
  IterationDetector d(options);
  Run run;
  for (const auto t : tokens) {
    if (d.push(t)) run.reported.push_back(d.period()->period);
  }
  run.final = d.period();
  return run;
}

}  // namespace

TEST_CASE("detector finds the period after differing warm-up iterations", "[detector]") {
  std::mt19937_64 rng(7);
  Tokens stream;
  append(stream, random_tokens(rng, 731, 60));  // set-up and two odd warm-up iterations
  append(stream, random_tokens(rng, 512, 60));
  const std::size_t warm = stream.size();
  const Tokens iteration = random_tokens(rng, 500, 60);
  append(stream, iteration, 10);

  IterationDetector d;
  std::optional<std::uint64_t> confirmed_at;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    if (d.push(stream[i]) && !confirmed_at) confirmed_at = i + 1;
  }
  REQUIRE(d.period());
  CHECK(d.period()->period == 500);
  CHECK_FALSE(d.period()->from_marks);
  CHECK(d.period()->first_boundary <= warm);
  CHECK(d.period()->first_boundary + 5 >= warm);
  REQUIRE(confirmed_at);
  CHECK(*confirmed_at <= warm + 2 * 500 + 8);  // two whole iterations plus a k-gram at most
  CHECK(d.tokens_seen() == stream.size());
  // The whole steady stretch repeats with the period.
  CHECK(d.period()->explained >= stream.size() - warm);
  CHECK(d.period()->explained <= stream.size() - warm + 5);
}

TEST_CASE("detector handles tiny periods", "[detector]") {
  SECTION("period 4") {
    Tokens s;
    append(s, {1, 2, 3, 4}, 30);
    CHECK(feed(s).final->period == 4);
  }
  SECTION("period 5") {
    Tokens s;
    append(s, {9, 1, 2, 3, 4}, 30);
    CHECK(feed(s).final->period == 5);
  }
  SECTION("shorter than min_period: reported as its multiple") {
    Tokens s;
    append(s, {1, 2, 3}, 30);
    CHECK(feed(s).final->period == 6);
    Tokens ones(100, 42);
    CHECK(feed(ones).final->period == 4);
  }
}

TEST_CASE("detector handles a period of 100k tokens", "[detector]") {
  std::mt19937_64 rng(11);
  Tokens stream = random_tokens(rng, 3000, 5000);
  const Tokens iteration = random_tokens(rng, 100000, 5000);
  append(stream, iteration, 3);
  const Run run = feed(stream);
  REQUIRE(run.final);
  CHECK(run.final->period == 100000);
  CHECK(run.reported == std::vector<std::uint64_t>{100000});
}

TEST_CASE("periods above max_period are not reported", "[detector]") {
  std::mt19937_64 rng(12);
  Tokens stream;
  append(stream, random_tokens(rng, 5000, 1000), 4);
  IterationDetectorOptions o;
  o.max_period = 1000;
  CHECK_FALSE(feed(stream, o).final);
  o.max_period = 8000;
  CHECK(feed(stream, o).final->period == 5000);
}

TEST_CASE("a random stream has no period", "[detector]") {
  std::mt19937_64 rng(13);
  CHECK_FALSE(feed(random_tokens(rng, 50000, 100000)).final);
}

TEST_CASE("detector keeps the period through noise", "[detector]") {
  std::mt19937_64 rng(17);
  const Tokens iteration = random_tokens(rng, 300, 80);
  Tokens stream;
  append(stream, random_tokens(rng, 200, 80));
  for (int k = 0; k < 24; ++k) {
    Tokens it = iteration;
    if (k == 5 || k == 9 || k == 13) it[static_cast<std::size_t>(17 * k)] = 999999;  // substitution
    if (k == 16) it.insert(it.begin() + 100, 777777);                                // insertion
    if (k == 20) it.erase(it.begin() + 42);                                          // deletion
    append(stream, it);
  }
  const Run run = feed(stream);
  REQUIRE(run.final);
  CHECK(run.final->period == 300);
  // Announced once and never displaced by the shifted copies around the insertion/deletion.
  CHECK(run.reported == std::vector<std::uint64_t>{300});
}

TEST_CASE("internal repetition: the period is the whole iteration", "[detector]") {
  std::mt19937_64 rng(19);
  SECTION("10 identical layers") {
    const Tokens head = random_tokens(rng, 20, 50);
    const Tokens layer = random_tokens(rng, 30, 50);
    const Tokens tail = random_tokens(rng, 25, 50);
    Tokens iteration = head;
    append(iteration, layer, 10);
    append(iteration, tail);
    Tokens stream = random_tokens(rng, 100, 50);
    append(stream, iteration, 6);
    const Run run = feed(stream);
    REQUIRE(run.final);
    CHECK(run.final->period == iteration.size());
    CHECK(run.reported.back() == iteration.size());
  }
  SECTION("LSTM-like: 35 timesteps forward and backward") {
    const Tokens head = random_tokens(rng, 40, 200);
    const Tokens forward = random_tokens(rng, 48, 200);
    const Tokens middle = random_tokens(rng, 30, 200);
    const Tokens backward = random_tokens(rng, 61, 200);
    const Tokens step = random_tokens(rng, 90, 200);
    Tokens iteration = head;
    append(iteration, forward, 35);
    append(iteration, middle);
    append(iteration, backward, 35);
    append(iteration, step);
    Tokens stream = random_tokens(rng, 500, 200);
    append(stream, iteration, 5);
    const Run run = feed(stream);
    REQUIRE(run.final);
    CHECK(run.final->period == iteration.size());
    // Once the iteration period is reported, the timestep periods never come back.
    const auto first = std::find(run.reported.begin(), run.reported.end(), iteration.size());
    REQUIRE(first != run.reported.end());
    CHECK(first + 1 == run.reported.end());
  }
  SECTION("an iteration made only of one repeated layer is that layer") {
    const Tokens layer = random_tokens(rng, 37, 50);
    Tokens stream;
    append(stream, layer, 40);
    CHECK(feed(stream).final->period == 37);
  }
}

TEST_CASE("marks take precedence over tokens", "[detector]") {
  std::mt19937_64 rng(23);
  IterationDetector d;
  const Tokens layer = random_tokens(rng, 50, 1000);
  // Tokens repeat every 50, but the program marks every 100: marks win.
  for (int k = 0; k < 6; ++k) {
    CHECK((d.mark() == (k == 2)));  // two equal marked iterations seen after the third mark
    for (int i = 0; i < 2; ++i) {
      for (const auto t : layer) CHECK_FALSE(d.push(t));
    }
  }
  REQUIRE(d.period());
  CHECK(d.period()->from_marks);
  CHECK(d.period()->period == 100);
  CHECK(d.period()->first_boundary == 0);
  CHECK(d.period()->explained == 500);  // five equal marked iterations
}

TEST_CASE("marks: a differing first iteration is warm-up", "[detector]") {
  IterationDetector d;
  std::uint64_t token = 0;
  d.mark();
  for (int i = 0; i < 130; ++i) d.push(token++);  // iteration 0: 130 tokens
  for (int k = 0; k < 3; ++k) {
    d.mark();
    for (int i = 0; i < 90; ++i) d.push(token++);
  }
  d.mark();
  REQUIRE(d.period());
  CHECK(d.period()->period == 90);
  CHECK(d.period()->first_boundary == 130);
}

TEST_CASE("reset forgets the period", "[detector]") {
  IterationDetector d;
  for (int k = 0; k < 20; ++k) {
    for (std::uint64_t t = 0; t < 10; ++t) d.push(t);
  }
  REQUIRE(d.period());
  d.reset();
  CHECK_FALSE(d.period());
  CHECK(d.tokens_seen() == 0);
}

TEST_CASE("detector follows a lasting change of period", "[detector]") {
  std::mt19937_64 rng(29);
  Tokens stream;
  append(stream, random_tokens(rng, 400, 100), 8);  // training
  append(stream, random_tokens(rng, 250, 100), 8);  // then a different loop (evaluation)
  const Run run = feed(stream);
  CHECK(run.reported == std::vector<std::uint64_t>{400, 250});
  REQUIRE(run.final);
  CHECK(run.final->first_boundary >= 8 * 400 - 5);
}
