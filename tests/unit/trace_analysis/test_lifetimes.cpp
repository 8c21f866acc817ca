// Lifetimes on small hand-made traces with exact expected intervals, peaks, persistent and
// crossing buffers, and the planner problems (wrap, clip, both time axes, shadow slots).
#include <catch2/catch.hpp>

#include <vector>

#include "memtool/trace/iterations.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/trace/model.hpp"

using namespace memtool::trace;

namespace {

class Builder {
 public:
  Builder& a(std::uint64_t address, std::uint64_t size) {
    AllocEvent e;
    e.address = address;
    e.size = size;
    model.on_alloc(e);
    return *this;
  }
  Builder& f(std::uint64_t address) {
    FreeEvent e;
    e.address = address;
    model.on_free(e);
    return *this;
  }
  Builder& k(std::vector<std::uint64_t> touched) {
    LaunchEvent e;
    e.kernel = StringId{1};
    e.touched = touched;
    model.on_launch(e);
    return *this;
  }
  Builder& mark() {
    IterationMarkEvent e;
    e.index = marks++;
    model.on_iteration_mark(e);
    return *this;
  }
  TraceModel model;
  std::uint64_t marks = 0;
};

// Event indices in comments. Buffers: P=0 x0=1 c0=2 x1=3 c1=4 x2=5 c2=6.
TraceModel three_iterations() {
  Builder b;
  b.a(0x100, 100)  // 0  P: persistent
      .mark()      // 1  iteration 0 (warm-up)
      .a(0x200, 10)
      .k({0x200})
      .f(0x200)      // 2 3 4  x0
      .a(0x300, 30)  // 5  c0: freed in iteration 1
      .mark()        // 6  iteration 1
      .a(0x200, 10)
      .k({0x200, 0x300})
      .f(0x200)
      .f(0x300)      // 7 8 9 10
      .a(0x300, 30)  // 11 c1
      .mark()        // 12 iteration 2
      .a(0x200, 10)
      .k({0x200, 0x300})
      .f(0x200)
      .f(0x300)       // 13 14 15 16
      .a(0x300, 30);  // 17 c2: never freed
  return std::move(b.model);
}

std::vector<LiveInterval> intervals_of(const Problem& p, std::uint64_t id) {
  for (const auto& r : p.buffers) {
    if (r.id == id) return r.intervals;
  }
  return {};
}

bool crosses(const Problem& p, std::uint64_t id) {
  for (const auto& r : p.buffers) {
    if (r.id == id) return r.crosses_iteration;
  }
  return false;
}

}  // namespace

TEST_CASE("live bytes curve and iteration summaries", "[lifetimes]") {
  const TraceModel m = three_iterations();
  const auto curve = live_bytes_curve(m);
  CHECK(curve == std::vector<std::uint64_t>{100, 100, 110, 110, 100, 130, 130, 140, 140, 130, 100, 130, 130, 140, 140,
                                            130, 100, 130});
  const Iterations it = find_iterations(m);
  REQUIRE(it.source == IterationSource::marks);
  REQUIRE(it.spans.size() == 3);
  CHECK(it.spans[0].warm_up);  // iteration 0 has no F of a previous c buffer
  CHECK_FALSE(it.spans[1].warm_up);
  CHECK(it.first_steady() == 1);
  CHECK(it.steady_start == 6);
  CHECK(it.prologue_end == 1);
  CHECK(it.period_events == 6);
  CHECK(it.period_tokens == 5);
  CHECK(it.period_allocs == 2);
  CHECK(it.spans[2].complete);
  CHECK(it.iteration_of(0) == std::nullopt);
  CHECK(it.iteration_of(8) == 1u);

  const auto summary = summarize_iterations(m, it);
  REQUIRE(summary.size() == 3);
  CHECK(summary[0].allocs == 2);
  CHECK(summary[0].frees == 1);
  CHECK(summary[0].live_at_start == 100);
  CHECK(summary[0].live_at_end == 130);
  CHECK(summary[0].peak.bytes == 130);
  CHECK(summary[0].peak.event == 5);
  CHECK(summary[1].peak.bytes == 140);
  CHECK(summary[1].peak.event == 7);
  CHECK(summary[2].live_at_end == 130);

  CHECK(persistent_buffers(m, it) == std::vector<BufferId>{BufferId{0}});
  CHECK(leaked_buffers(m, it) == std::vector<BufferId>{BufferId{6}});
}

TEST_CASE("lifetimes of one iteration", "[lifetimes]") {
  const TraceModel m = three_iterations();
  const Iterations it = find_iterations(m);
  const IterationLifetimes life = iteration_lifetimes(m, it, 1);
  CHECK(life.first_event == 6);
  CHECK(life.end_event == 12);
  REQUIRE(life.buffers.size() == 4);
  const auto& p = life.buffers[0];
  CHECK(p.buffer == BufferId{0});
  CHECK(p.live == LiveInterval{0, 6});
  CHECK(p.persistent);
  CHECK(p.alive_at_start);
  CHECK(p.alive_at_end);
  CHECK_FALSE(p.crosses_iteration());
  const auto& c0 = life.buffers[1];
  CHECK(c0.buffer == BufferId{2});
  CHECK(c0.live == LiveInterval{0, 4});
  CHECK(c0.alive_at_start);
  CHECK_FALSE(c0.alive_at_end);
  CHECK(c0.crosses_iteration());
  CHECK(c0.accesses == std::vector<std::uint64_t>{2});
  const auto& x1 = life.buffers[2];
  CHECK(x1.buffer == BufferId{3});
  CHECK(x1.live == LiveInterval{1, 3});
  CHECK_FALSE(x1.crosses_iteration());
  CHECK(x1.accesses == std::vector<std::uint64_t>{2});
  const auto& c1 = life.buffers[3];
  CHECK(c1.buffer == BufferId{4});
  CHECK(c1.live == LiveInterval{5, 6});
  CHECK(c1.alive_at_end);
  CHECK(c1.crosses_iteration());
  CHECK(c1.accesses.empty());

  CHECK(life.allocs == 2);
  CHECK(life.frees == 2);
  CHECK(life.live_bytes == std::vector<std::uint64_t>{130, 140, 140, 130, 100, 130});
  CHECK(life.live_at_start == 130);
  CHECK(life.live_at_end == 130);
  CHECK(life.peak_live_bytes == 140);
  CHECK(life.peak_event == 7);
  CHECK(life.persistent_bytes == 100);
}

TEST_CASE("report queries: largest live and longest lifetimes", "[lifetimes]") {
  const TraceModel m = three_iterations();
  const Iterations it = find_iterations(m);
  CHECK(largest_live_at(m, 7, 10) == std::vector<BufferId>{BufferId{0}, BufferId{2}, BufferId{3}});
  CHECK(largest_live_at(m, 7, 1) == std::vector<BufferId>{BufferId{0}});
  CHECK(longest_lifetimes(m, 3, &it) == std::vector<BufferId>{BufferId{2}, BufferId{4}, BufferId{1}});
  CHECK(longest_lifetimes(m, 1).front() == BufferId{0});  // persistent included without iterations
}

TEST_CASE("to_problem: wrap, clip and time axes", "[lifetimes][problem]") {
  const TraceModel m = three_iterations();
  const Iterations it = find_iterations(m);
  const std::uint64_t peak = iteration_lifetimes(m, it, 1).peak_live_bytes;
  const std::uint64_t persistent = iteration_lifetimes(m, it, 1).persistent_bytes;

  SECTION("wrap on event time") {
    const Problem p = to_problem(m, it, 1, 256);
    CHECK(p.time_horizon == 6);
    REQUIRE(p.buffers.size() == 2);  // x1 and c1; c0 is c1's copy from the previous iteration
    CHECK(intervals_of(p, 3) == std::vector<LiveInterval>{{1, 3}});
    CHECK_FALSE(crosses(p, 3));
    CHECK(intervals_of(p, 4) == std::vector<LiveInterval>{{0, 4}, {5, 6}});
    CHECK(crosses(p, 4));
    CHECK(p.buffers[0].alignment == 256);
    CHECK(problem_lower_bound(p) == peak - persistent);
  }
  SECTION("clip on event time") {
    ProblemOptions o;
    o.crossing = CrossingMode::clip;
    const Problem p = to_problem(m, it, 1, 1, o);
    REQUIRE(p.buffers.size() == 3);
    CHECK(intervals_of(p, 2) == std::vector<LiveInterval>{{0, 4}});
    CHECK(crosses(p, 2));
    CHECK(intervals_of(p, 4) == std::vector<LiveInterval>{{5, 6}});
    CHECK(problem_lower_bound(p) == peak - persistent);
    o.include_persistent = true;
    const Problem q = to_problem(m, it, 1, 1, o);
    CHECK(intervals_of(q, 0) == std::vector<LiveInterval>{{0, 6}});
    CHECK_FALSE(crosses(q, 0));
    CHECK(problem_lower_bound(q) == peak);
  }
  SECTION("allocation/free time") {
    ProblemOptions o;
    o.time = TimeAxis::alloc_free;
    const Problem w = to_problem(m, it, 1, 1, o);
    CHECK(w.time_horizon == 4);
    CHECK(intervals_of(w, 3) == std::vector<LiveInterval>{{0, 1}});
    CHECK(intervals_of(w, 4) == std::vector<LiveInterval>{{0, 2}, {3, 4}});
    o.crossing = CrossingMode::clip;
    const Problem c = to_problem(m, it, 1, 1, o);
    CHECK(intervals_of(c, 2) == std::vector<LiveInterval>{{0, 2}});
    CHECK(intervals_of(c, 4) == std::vector<LiveInterval>{{3, 4}});
    CHECK(problem_lower_bound(c) == problem_lower_bound(w));
  }
  SECTION("the last iteration's never-freed buffer spans to the end") {
    const Problem p = to_problem(m, it, 2, 1);
    CHECK(intervals_of(p, 6) == std::vector<LiveInterval>{{5, 6}});
    CHECK(crosses(p, 6));
  }
}

TEST_CASE("to_problem: buffers living longer than an iteration take several slots", "[lifetimes][problem]") {
  // Each iteration: mark, allocate b_k, free b_{k-2}: every buffer lives 2 iterations + 1 event.
  Builder b;
  for (std::uint64_t k = 0; k < 6; ++k) {
    b.mark().a(0x1000 * (k + 1), 8);
    if (k >= 2) {
      b.f(0x1000 * (k - 1));
    } else {
      b.k({});  // keeps every iteration three events long
    }
  }
  const Iterations it = find_iterations(b.model);
  REQUIRE(it.first_steady() == 2);
  const std::size_t index = 3;
  const Problem wrap = to_problem(b.model, it, index, 1);
  REQUIRE(wrap.buffers.size() == 3);  // ceil(7 / 3) slots of b_3
  const std::uint64_t id = 3;
  CHECK(wrap.buffers[0].id == id);
  CHECK(wrap.buffers[1].id == (id | (std::uint64_t{1} << kShadowSlotShift)));
  CHECK(wrap.buffers[2].id == (id | (std::uint64_t{2} << kShadowSlotShift)));
  for (const auto& r : wrap.buffers) {
    CHECK(r.intervals == std::vector<LiveInterval>{{0, 3}});
    CHECK(r.crosses_iteration);
  }
  ProblemOptions o;
  o.crossing = CrossingMode::clip;
  const Problem clip = to_problem(b.model, it, index, 1, o);
  CHECK(clip.buffers.size() == 3);  // b_1 (freed here), b_2, b_3
  CHECK(problem_lower_bound(clip) == 24);
  CHECK(problem_lower_bound(wrap) == 24);
}
