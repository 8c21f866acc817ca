// Property tests on random traces: whatever the input (random allocations, frees of unknown
// addresses, address reuse, marks or not, with or without a repeating core), iteration spans
// are ordered and disjoint, lifetimes stay inside their window, and the clipped problem with
// persistent buffers has exactly the iteration's peak live bytes as its lower bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "memtool/trace/iterations.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/trace/model.hpp"

using namespace memtool::trace;

namespace {

// A random "program": weights, then a random training-step body repeated 2-11 times, with
// some buffers freed in the next step (crossing), a few never freed (leaks), and rare noise
// (stray buffers, frees of unknown addresses).
TraceModel random_trace(std::mt19937_64& rng, bool marks) {
  TraceModel m;
  const auto allocate = [&](std::uint64_t address, std::uint64_t size) {
    AllocEvent a;
    a.address = address;
    a.size = size;
    m.on_alloc(a);
  };
  const auto release = [&](std::uint64_t address) {
    FreeEvent f;
    f.address = address;
    m.on_free(f);
  };
  for (std::uint64_t w = 0; w < rng() % 4; ++w) allocate(0x9000000 + w * 0x100000, 1 + rng() % 100000);

  enum class Op { alloc, free, free_previous, launch };
  struct Step {
    Op op;
    std::uint64_t buffer;
  };
  const std::uint64_t buffers = 3 + rng() % 40;
  std::vector<Step> body;
  std::vector<std::uint64_t> sizes(buffers);
  for (std::uint64_t b = 0; b < buffers; ++b) {
    sizes[b] = rng() % 3 == 0 ? 8 : 1 + rng() % 1000000;
    body.push_back({Op::alloc, b});
  }
  std::shuffle(body.begin(), body.end(), rng);
  // Each buffer is freed after its allocation, or in the next step, or (rarely) never.
  std::vector<Step> with_frees;
  std::vector<std::uint64_t> to_free;
  for (const Step& s : body) {
    with_frees.push_back(s);
    to_free.push_back(s.buffer);
    if (rng() % 3 == 0) with_frees.push_back({Op::launch, s.buffer});
    if (rng() % 2 == 0 && !to_free.empty()) {
      const std::size_t k = rng() % to_free.size();
      with_frees.push_back({Op::free, to_free[k]});
      to_free.erase(to_free.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  for (const std::uint64_t b : to_free) {
    const auto fate = rng() % 6;
    if (fate == 0) continue;  // leaked every step
    if (fate == 1) {          // freed in the next step, somewhere
      const std::size_t at = rng() % (with_frees.size() + 1);
      with_frees.insert(with_frees.begin() + static_cast<std::ptrdiff_t>(at), {Op::free_previous, b});
    } else {
      with_frees.push_back({Op::free, b});
    }
  }
  const auto address = [&](std::uint64_t step, std::uint64_t b) {
    return 0x100000000 * (1 + step) + 0x1000 * b;  // a fresh range per step
  };
  const std::uint64_t steps = 2 + rng() % 10;
  std::uint64_t noise = 0;
  for (std::uint64_t step = 0; step < steps; ++step) {
    if (marks) {
      IterationMarkEvent mark;
      mark.index = step;
      m.on_iteration_mark(mark);
    }
    for (const Step& s : with_frees) {
      switch (s.op) {
        case Op::alloc:
          allocate(address(step, s.buffer), sizes[s.buffer]);
          break;
        case Op::free:
          release(address(step, s.buffer));
          break;
        case Op::free_previous:
          if (step > 0) release(address(step - 1, s.buffer));
          break;
        case Op::launch: {
          LaunchEvent l;
          l.kernel = StringId{static_cast<std::uint32_t>(s.buffer % 5)};
          const std::vector<std::uint64_t> touched{address(step, s.buffer) + 4, 0x42};
          l.touched = touched;
          m.on_launch(l);
          break;
        }
      }
      if (rng() % 400 == 0) {  // noise
        ++noise;
        allocate(0x50 + noise, 1 + rng() % 77);
        if (rng() % 2 == 0) release(0x50 + noise);
        release(0xbad0000 + noise);
      }
    }
  }
  return m;
}

}  // namespace

TEST_CASE("random traces: spans, lifetimes and problems stay consistent", "[properties]") {
  std::mt19937_64 rng(99);
  int by_marks = 0;
  int by_detector = 0;
  for (int trial = 0; trial < 60; ++trial) {
    INFO("trial " << trial);
    const TraceModel m = random_trace(rng, trial % 2 == 0);
    const Iterations it = find_iterations(m);
    std::uint64_t previous_end = 0;
    for (std::size_t k = 0; k < it.spans.size(); ++k) {
      const IterationSpan& span = it.spans[k];
      REQUIRE(span.first_event < span.end_event);
      REQUIRE(span.first_event >= previous_end);
      REQUIRE(span.end_event <= m.event_count());
      previous_end = span.end_event;
      CHECK(it.iteration_of(span.first_event) == k);
      CHECK(it.iteration_of(span.end_event - 1) == k);

      const IterationLifetimes life = iteration_lifetimes(m, it, k);
      for (const auto& b : life.buffers) {
        CHECK(b.live.begin < b.live.end);
        CHECK(b.live.end <= span.length());
        for (const auto a : b.accesses) CHECK(a < span.length());
      }
      ProblemOptions exact;
      exact.crossing = CrossingMode::clip;
      exact.include_persistent = true;
      const Problem clip = to_problem(m, it, k, 1, exact);
      CHECK(problem_lower_bound(clip) == life.peak_live_bytes);
      const Problem wrap = to_problem(m, it, k, 64);
      for (const auto& r : wrap.buffers) {
        REQUIRE_FALSE(r.intervals.empty());
        for (std::size_t i = 0; i < r.intervals.size(); ++i) {
          CHECK(r.intervals[i].begin < r.intervals[i].end);
          CHECK(r.intervals[i].end <= wrap.time_horizon);
          if (i > 0) CHECK(r.intervals[i - 1].end <= r.intervals[i].begin);
        }
      }
    }
    by_marks += it.source == IterationSource::marks ? 1 : 0;
    by_detector += it.source == IterationSource::detector ? 1 : 0;
    if (it.found()) {
      CHECK(it.spans.back().end_event == m.event_count());
      CHECK(it.period_events > 0);
    }
    const auto summary = summarize_iterations(m, it);
    CHECK(summary.size() == it.spans.size());
  }
  // Both paths were exercised (noise makes some detections fail; that is fine).
  CHECK(by_marks == 30);
  CHECK(by_detector >= 10);
}
