// Pool mode and exports (issue 33): a pooled buffer is a piece of a pool arena, which the driver's
// legacy IPC handle cannot name on its own (interpose/README.md, "Exports"). What the engine
// promises for it: pin_for_export answers in_place (exported where it is, never moved, not
// reused while it lives), and the allocation that made it is the driver's own from the next
// iteration on, so an export of the same buffer in a later step gets the driver's own handle.
#include <catch2/catch.hpp>

#include <vector>

#include "program.hpp"

using namespace memtool::engine;
using namespace memtool::engine::test;

namespace {

// One step: an input, two activations (the second exported, as NCCL registers a buffer), a
// scratch; all freed at its end. Returns the exported activation's pointer.
DevicePtr step(Program& p, PoolEngine& engine, ExportPin* pin) {
  auto x = *p.alloc(16 * kUnit, 7);
  auto h = *p.alloc(32 * kUnit, 7);
  auto g = *p.alloc(48 * kUnit, 7);
  *pin = engine.engine().runtime().pin_for_export(g.ptr);
  p.use(x, 7);
  p.use(h, 7);
  auto scratch = *p.alloc(3 * kUnit + 100, 7);
  p.free(scratch);
  p.free(h);
  p.free(x);
  const DevicePtr exported = g.ptr;
  p.free(g);
  return exported;
}

}  // namespace

TEST_CASE("pool: an exported pooled buffer is pinned in place, and its allocation is the driver's own from then on",
          "[engine][pool][export]") {
  SimDevice d;
  PoolEngine engine(d, sync_options(0.05));
  Program p(engine, d);
  std::vector<Buffer> weights{*p.alloc(64 * kUnit, 7)};
  ExportPin pin = ExportPin::not_served;
  int exported_pooled = -1;
  std::vector<int> pins;  // ExportPin values, printable
  for (int it = 0; it < 16; ++it) {
    const std::uint64_t before = engine.summary().allocs_from_pool;
    (void)step(p, engine, &pin);
    pins.push_back(static_cast<int>(pin));
    if (exported_pooled < 0 && engine.summary().allocs_from_pool > before && pin == ExportPin::in_place) {
      exported_pooled = it;
    }
  }
  INFO("pins by step: " << Catch::Detail::stringify(pins));
  REQUIRE(exported_pooled >= 0);  // the pool served the step, the exported buffer among it
  // Every later step: that allocation comes from the driver (not served by the pool).
  for (std::size_t it = static_cast<std::size_t>(exported_pooled) + 1; it < pins.size(); ++it) {
    CHECK(pins[it] == static_cast<int>(ExportPin::not_served));
  }
  CHECK(engine.summary().allocs_from_pool > 0);  // the rest of the step is still pooled
  CHECK(p.corrupted == 0);
  CHECK(p.overlaps == 0);
  p.free(weights[0]);
  engine.shutdown();
}
