// find_iterations without marks on a synthetic training loop: period, warm-up, and the phase
// rule that puts the boundary where no temporary crosses it.
#include <catch2/catch.hpp>

#include <vector>

#include "memtool/trace/iterations.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/trace/model.hpp"

using namespace memtool::trace;

namespace {

struct Loop {
  TraceModel model;
  std::vector<std::uint64_t> starts;  // event index of each iteration's first event
};

void a(TraceModel& m, std::uint64_t address, std::uint64_t size) {
  AllocEvent e;
  e.address = address;
  e.size = size;
  m.on_alloc(e);
}
void f(TraceModel& m, std::uint64_t address) {
  FreeEvent e;
  e.address = address;
  m.on_free(e);
}
void k(TraceModel& m, std::uint32_t kernel, std::vector<std::uint64_t> touched) {
  LaunchEvent e;
  e.kernel = StringId{kernel};
  e.touched = touched;
  m.on_launch(e);
}

// Weights, then `iterations` steps: input, two activations, gradients, optimizer; the first
// step also creates optimizer state (never freed), like a lazy optimizer.
Loop training_loop(int iterations, bool with_marks, bool quiet_tail = false) {
  Loop loop;
  TraceModel& m = loop.model;
  a(m, 0x10000, 4096);
  a(m, 0x20000, 4096);
  for (int i = 0; i < iterations; ++i) {
    if (with_marks) {
      IterationMarkEvent mark;
      mark.index = static_cast<std::uint64_t>(i);
      m.on_iteration_mark(mark);
    }
    loop.starts.push_back(m.event_count() - (with_marks ? 1 : 0));
    a(m, 0x100, 64);  // input
    k(m, 1, {0x100, 0x10000});
    a(m, 0x200, 128);  // activation 1
    k(m, 2, {0x200, 0x20000});
    a(m, 0x300, 128);  // activation 2
    k(m, 3, {0x200, 0x300});
    f(m, 0x100);
    a(m, 0x400, 4096);  // gradient
    k(m, 4, {0x300, 0x400});
    f(m, 0x200);
    f(m, 0x300);
    if (i == 0) a(m, 0x30000, 4096);  // optimizer state
    k(m, 5, {0x400, 0x10000, 0x30000});
    f(m, 0x400);
    if (quiet_tail) {  // e.g. loss.item() and logging: launches after the last free
      k(m, 6, {0x10000});
      k(m, 7, {0x20000});
    }
  }
  return loop;
}

}  // namespace

TEST_CASE("iterations from the detector start where nothing crosses", "[iterations]") {
  const Loop loop = training_loop(8, false);
  const Iterations it = find_iterations(loop.model);
  REQUIRE(it.source == IterationSource::detector);
  CHECK(it.period_events == 13);
  CHECK(it.period_tokens == 13);
  CHECK(it.period_allocs == 4);
  REQUIRE(it.spans.size() >= 2);
  CHECK(it.spans[0].warm_up);
  CHECK(it.spans[0].first_event == 0);
  // Every steady iteration starts exactly at a true iteration start.
  std::size_t steady = 0;
  for (const auto& span : it.spans) {
    if (span.warm_up) continue;
    ++steady;
    CHECK(std::find(loop.starts.begin(), loop.starts.end(), span.first_event) != loop.starts.end());
    CHECK(span.length() == 13);
  }
  CHECK(steady >= 6);
  CHECK(it.steady_start <= loop.starts[2]);
  // The optimizer state allocated in warm-up is persistent; weights too.
  CHECK(persistent_buffers(loop.model, it).size() == 3);
  CHECK(leaked_buffers(loop.model, it).empty());
}

TEST_CASE("among equally quiet phases the iteration starts at the allocation", "[iterations]") {
  const Loop loop = training_loop(6, false, true);
  const Iterations it = find_iterations(loop.model);
  REQUIRE(it.source == IterationSource::detector);
  CHECK(it.period_events == 15);
  for (const auto& span : it.spans) {
    if (span.warm_up) continue;
    // The two launches after the last free belong to the previous iteration.
    CHECK(std::find(loop.starts.begin(), loop.starts.end(), span.first_event) != loop.starts.end());
    CHECK(loop.model.event(span.first_event).kind == EventKind::alloc);
  }
}

TEST_CASE("marks and detection agree on the same loop", "[iterations]") {
  const Loop marked = training_loop(8, true);
  const Iterations by_marks = find_iterations(marked.model);
  REQUIRE(by_marks.source == IterationSource::marks);
  CHECK(by_marks.spans.size() == 8);
  CHECK(by_marks.first_steady() == 1);
  CHECK(by_marks.period_events == 14);  // the mark event is part of its iteration
  CHECK(by_marks.period_tokens == 13);
  CHECK(by_marks.period_allocs == 4);
  for (std::size_t i = 0; i < 8; ++i) CHECK(by_marks.spans[i].first_event == marked.starts[i]);

  IterationOptions ignore_marks;
  ignore_marks.use_marks = false;
  const Iterations detected = find_iterations(marked.model, ignore_marks);
  REQUIRE(detected.source == IterationSource::detector);
  CHECK(detected.period_tokens == 13);
  CHECK(detected.period_allocs == 4);
}

TEST_CASE("no iterations in a trace without repetition", "[iterations]") {
  TraceModel m;
  for (std::uint64_t i = 0; i < 200; ++i) a(m, 0x1000 * (i + 1), 100 + i);
  const Iterations it = find_iterations(m);
  CHECK_FALSE(it.found());
  CHECK(it.spans.empty());
  CHECK(it.period_events == 0);
  CHECK(summarize_iterations(m, it).empty());
  CHECK(persistent_buffers(m, it).empty());
}
