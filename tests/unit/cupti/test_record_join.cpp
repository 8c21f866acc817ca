// RecordJoin on buffers built by hand in CUPTI's own record layouts: the direct join, the
// nested join through the runtime call, records that arrive before their correlation, records
// that never get one, other tools' correlation kinds, untimed records, the clock offset.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "record_join.hpp"

namespace {

using memtool::cupti::detail::JoinBatch;
using memtool::cupti::detail::kExternalKind;
using memtool::cupti::detail::RecordJoin;
using memtool::trace::CopyKind;
using memtool::trace::GpuWorkKind;

std::size_t size_of(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    default:
      return sizeof(CUpti_ActivityAPI);
  }
}

// cuptiActivityGetNextRecord for these buffers: records back to back.
CUptiResult next_record(std::uint8_t* buffer, std::size_t valid, CUpti_Activity** record) {
  std::size_t at = 0;
  if (*record != nullptr)
    at = static_cast<std::size_t>(reinterpret_cast<std::uint8_t*>(*record) - buffer) + size_of((*record)->kind);
  if (at >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + at);
  return CUPTI_SUCCESS;
}

class Buffer {
 public:
  template <class Record>
  Buffer& add(const Record& r) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&r);
    bytes_.insert(bytes_.end(), p, p + sizeof r);
    return *this;
  }
  Buffer& external(std::uint32_t correlation, std::uint64_t seq, CUpti_ExternalCorrelationKind kind = kExternalKind) {
    CUpti_ActivityExternalCorrelation r{};
    r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    r.externalKind = kind;
    r.externalId = seq;
    r.correlationId = correlation;
    return add(r);
  }
  Buffer& api(CUpti_ActivityKind kind, std::uint32_t correlation, std::uint32_t thread, std::uint64_t start,
              std::uint64_t end) {
    CUpti_ActivityAPI r{};
    r.kind = kind;
    r.correlationId = correlation;
    r.threadId = thread;
    r.start = start;
    r.end = end;
    return add(r);
  }
  Buffer& kernel(std::uint32_t correlation, std::uint64_t start, std::uint64_t end, const char* name,
                 std::uint32_t stream = 7) {
    CUpti_ActivityKernel10 r{};
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.correlationId = correlation;
    r.start = start;
    r.end = end;
    r.name = name;
    r.streamId = stream;
    r.deviceId = 1;
    return add(r);
  }
  Buffer& copy(std::uint32_t correlation, std::uint64_t start, std::uint64_t end, std::uint8_t kind,
               std::uint64_t bytes) {
    CUpti_ActivityMemcpy6 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.correlationId = correlation;
    r.start = start;
    r.end = end;
    r.copyKind = kind;
    r.bytes = bytes;
    return add(r);
  }
  Buffer& memset(std::uint32_t correlation, std::uint64_t start, std::uint64_t end, std::uint64_t bytes) {
    CUpti_ActivityMemset4 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.correlationId = correlation;
    r.start = start;
    r.end = end;
    r.bytes = bytes;
    return add(r);
  }
  void into(RecordJoin& join, JoinBatch& out, std::int64_t offset = 0) {
    join.add_buffer(&next_record, bytes_.data(), bytes_.size(), offset, out);
  }

 private:
  std::vector<std::uint8_t> bytes_;
};

}  // namespace

TEST_CASE("a kernel, copy and memset join the events whose seqs were pushed", "[cupti][join]") {
  RecordJoin join;
  JoinBatch out;
  Buffer()
      .external(5, 100)
      .api(CUPTI_ACTIVITY_KIND_DRIVER, 5, 1, 10, 20)
      .external(6, 101)
      .external(7, 102)
      .kernel(5, 1000, 1500, "gemm")
      .copy(6, 2000, 2100, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096)
      .memset(7, 3000, 3010, 64)
      .into(join, out, -500);
  REQUIRE(out.records.size() == 3);
  CHECK(out.records[0].kind == GpuWorkKind::kernel);
  CHECK(out.records[0].event_seq == 100);
  CHECK(out.records[0].start_ns == 500);  // CUPTI's clock + offset
  CHECK(out.records[0].end_ns == 1000);
  CHECK(out.records[0].stream == 7);
  CHECK(out.records[0].device == 1);
  CHECK(out.kernel_names[0] == "gemm");
  CHECK(out.records[1].kind == GpuWorkKind::copy);
  CHECK(out.records[1].event_seq == 101);
  CHECK(out.records[1].copy_kind == CopyKind::h2d);
  CHECK(out.records[1].bytes == 4096);
  CHECK(out.records[2].kind == GpuWorkKind::memset);
  CHECK(out.records[2].event_seq == 102);
  CHECK(out.records[2].duration_ns() == 10);
  CHECK(join.counters().joined == 3);
  CHECK(join.pending() == 0);
}

TEST_CASE("an activity that arrives before its correlation waits for it", "[cupti][join]") {
  RecordJoin join;
  JoinBatch out;
  Buffer().kernel(9, 100, 200, "late").into(join, out);
  CHECK(out.records.empty());
  CHECK(join.pending() == 1);
  Buffer().external(9, 42).into(join, out);
  REQUIRE(out.records.size() == 1);
  CHECK(out.records[0].event_seq == 42);
  CHECK(out.kernel_names[0] == "late");  // its buffer is gone: the name was kept
  CHECK(join.pending() == 0);
}

TEST_CASE("an activity no correlation names is given up after a whole flush", "[cupti][join]") {
  RecordJoin join;
  JoinBatch out;
  Buffer().kernel(11, 100, 200, "bypassed").copy(12, 300, 400, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 8).into(join, out);
  join.end_of_flush(out, false);  // the flush it arrived in: it may still come
  CHECK(out.records.empty());
  CHECK(join.pending() == 2);
  join.end_of_flush(out, false);  // a whole flush later: every API record before it is in
  REQUIRE(out.records.size() == 2);
  CHECK_FALSE(out.records[0].joined());
  CHECK(out.kernel_names[0] == "bypassed");
  CHECK(out.records[1].copy_kind == CopyKind::d2h);
  CHECK(join.counters().given_up == 2);
  CHECK(join.counters().joined == 0);
}

TEST_CASE("the final flush gives up everything that waits", "[cupti][join]") {
  RecordJoin join;
  JoinBatch out;
  Buffer().memset(3, 10, 20, 4).into(join, out);
  join.end_of_flush(out, true);
  REQUIRE(out.records.size() == 1);
  CHECK_FALSE(out.records[0].joined());
  CHECK(join.pending() == 0);
}

TEST_CASE("a kernel carrying its runtime call's correlation joins through the driver call inside it", "[cupti][join]") {
  RecordJoin join;
  JoinBatch out;
  // cudaLaunchKernel (correlation 20, thread 77, 1000..1100) called cuLaunchKernel (21, 1010..1050),
  // around which the hook pushed seq 500; another thread's driver call overlaps in time.
  Buffer()
      .external(21, 500)
      .api(CUPTI_ACTIVITY_KIND_DRIVER, 21, 77, 1010, 1050)
      .external(31, 900)
      .api(CUPTI_ACTIVITY_KIND_DRIVER, 31, 78, 1020, 1040)
      .api(CUPTI_ACTIVITY_KIND_RUNTIME, 20, 77, 1000, 1100)
      .kernel(20, 5000, 6000, "conv")
      .into(join, out);
  REQUIRE(out.records.size() == 1);
  CHECK(out.records[0].event_seq == 500);
  CHECK(join.counters().joined_nested == 1);
}

TEST_CASE("other tools' correlation kinds and untimed records are left out", "[cupti][join]") {
  RecordJoin join;
  JoinBatch out;
  Buffer()
      .external(4, 77, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)  // kineto's
      .kernel(4, 10, 20, "theirs")
      .external(5, 78)
      .kernel(5, 0, 0, "no timestamps")
      .into(join, out);
  CHECK(out.records.empty());
  CHECK(join.counters().untimed == 1);
  CHECK(join.pending() == 1);  // "theirs" has no id of ours
}

TEST_CASE("a record whose end precedes its start lasts zero", "[cupti][join]") {
  RecordJoin join;
  JoinBatch out;
  Buffer().external(1, 1).kernel(1, 500, 400, "odd").into(join, out);
  REQUIRE(out.records.size() == 1);
  CHECK(out.records[0].duration_ns() == 0);
}
