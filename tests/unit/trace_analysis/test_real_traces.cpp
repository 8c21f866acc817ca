// The real PyTorch traces (tests/fixtures/traces/*.log): the `I n` lines are the ground
// truth. With marks, iterations must match them; with marks stripped, detection must find the
// same period and put the boundaries at the same events; iteration 3 as a planner problem must
// equal the fixture CSV, and its lower bound must relate to the iteration's peak as documented.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "fixture_log.hpp"
#include "memtool/trace/iteration_detector.hpp"
#include "memtool/trace/iterations.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/paper_detector.hpp"

using namespace memtool::trace;
using memtool::test::fixture_path;
using memtool::test::load_fixture_log;
using memtool::test::LogOptions;

namespace {

struct Fixture {
  const char* name;
  std::uint64_t allocs_per_iteration;  // from the fixtures' README
  std::uint64_t peak_live_bytes;       // from the fixtures' README
};

const Fixture kFixtures[] = {
    {"alexnet", 180, 887414904},
    {"mobilenet_v2", 2043, 354561300},
    {"lstm", 1903, 294612804},
};

using Row = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;  // lower, upper, size

std::vector<Row> read_csv(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "id,lower,upper,size");
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::string id, lower, upper, size;
    std::getline(s, id, ',');
    std::getline(s, lower, ',');
    std::getline(s, upper, ',');
    std::getline(s, size, ',');
    rows.emplace_back(std::stoull(lower), std::stoull(upper), std::stoull(size));
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::vector<Row> rows_of(const Problem& p) {
  std::vector<Row> rows;
  for (const auto& r : p.buffers) {
    for (const auto& i : r.intervals) rows.emplace_back(i.begin, i.end, r.size);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::uint64_t lower_bound_of(const std::vector<Row>& rows) {
  Problem p;
  for (const auto& [lower, upper, size] : rows) {
    BufferRequest r;
    r.size = size;
    r.intervals.push_back({lower, upper});
    p.buffers.push_back(r);
  }
  return problem_lower_bound(p);
}

// A fixture's log with its `I n` marks stripped: only detection can find the iterations.
memtool::test::LogTruth load_unmarked(const std::string& name, EventVisitor& visitor) {
  LogOptions strip;
  strip.strip_marks = true;
  return load_fixture_log(fixture_path(name + ".log"), visitor, strip);
}

// Events in iteration 3 of the ground truth (a steady one): the period a detector must find.
std::uint64_t truth_period(const memtool::test::LogTruth& truth) {
  return truth.allocs[3] + truth.frees[3] + truth.launches[3];
}

}  // namespace

TEST_CASE("real traces: marks give the ground-truth iterations", "[real]") {
  const Fixture& fx = kFixtures[GENERATE(0, 1, 2)];
  INFO(fx.name);
  TraceModel m;
  const auto truth = load_fixture_log(fixture_path(std::string(fx.name) + ".log"), m);
  CHECK(m.stats().unknown_frees == 0);
  CHECK(m.stats().reused_live_addresses == 0);
  const Iterations it = find_iterations(m);
  REQUIRE(it.source == IterationSource::marks);
  REQUIRE(it.spans.size() == truth.iteration_starts.size());
  for (std::size_t k = 0; k < it.spans.size(); ++k) {
    CHECK(it.spans[k].first_event == truth.iteration_starts[k]);
  }
  CHECK(it.first_steady() == 1);  // iteration 0 creates the optimizer state
  CHECK(it.period_allocs == fx.allocs_per_iteration);
  CHECK(it.period_events == truth_period(truth) + 1);

  const auto curve = live_bytes_curve(m);
  CHECK(*std::max_element(curve.begin(), curve.end()) == fx.peak_live_bytes);
  const auto summary = summarize_iterations(m, it);
  for (std::size_t k = 2; k < summary.size(); ++k) {
    CHECK(summary[k].peak.bytes == summary[1].peak.bytes);  // steady state repeats exactly
    CHECK(summary[k].allocs == fx.allocs_per_iteration);
  }
}

TEST_CASE("real traces: detection without marks finds the same iterations", "[real]") {
  const Fixture& fx = kFixtures[GENERATE(0, 1, 2)];
  INFO(fx.name);
  TraceModel m;
  const auto truth = load_unmarked(fx.name, m);
  REQUIRE(m.marks().empty());
  const Iterations it = find_iterations(m);
  REQUIRE(it.source == IterationSource::detector);
  CHECK(it.period_events == truth_period(truth));
  CHECK(it.period_allocs == fx.allocs_per_iteration);
  std::size_t steady = 0;
  for (const auto& span : it.spans) {
    if (span.warm_up) continue;
    ++steady;
    INFO("steady iteration at event " << span.first_event);
    CHECK(std::find(truth.iteration_starts.begin(), truth.iteration_starts.end(), span.first_event) !=
          truth.iteration_starts.end());
  }
  // Iteration 0 differs; every later one is found.
  CHECK(steady == truth.iteration_starts.size() - 1);
  CHECK(it.steady_start == truth.iteration_starts[1]);
}

TEST_CASE("real traces: iteration 3 as a planner problem equals the fixture CSV", "[real]") {
  const Fixture& fx = kFixtures[GENERATE(0, 1, 2)];
  INFO(fx.name);
  TraceModel m;
  load_fixture_log(fixture_path(std::string(fx.name) + ".log"), m);
  const Iterations it = find_iterations(m);
  REQUIRE(it.spans.size() > 3);

  // The CSV is the clipped window on allocation/free time with persistent buffers spanning it.
  ProblemOptions like_csv;
  like_csv.crossing = CrossingMode::clip;
  like_csv.time = TimeAxis::alloc_free;
  like_csv.include_persistent = true;
  const Problem ours = to_problem(m, it, 3, 1, like_csv);
  const auto csv = read_csv(fixture_path(std::string(fx.name) + ".iter3.csv"));
  CHECK(rows_of(ours) == csv);

  // LB(CSV) = peak live bytes of iteration 3 (persistent included); the planner's default
  // problem leaves persistent buffers out: LB = peak - persistent bytes.
  const IterationLifetimes life = iteration_lifetimes(m, it, 3);
  CHECK(lower_bound_of(csv) == life.peak_live_bytes);
  const auto summary = summarize_iterations(m, it);
  CHECK(life.peak_live_bytes == summary[3].peak.bytes);
  CHECK(life.peak_event == summary[3].peak.event);
  CHECK(life.live_at_start == summary[3].live_at_start);
  CHECK(life.live_at_end == summary[3].live_at_end);
  CHECK(life.persistent_bytes == life.live_at_start);  // nothing else survives an iteration
  const Problem planner = to_problem(m, it, 3, 256);
  CHECK(problem_lower_bound(planner) == life.peak_live_bytes - life.persistent_bytes);
  std::uint64_t persistent_rows = 0;
  for (const auto& [lower, upper, size] : csv) {
    if (lower == 0 && upper == ours.time_horizon) ++persistent_rows;
  }
  CHECK(persistent_rows == persistent_buffers(m, it).size());
  CHECK(planner.buffers.size() == fx.allocs_per_iteration);
}

TEST_CASE("real traces: the paper's detector agrees on alexnet", "[real][paper]") {
  TraceModel m;
  const auto truth = load_unmarked("alexnet", m);
  const auto tokens = signature_tokens(m);
  PaperIterationDetector paper;
  for (const auto t : tokens) paper.push(t);
  REQUIRE(paper.period());
  CHECK(paper.period()->period == truth_period(truth));
}

namespace {

// Forwards to a model and, after the `at`-th event, slips in an extra allocation and free
// (noise: a stray tensor in one iteration).
class NoiseInjector : public EventVisitor {
 public:
  NoiseInjector(TraceModel& model, std::uint64_t at) : model_(model), at_(at) {}
  void on_string(StringId id, std::string_view text) override { model_.on_string(id, text); }
  void on_alloc(const AllocEvent& e) override {
    model_.on_alloc(e);
    tick();
  }
  void on_free(const FreeEvent& e) override {
    model_.on_free(e);
    tick();
  }
  void on_launch(const LaunchEvent& e) override {
    model_.on_launch(e);
    tick();
  }

 private:
  void tick() {
    if (++seen_ != at_) return;
    AllocEvent a;
    a.address = 0x1;
    a.size = 12345;
    model_.on_alloc(a);
    FreeEvent f;
    f.address = 0x1;
    model_.on_free(f);
  }
  TraceModel& model_;
  std::uint64_t at_;
  std::uint64_t seen_ = 0;
};

}  // namespace

TEST_CASE("real traces: detection survives a stray allocation in one iteration", "[real]") {
  TraceModel m;
  // Find where iteration 5 is, then load again with noise in its middle.
  TraceModel probe;
  const auto truth = load_unmarked("alexnet", probe);
  const std::uint64_t at = truth.iteration_starts[5] + 200;
  NoiseInjector noisy(m, at);
  load_unmarked("alexnet", noisy);
  const Iterations it = find_iterations(m);
  REQUIRE(it.source == IterationSource::detector);
  const std::uint64_t period = truth_period(truth);
  CHECK(it.period_events == period);
  CHECK(it.period_allocs == 180);
  CHECK(it.steady_start == truth.iteration_starts[1]);
  std::size_t irregular = 0;
  for (const auto& span : it.spans) {
    if (span.warm_up) continue;
    // Ground truth, shifted by the two injected events after the injection point.
    const bool after = span.first_event > at;
    const std::uint64_t truth_start = span.first_event - (after ? 2 : 0);
    CHECK(std::find(truth.iteration_starts.begin(), truth.iteration_starts.end(), truth_start) !=
          truth.iteration_starts.end());
    if (!span.regular) {
      ++irregular;
      CHECK(span.length() == period + 2);
    }
  }
  CHECK(irregular == 1);
}

TEST_CASE("real traces: the online detector settles on the iteration period", "[real][detector]") {
  const Fixture& fx = kFixtures[GENERATE(0, 1, 2)];
  INFO(fx.name);
  TraceModel m;
  const auto truth = load_unmarked(fx.name, m);
  const std::uint64_t period = truth_period(truth);
  IterationDetector online;
  std::vector<std::uint64_t> reported;
  std::uint64_t settled_at = 0;
  for (const auto t : signature_tokens(m)) {
    if (online.push(t)) {
      reported.push_back(online.period()->period);
      settled_at = online.tokens_seen();
    }
  }
  REQUIRE(online.period());
  CHECK(online.period()->period == period);
  CHECK(reported.back() == period);
  // Confirmed within iteration 3: iterations 1 and 2 are the first two that repeat.
  CHECK(settled_at <= truth.iteration_starts[3] + period);
  CHECK(online.period()->first_boundary <= truth.iteration_starts[1] + period);
}
