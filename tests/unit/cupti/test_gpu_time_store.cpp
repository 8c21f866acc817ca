// GpuTimeStore: lookups by event seq, overwritten when the table wraps, totals per kind.
#include <catch2/catch.hpp>

#include <vector>

#include "memtool/cupti/gpu_time_store.hpp"

using memtool::cupti::GpuTimeStore;
using memtool::trace::GpuTimeRecord;
using memtool::trace::GpuWorkKind;

namespace {
GpuTimeRecord record(GpuWorkKind kind, std::uint64_t seq, std::uint64_t start, std::uint64_t end) {
  GpuTimeRecord r;
  r.kind = kind;
  r.event_seq = seq;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}
}  // namespace

TEST_CASE("the store answers by event seq and keeps the latest", "[cupti][store]") {
  GpuTimeStore store(4);
  std::vector<GpuTimeRecord> records{record(GpuWorkKind::kernel, 10, 100, 150), record(GpuWorkKind::copy, 11, 200, 230),
                                     record(GpuWorkKind::memset, 12, 300, 301)};
  GpuTimeRecord unjoined = record(GpuWorkKind::kernel, GpuTimeRecord::kNoEvent, 0, 999);
  records.push_back(unjoined);
  store.add(records);
  const auto k = store.find(10);
  REQUIRE(k.has_value());
  CHECK(k->kind == GpuWorkKind::kernel);
  CHECK(k->duration_ns() == 50);
  CHECK_FALSE(store.find(13).has_value());  // not delivered
  const auto totals = store.totals();
  CHECK(totals.records == 3);  // the unjoined one is not the engine's
  CHECK(totals.kernel_ns == 50);
  CHECK(totals.copy_ns == 30);
  CHECK(totals.memset_ns == 1);
  const std::vector<GpuTimeRecord> later{record(GpuWorkKind::kernel, 14, 400, 410)};
  store.add(later);  // 14 and 10 share a slot of 4
  CHECK_FALSE(store.find(10).has_value());
  CHECK(store.find(14)->start_ns == 400);
  CHECK(store.find(11).has_value());
}
