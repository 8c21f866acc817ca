// The greedy placer on its gap index (planner/src/greedy.hpp, gap_index.hpp) against the
// definition it must keep: each buffer, in order, goes into the tightest (best fit) or lowest
// (first fit) gap between the address ranges of the placed buffers it conflicts with, else on
// top. The reference below finds those buffers by testing every pair and sorts them, as the
// placer did before the index; the two must agree offset for offset, on every shape of problem
// (several intervals per buffer, alignments, equal sizes, many buffers live at once).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "gap_index.hpp"
#include "greedy.hpp"
#include "heuristics.hpp"
#include "memtool/planner/placement.hpp"
#include "prepared.hpp"
#include "problem_builders.hpp"
#include "sweep_fill.hpp"

using namespace planner_test;
namespace md = memtool::planner::detail;

namespace {

bool conflict(const md::Prepared& p, std::uint32_t a, std::uint32_t b) {
  const md::Span* x = p.spans_of(a);
  const md::Span* y = p.spans_of(b);
  for (std::uint32_t i = 0; i < p.items[a].span_count; ++i)
    for (std::uint32_t j = 0; j < p.items[b].span_count; ++j)
      if (x[i].first < y[j].end && y[j].first < x[i].end) return true;
  return false;
}

std::vector<std::uint64_t> reference_offsets(const md::Prepared& p, const std::vector<std::uint32_t>& order,
                                             md::Fit fit) {
  std::vector<std::uint64_t> offsets(p.items.size(), 0);
  std::vector<std::uint32_t> placed;
  for (std::uint32_t i : order) {
    const md::Item& it = p.items[i];
    if (it.footprint == 0) continue;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> taken;
    for (std::uint32_t j : placed)
      if (conflict(p, i, j)) taken.emplace_back(offsets[j], offsets[j] + p.items[j].footprint);
    std::sort(taken.begin(), taken.end());
    std::uint64_t cursor = 0, best = UINT64_MAX, best_gap = UINT64_MAX, chosen = UINT64_MAX;
    for (const auto& [lo, hi] : taken) {
      const std::uint64_t at = md::align_up(cursor, it.alignment);
      if (lo > cursor && at + it.footprint <= lo) {
        if (fit == md::Fit::first) {
          chosen = at;
          break;
        }
        if (lo - cursor < best_gap) {
          best_gap = lo - cursor;
          best = at;
        }
      }
      cursor = std::max(cursor, hi);
    }
    offsets[i] = chosen != UINT64_MAX ? chosen : best != UINT64_MAX ? best : md::align_up(cursor, it.alignment);
    placed.push_back(i);
  }
  return offsets;
}

// `narrow`: whether the placer must end with 8-byte ranges (greedy.hpp), if it matters.
void check_same_as_reference(const Problem& problem, const std::string& what, std::optional<bool> narrow = {}) {
  const md::Prepared p = md::prepare(problem);
  md::GreedyPlacer placer(p);
  for (const auto& spec : md::heuristic_specs()) {
    const auto order = md::heuristic_order(p, spec.order);
    const auto run = placer.place(order, spec.fit);
    INFO(fmt::format("{}, {}", what, spec.name));
    REQUIRE(run.offsets == reference_offsets(p, order, spec.fit));
    std::uint64_t pool = 0;
    for (std::uint32_t i = 0; i < p.items.size(); ++i)
      if (p.items[i].footprint != 0) pool = std::max(pool, run.offsets[i] + p.items[i].footprint);
    CHECK(run.pool == pool);
  }
  if (narrow) CHECK(placer.narrow() == *narrow);
}

}  // namespace

TEST_CASE("greedy placer: every placement as the pairwise definition gives it", "[planner][greedy]") {
  const std::vector<RandomShape> shapes{
      {200, 400, 40, 0, false, false, false},  {200, 300, 300, 0, true, false, false},
      {150, 200, 30, 1, false, true, false},   {150, 500, 60, 2, true, true, false},
      {120, 100, 100, 4, true, true, false},   {250, 2000, 25, 3, false, false, false},
      {300, 150, 150, 0, false, false, false}, {100, 50, 5, 1, true, false, false},
  };
  std::uint64_t seed = 7;
  for (int round = 0; round < 8; ++round) {
    for (const auto& shape : shapes) {
      check_same_as_reference(random_problem(seed, shape), fmt::format("seed {}", seed));
      ++seed;
    }
  }
}

TEST_CASE("greedy placer: many buffers live at once, long and short lifetimes", "[planner][greedy]") {
  // Long-lived buffers over thousands of sections (they land in the full-cover unions) mixed
  // with short ones, as in a training step.
  std::mt19937_64 rng(99);
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  std::vector<memtool::trace::BufferRequest> buffers;
  for (std::uint64_t i = 0; i < 2500; ++i) {
    const std::uint64_t start = uniform(0, 4999);
    const std::uint64_t length = uniform(0, 9) == 0 ? uniform(500, 3000) : uniform(1, 40);
    buffers.push_back(
        buffer(i, uniform(1, 8) == 1 ? uniform(1, 64) << 14 : uniform(64, 1 << 14), {{start, start + length}}, 256));
  }
  check_same_as_reference(problem_of(std::move(buffers)), "2500 buffers");
}

TEST_CASE("greedy placer: ranges in granules while they fit in 32 bits, in bytes past them", "[planner][greedy]") {
  // Sizes in multiples of 2^30 bytes, pools far past 2^32 bytes: narrow, in granules of 2^30.
  check_same_as_reference(random_problem(11, {250, 400, 60, 3, false, false, false}), "huge sizes", true);
  // Odd sizes (a granule of one byte) and a pool past 4 GiB: the first run meets a range past
  // 2^32 granules, starts again wide, and the placer stays wide.
  std::mt19937_64 rng(12);
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  std::vector<memtool::trace::BufferRequest> buffers;
  for (std::uint64_t i = 0; i < 300; ++i) {
    const std::uint64_t start = uniform(0, 999);
    const std::uint64_t size = i % 50 == 0 ? (std::uint64_t{1} << 30) + 2 * uniform(0, 1000) + 1 : uniform(1, 1 << 20);
    buffers.push_back(
        buffer(i, size, {{start, start + (i % 50 == 0 ? 1000 - start : uniform(1, 60))}}, i % 7 == 0 ? 64 : 1));
  }
  const Problem wide = problem_of(std::move(buffers));
  check_same_as_reference(wide, "past 2^32 bytes", false);
  // A run cut by its work limit that meets the overflow: still a valid plan, within the limit.
  const md::Prepared p = md::prepare(wide);
  const auto order = md::heuristic_order(p, md::Order::size);
  const auto full = md::GreedyPlacer(p).place(order, md::Fit::best);
  const auto none = md::GreedyPlacer(p).place(order, md::Fit::best, {.work = 0, .finish = true});
  md::GreedyPlacer placer(p);
  const std::uint64_t limit = full.work - 1;  // the sweep alone costs most of a run this small
  const auto cut = placer.place(order, md::Fit::best, {.work = limit, .finish = true});
  CHECK_FALSE(placer.narrow());
  CHECK(cut.cut);
  CHECK(cut.work <= std::max(limit, none.work) + full.work / 20);
  const auto verdict = memtool::planner::validate(wide, {cut.offsets, cut.pool});
  INFO(verdict.message);
  CHECK(verdict.valid);
  // Sizes in multiples of 256 bytes, small pools: narrow throughout.
  std::vector<memtool::trace::BufferRequest> small;
  for (std::uint64_t i = 0; i < 400; ++i) {
    const std::uint64_t start = uniform(0, 499);
    small.push_back(buffer(i, uniform(1, 4096) << 8, {{start, start + uniform(1, 80)}}, i % 5 == 0 ? 4096 : 256));
  }
  check_same_as_reference(problem_of(std::move(small)), "multiples of 256 bytes", true);
}

TEST_CASE("greedy placer: a run stops as soon as the pool exceeds the limit given", "[planner][greedy]") {
  const auto problem = random_problem(3, {300, 400, 50, 0, false, false, false});
  const md::Prepared p = md::prepare(problem);
  md::GreedyPlacer placer(p);
  const auto order = md::heuristic_order(p, md::Order::size);
  const auto full = placer.place(order, md::Fit::best);
  const auto stopped = placer.place(order, md::Fit::best, {.above = full.pool - 1});
  CHECK(stopped.pool == UINT64_MAX);
  CHECK(stopped.work < full.work);
  const auto again = placer.place(order, md::Fit::best, {.above = full.pool});
  CHECK(again.offsets == full.offsets);  // the index is cleared between runs
}

TEST_CASE("greedy placer: a run cut by its work limit", "[planner][greedy]") {
  // Cut with `finish`: the buffers placed before the cut sit where the full run put them, the
  // rest above them (by sweep_fill), a valid plan; without `finish`, no plan.
  for (std::uint64_t seed = 40; seed < 46; ++seed) {
    const auto problem =
        random_problem(seed, {3000, 6000, 300, static_cast<int>(seed % 5), true, seed % 2 == 0, false});
    const md::Prepared p = md::prepare(problem);
    md::GreedyPlacer placer(p);
    const auto order = md::heuristic_order(p, md::Order::size_by_start);
    const auto full = placer.place(order, md::Fit::first);
    CHECK_FALSE(full.cut);
    CHECK(full.placed == order.size());
    // With no work at all, the sweep places everything: what the index's setup and it cost.
    const auto none = placer.place(order, md::Fit::first, {.work = 0, .finish = true});
    CHECK(none.placed == 0);
    CHECK(none.work >= md::sweep_fill_work(order.size()));
    for (const std::uint64_t limit : {std::uint64_t{0}, full.work / 3, full.work / 2}) {
      INFO(fmt::format("seed {}, limit {} of {}", seed, limit, full.work));
      const auto cut = placer.place(order, md::Fit::first, {.work = limit, .finish = true});
      REQUIRE(cut.cut);
      CHECK(cut.placed < order.size());
      // Within the limit, but for the placement that crossed it (far less than a twentieth).
      CHECK(cut.work <= std::max(limit, none.work) + full.work / 20);
      std::uint64_t prefix_top = 0;
      for (std::size_t k = 0; k < cut.placed; ++k) {
        const std::uint32_t i = order[k];
        CHECK(cut.offsets[i] == full.offsets[i]);
        if (p.items[i].footprint != 0) prefix_top = std::max(prefix_top, full.offsets[i] + p.items[i].footprint);
      }
      for (std::size_t k = cut.placed; k < order.size(); ++k) {
        if (p.items[order[k]].footprint != 0) CHECK(cut.offsets[order[k]] >= prefix_top);
      }
      memtool::planner::Placement placement{cut.offsets, cut.pool};
      const auto verdict = memtool::planner::validate(problem, placement);
      INFO(verdict.message);
      CHECK(verdict.valid);
      CHECK(verdict.required_pool == cut.pool);
      const auto abandoned = placer.place(order, md::Fit::first, {.work = limit});
      CHECK(abandoned.cut);
      CHECK(abandoned.pool == UINT64_MAX);
    }
  }
}

TEST_CASE("sweep fill: valid above its base on every shape", "[planner][greedy]") {
  const std::vector<RandomShape> shapes{{400, 800, 60, 0, true, true, false},
                                        {400, 200, 200, 1, false, false, false},
                                        {300, 500, 40, 2, true, false, false},
                                        {300, 1000, 300, 3, false, true, false},
                                        {500, 300, 20, 4, true, true, false}};
  std::uint64_t seed = 900;
  for (const auto& shape : shapes) {
    for (int round = 0; round < 6; ++round, ++seed) {
      const auto problem = random_problem(seed, shape);
      const md::Prepared p = md::prepare(problem);
      std::vector<std::uint32_t> all(p.items.size());
      std::iota(all.begin(), all.end(), 0U);
      const std::uint64_t base = 1000 * (seed % 3);
      std::vector<std::uint64_t> offsets(p.items.size(), 0);
      const std::uint64_t top = md::sweep_fill(p, all, base, offsets);
      std::uint64_t required = base;
      for (std::uint32_t i = 0; i < p.items.size(); ++i) {
        if (p.items[i].footprint == 0) continue;
        CHECK(offsets[i] >= base);
        required = std::max(required, offsets[i] + p.items[i].footprint);
      }
      CHECK(top == required);
      const auto verdict = memtool::planner::validate(problem, {offsets, top});
      INFO(fmt::format("seed {}: {}", seed, verdict.message));
      CHECK(verdict.valid);
      CHECK(top - base >= p.lower_bound);
    }
  }
}

TEST_CASE("range union: touching and overlapping ranges merge, in single and batch inserts", "[planner][greedy]") {
  md::RangeUnion u;
  auto ranges = [&] { return std::vector<md::Range>(u.begin(), u.end()); };
  auto same = [](const std::vector<md::Range>& a, std::vector<std::pair<std::uint64_t, std::uint64_t>> b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
      if (a[k].lo != b[k].first || a[k].hi != b[k].second) return false;
    return true;
  };
  u.insert({10, 20});
  u.insert({30, 40});
  CHECK(same(ranges(), {{10, 20}, {30, 40}}));
  u.insert({20, 30});  // touches both: one run
  CHECK(same(ranges(), {{10, 40}}));
  u.insert({0, 5});
  u.insert({50, 60});
  u.insert({4, 12});  // overlaps the first two
  CHECK(same(ranges(), {{0, 40}, {50, 60}}));
  std::vector<md::Range> batch{{70, 80}, {45, 50}, {100, 110}, {79, 90}};
  u.insert(batch);
  CHECK(batch.empty());
  CHECK(same(ranges(), {{0, 40}, {45, 60}, {70, 90}, {100, 110}}));
  // Against a bitmap, on random inserts of both kinds.
  std::mt19937_64 rng(5);
  md::RangeUnion r;
  std::vector<bool> bits(4096, false);
  std::vector<md::Range> pending;
  for (int k = 0; k < 3000; ++k) {
    const std::uint64_t lo = rng() % 4000;
    const md::Range add{lo, lo + 1 + rng() % 40};
    for (std::uint64_t b = add.lo; b < add.hi; ++b) bits[b] = true;
    if (k % 3 == 0) {
      pending.push_back(add);
      if (pending.size() == 7) r.insert(pending);
    } else {
      r.insert(add);
    }
  }
  r.insert(pending);
  std::vector<bool> seen(4096, false);
  std::uint64_t last_hi = 0;
  bool first = true;
  for (const md::Range& x : std::vector<md::Range>(r.begin(), r.end())) {
    CHECK(x.lo < x.hi);
    if (!first) CHECK(x.lo > last_hi);  // sorted, disjoint, not touching
    first = false;
    last_hi = x.hi;
    for (std::uint64_t b = x.lo; b < x.hi; ++b) seen[b] = true;
  }
  CHECK(seen == bits);
}
