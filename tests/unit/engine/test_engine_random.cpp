// Property test: random periodic programs (allocations on three streams, device and async
// kinds, uses on any stream, buffers carried into the next iteration, a shape mutation every
// few iterations) repeated through the engine. Whatever the seed: no overlap, no corrupted
// byte, no unordered reuse, and the pool does serve.
#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <vector>

#include "program.hpp"

using namespace memtool::engine;
using namespace memtool::engine::test;

namespace {

struct Op {
  enum class Type { alloc, use, free_current, free_previous } type;
  std::size_t slot = 0;
  std::uint64_t size = 0;
  StreamId stream = 0;
  MemoryKind kind = MemoryKind::device;
};

std::vector<Op> random_iteration(std::mt19937& rng, std::size_t allocs) {
  const StreamId streams[] = {31, 32, 33};
  std::vector<bool> carried(allocs);
  for (std::size_t i = 0; i < allocs; ++i) carried[i] = rng() % 5 == 0;
  std::vector<std::size_t> previous_to_free;
  for (std::size_t i = 0; i < allocs; ++i) {
    if (carried[i]) previous_to_free.push_back(i);
  }
  std::vector<Op> ops;
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < allocs; ++i) {
    if (!previous_to_free.empty() && rng() % 2 == 0) {
      ops.push_back({Op::Type::free_previous, previous_to_free.back(), 0, 0, {}});
      previous_to_free.pop_back();
    }
    const auto kind = rng() % 3 == 0 ? MemoryKind::async : MemoryKind::device;
    ops.push_back({Op::Type::alloc, i, kUnit * (1 + rng() % 24) + (rng() % 4) * 100, streams[rng() % 3], kind});
    if (!carried[i]) live.push_back(i);
    for (int u = 0; u < 2 && !live.empty(); ++u) {
      ops.push_back({Op::Type::use, live[rng() % live.size()], 0, streams[rng() % 3], {}});
    }
    if (!live.empty() && rng() % 2 == 0) {
      const std::size_t pick = rng() % live.size();
      ops.push_back({Op::Type::free_current, live[pick], 0, 0, {}});
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
    }
  }
  for (std::size_t slot : previous_to_free) ops.push_back({Op::Type::free_previous, slot, 0, 0, {}});
  for (std::size_t slot : live) ops.push_back({Op::Type::free_current, slot, 0, 0, {}});
  return ops;
}

void run(Program& p, const std::vector<Op>& ops, std::vector<std::optional<Buffer>>& current,
         std::vector<std::optional<Buffer>>& previous, std::uint64_t grow) {
  auto release = [&p](std::optional<Buffer>& b) {
    if (!b) return;
    p.free(*b, b->kind == MemoryKind::async ? b->last_stream : 0);
    b.reset();
  };
  for (const Op& op : ops) {
    switch (op.type) {
      case Op::Type::alloc:
        current[op.slot] = p.alloc(op.size + grow, op.stream, op.kind);
        break;
      case Op::Type::use:
        if (current[op.slot]) p.use(*current[op.slot], op.stream);
        break;
      case Op::Type::free_current:
        release(current[op.slot]);
        break;
      case Op::Type::free_previous:
        release(previous[op.slot]);
        break;
    }
  }
}

}  // namespace

TEST_CASE("random periodic programs never break the invariants", "[engine][random]") {
  const auto seed = GENERATE(1u, 2u, 3u, 4u, 5u, 6u);
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const auto ops = random_iteration(rng, 10 + seed % 5);
  SimDevice d;
  PoolEngine engine(d, sync_options());
  Program p(engine, d);
  std::vector<std::optional<Buffer>> current(32), previous(32);
  for (int it = 0; it < 40; ++it) {
    previous.swap(current);
    for (auto& b : current) b.reset();
    // Every 10 iterations the shape changes for two iterations (an evaluation pass).
    const std::uint64_t grow = it % 10 >= 8 ? 512 : 0;
    run(p, ops, current, previous, grow);
  }
  for (auto& b : current) {
    if (b) p.free(*b, b->kind == MemoryKind::async ? b->last_stream : 0);
  }
  const Summary s = engine.summary();
  // Observation, two re-plans per shape change and the mutation iterations pass through; the
  // rest is served.
  CHECK(s.allocs_from_pool * 4 >= s.allocs_from_pool + s.allocs_passed_through);
  CHECK(p.corrupted == 0);
  CHECK(p.overlaps == 0);
  CHECK(p.failed_frees == 0);
  CHECK(d.violations() == 0);
  engine.shutdown();
  CHECK(d.live_bytes() == 0);
}
