// Test helpers for the planner: hand-written problems, pseudo-random ones of every awkward kind
// (multi-interval buffers, equal sizes, tiny and huge sizes, alignments, cross-iteration flags),
// and an exhaustive optimum for tiny problems. Fixture CSVs are read with trace/import's reader.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "memtool/trace/problem.hpp"

namespace planner_test {

using memtool::trace::BufferRequest;
using memtool::trace::LiveInterval;
using memtool::trace::Problem;

inline BufferRequest buffer(std::uint64_t id, std::uint64_t size, std::vector<LiveInterval> intervals,
                            std::uint64_t alignment = 1, bool crosses = false) {
  return BufferRequest{id, size, alignment, std::move(intervals), crosses};
}

inline Problem problem_of(std::vector<BufferRequest> buffers) {
  Problem p;
  p.name = "test";
  for (const auto& b : buffers)
    for (const auto& iv : b.intervals) p.time_horizon = std::max(p.time_horizon, iv.end);
  p.buffers = std::move(buffers);
  return p;
}

struct RandomShape {
  std::size_t buffers = 40;
  std::uint64_t horizon = 100;
  std::uint64_t max_length = 30;
  int size_kind = 0;  // 0 mixed, 1 equal, 2 tiny, 3 huge, 4 powers of two
  bool alignments = false;
  bool multi_interval = false;
  bool crosses = false;
};

inline Problem random_problem(std::uint64_t seed, const RandomShape& shape) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  std::vector<BufferRequest> out;
  for (std::size_t i = 0; i < shape.buffers; ++i) {
    BufferRequest b;
    b.id = 1000 + i * 7;  // ids unlike indices, so mix-ups show
    switch (shape.size_kind) {
      case 1:
        b.size = 4096;
        break;
      case 2:
        b.size = uniform(1, 8);
        break;
      case 3:
        b.size = uniform(1, 1ULL << 20) << 30;
        break;
      case 4:
        b.size = 1ULL << uniform(0, 20);
        break;
      default:
        b.size = uniform(0, 9) == 0 ? uniform(1, 64) : uniform(1, 1 << 20);
        break;
    }
    if (shape.alignments) b.alignment = 1ULL << uniform(0, 9);
    const int pieces = shape.multi_interval ? static_cast<int>(uniform(1, 3)) : 1;
    std::uint64_t cursor = uniform(0, shape.horizon - 1);
    for (int k = 0; k < pieces && cursor < shape.horizon; ++k) {
      const std::uint64_t end = std::min(shape.horizon, cursor + uniform(1, shape.max_length));
      b.intervals.push_back({cursor, end});
      cursor = end + uniform(1, shape.max_length);
    }
    b.crosses_iteration = shape.crosses && uniform(0, 7) == 0;
    out.push_back(std::move(b));
  }
  return problem_of(std::move(out));
}

// The optimum of a tiny problem by trying every placement order, each buffer going to the top
// of the placed buffers it conflicts with: every optimum is reached by some order (push an
// optimal placement down and list it by offset).
inline std::uint64_t exhaustive_optimum(const Problem& p) {
  const std::size_t n = p.buffers.size();
  auto conflict = [&](std::size_t a, std::size_t b) {
    for (const auto& x : p.buffers[a].intervals)
      for (const auto& y : p.buffers[b].intervals)
        if (x.begin < y.end && y.begin < x.end) return true;
    return false;
  };
  auto fp = [&](std::size_t a) {
    const auto& b = p.buffers[a];
    return (b.size + b.alignment - 1) / b.alignment * b.alignment;
  };
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::uint64_t best = UINT64_MAX;
  std::vector<std::uint64_t> offset(n);
  do {
    std::uint64_t pool = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t a = order[k];
      std::uint64_t floor = 0;
      for (std::size_t j = 0; j < k; ++j)
        if (conflict(a, order[j])) floor = std::max(floor, offset[order[j]] + fp(order[j]));
      const std::uint64_t al = p.buffers[a].alignment;
      offset[a] = (floor + al - 1) / al * al;
      if (fp(a) != 0) pool = std::max(pool, offset[a] + fp(a));
    }
    best = std::min(best, pool);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

}  // namespace planner_test
