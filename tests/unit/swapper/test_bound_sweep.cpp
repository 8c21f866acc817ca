// The bound's sweep (swapper/src/bound.cpp) against the direct computation it replaced: every
// op's windows found by a scan and sorted. Same answers on the real iterations (at two link
// speeds), on transformer-shaped steps, and on small random iterations full of ties (ops of 0 to
// 3 ns, equal sizes, links whose rates do not divide them) and past 2^53 ns (where bound.cpp
// computes each op directly).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "memtool/swapper/bound.hpp"
#include "memtool/swapper/candidates.hpp"
#include "real_iterations.hpp"
#include "transformer_iteration.hpp"

namespace ms = memtool::swapper;

namespace {

double capacity(std::vector<std::pair<double, std::uint64_t>>& items, double bytes_per_ns) {
  std::sort(items.begin(), items.end());
  double beyond = 0;
  for (const auto& item : items) beyond += static_cast<double>(item.second);
  double best = beyond;
  for (std::size_t k = 0; k < items.size(); ++k) {
    beyond -= static_cast<double>(items[k].second);
    if (k + 1 < items.size() && items[k + 1].first == items[k].first) continue;
    best = std::min(best, bytes_per_ns * items[k].first + beyond);
  }
  return best;
}

// The bound as bound.hpp defines it, computed op by op.
ms::Bound direct_bound(const ms::Iteration& iteration, const ms::Link& link) {
  struct Window {
    double begin, end, gap_begin, gap_end;
    std::uint64_t size;
  };
  ms::Bound result;
  const std::size_t n = iteration.ops.size();
  const ms::BaseTimeline timeline(iteration);
  const std::vector<std::uint64_t> live = ms::live_bytes_per_op(iteration);
  result.plain_peak_bytes = *std::max_element(live.begin(), live.end());
  std::vector<Window> windows;
  for (const ms::Gap& gap : ms::find_gaps(iteration)) {
    const std::uint64_t size = iteration.buffers[gap.buffer].size;
    const double gap_begin = timeline.end(gap.from_op);
    const double gap_end = timeline.start(gap.to_op);
    const Window w{gap_begin + link.d2h_ns(size), gap_end - link.h2d_ns(size), gap_begin, gap_end, size};
    if (w.begin <= w.end) windows.push_back(w);
  }
  std::vector<std::pair<double, std::uint64_t>> since_out, until_back;
  for (std::size_t i = 0; i < n; ++i) {
    since_out.clear();
    until_back.clear();
    double absent = 0;
    for (const Window& w : windows) {
      for (const double t : {timeline.start(i), timeline.start(i) + timeline.period_ns()}) {
        if (t < w.begin || t > w.end) continue;
        since_out.emplace_back(t - w.gap_begin, w.size);
        until_back.emplace_back(w.gap_end - t, w.size);
        absent += static_cast<double>(w.size);
        break;
      }
    }
    const double out =
        std::min({absent, capacity(since_out, link.d2h_bytes_per_ns), capacity(until_back, link.h2d_bytes_per_ns)});
    const auto out_bytes = static_cast<std::uint64_t>(out);
    const std::uint64_t lb = live[i] > out_bytes ? live[i] - out_bytes : 0;
    if (lb > result.peak_bytes || i == 0) {
      result.peak_bytes = std::max(result.peak_bytes, lb);
      result.op = static_cast<std::uint32_t>(i);
      result.live_bytes = live[i];
    }
  }
  return result;
}

ms::Bound same(const ms::Iteration& it, const ms::Link& link) {
  const ms::Bound fast = ms::bound(it, link);
  const ms::Bound direct = direct_bound(it, link);
  CHECK(fast.peak_bytes == direct.peak_bytes);
  CHECK(fast.op == direct.op);
  CHECK(fast.live_bytes == direct.live_bytes);
  CHECK(fast.plain_peak_bytes == direct.plain_peak_bytes);
  return fast;
}

// A random iteration of `n` ops: durations drawn from `durations`, sizes from a few values,
// persistent buffers, buffers crossing the iteration boundary, and random accesses.
ms::Iteration random_iteration(memtool::test::SplitMix& random, std::uint32_t n,
                               const std::vector<std::uint64_t>& durations) {
  const auto below = [&](std::uint64_t k) { return random.next() % k; };
  ms::Iteration it;
  it.ops.resize(n);
  for (ms::Op& op : it.ops) op.duration_ns = durations[below(durations.size())];
  const std::uint64_t sizes[] = {1, 3, 64, 1000, 4096, 1'000'000};
  const std::uint32_t buffers = 2 + static_cast<std::uint32_t>(below(3 * n / 2));
  for (std::uint32_t b = 0; b < buffers; ++b) {
    ms::Buffer buffer;
    buffer.id = b;
    buffer.size = sizes[below(std::size(sizes))];
    buffer.persistent = below(5) == 0;
    buffer.alloc_before_op = static_cast<std::uint32_t>(below(n));
    buffer.free_after_op = static_cast<std::uint32_t>(below(n));
    for (std::uint32_t op = 0; op < n; ++op) {
      if (buffer.live_at(op) && below(4) == 0) buffer.accesses.push_back({op, ms::AccessMode::read_write});
    }
    it.buffers.push_back(buffer);
  }
  return it;
}

}  // namespace

TEST_CASE("the bound's sweep gives the direct computation's answer on random iterations full of ties",
          "[swapper][bound]") {
  memtool::test::SplitMix random(34);
  const double rates[] = {55.0, 0.55, 1.0 / 3, 7.25, 1e-3};
  const std::uint64_t latencies[] = {0, 1, 5, 90};
  int swaps_lower_it = 0;  // rounds where the windows matter
  for (int round = 0; round < 400; ++round) {
    const auto n = static_cast<std::uint32_t>(5 + random.next() % 120);
    const ms::Iteration it = random_iteration(random, n, {0, 1, 2, 3, 1000, 5000});
    ms::Link link;
    link.d2h_bytes_per_ns = rates[random.next() % std::size(rates)];
    link.h2d_bytes_per_ns = rates[random.next() % std::size(rates)];
    link.d2h_latency_ns = latencies[random.next() % std::size(latencies)];
    link.h2d_latency_ns = latencies[random.next() % std::size(latencies)];
    INFO("round " << round << ", " << n << " ops, " << it.buffers.size() << " buffers");
    const ms::Bound b = same(it, link);
    if (b.peak_bytes < b.plain_peak_bytes) ++swaps_lower_it;
  }
  CHECK(swaps_lower_it > 100);
}

TEST_CASE("the bound past 2^53 ns, where doubles round the times", "[swapper][bound]") {
  memtool::test::SplitMix random(53);
  for (int round = 0; round < 50; ++round) {
    const ms::Iteration it = random_iteration(random, 40, {1, 3, std::uint64_t{1} << 52, (std::uint64_t{1} << 53) + 1});
    ms::Link link;
    link.d2h_bytes_per_ns = link.h2d_bytes_per_ns = 1e-9;  // copies of 10^9 ns and more
    INFO("round " << round);
    same(it, link);
  }
}

TEST_CASE("the bound's sweep gives the direct computation's answer", "[swapper][bound]") {
  ms::Link slow;
  slow.d2h_bytes_per_ns = slow.h2d_bytes_per_ns = 0.55;
  slow.d2h_latency_ns = slow.h2d_latency_ns = 90'000;
  for (const char* model : {"alexnet", "mobilenet_v2", "lstm", "gpt_tiny", "bert_tiny"}) {
    INFO(model);
    same(memtool::test::real_iteration(model).iteration, ms::Link{});
    same(memtool::test::real_iteration(model).iteration, slow);
  }
  for (const std::uint32_t ops : {200U, 1000U, 3000U}) {
    INFO(ops << " ops");
    same(memtool::test::transformer_iteration(ops, ops), ms::Link{});
    same(memtool::test::transformer_iteration(ops, ops), slow);
  }
}
