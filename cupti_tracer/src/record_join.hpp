// RecordJoin: CUPTI activity records → trace::GpuTimeRecords named by memtool's event seqs.
//
// The hooks push each event's seq as an external correlation id around the real driver call,
// so CUPTI writes an EXTERNAL_CORRELATION record {externalId = seq, correlationId = C} before
// the driver-API record of that call (C). A kernel, copy or memset record carrying C is then
// the GPU side of event seq — the direct join. A kernel launched through the CUDA runtime may
// carry the correlation id of the runtime call (cudaLaunchKernel) instead of the driver call
// nested in it; the runtime-API record (thread, interval) then leads to the driver-API record
// that ran inside it on the same thread, and that one to its seq — the nested join.
//
// Records come in buffers, in any order across buffers: an activity whose correlation has not
// arrived yet waits (pending) until the end of the next flush — by then every API-side record
// issued before it has been delivered — and is then given up as work no hook recorded. All
// tables are fixed-size and direct-mapped by correlation id; pending records are capped.
// Not thread-safe: the tracer serialises buffers.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/trace/event.hpp"

namespace memtool::cupti::detail {

// The external correlation kind the hooks push (kineto uses CUSTOM0 and CUSTOM1).
inline constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

struct JoinCounters {
  std::uint64_t kernels = 0;
  std::uint64_t copies = 0;
  std::uint64_t memsets = 0;
  std::uint64_t joined = 0;
  std::uint64_t joined_nested = 0;  // of which through the runtime call
  std::uint64_t untimed = 0;        // no timestamps (0, 0): left out
  std::uint64_t given_up = 0;       // waited a whole flush, delivered without an event
  std::uint64_t pending_overflow = 0;
};

// Records ready for the sink: kernel_names[i] belongs to records[i] ("" for copies and memsets).
struct JoinBatch {
  std::vector<trace::GpuTimeRecord> records;
  std::vector<std::string_view> kernel_names;
  std::deque<std::string> owned_names;  // names of records that waited: their buffers are gone
  void clear() {
    records.clear();
    kernel_names.clear();
    owned_names.clear();
  }
};

class RecordJoin {
 public:
  using NextRecord = CUptiResult (*)(std::uint8_t*, std::size_t, CUpti_Activity**);

  RecordJoin();

  // One completed buffer. `clock_offset` turns CUPTI's timestamps into the trace's clock.
  void add_buffer(NextRecord next, std::uint8_t* buffer, std::size_t valid, std::int64_t clock_offset, JoinBatch& out);
  // After a flush: what waited since before the previous flush is given up into `out` (all of
  // it when `everything`: the final flush).
  void end_of_flush(JoinBatch& out, bool everything);

  [[nodiscard]] const JoinCounters& counters() const { return counters_; }
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }

 private:
  static constexpr std::size_t kTableSize = std::size_t{1} << 16;  // correlation ids in flight
  static constexpr std::size_t kThreadSlots = 256;
  static constexpr std::size_t kDriverCallsPerThread = 64;
  static constexpr std::size_t kMaxPending = std::size_t{1} << 16;

  struct External {  // correlation id → seq
    std::uint32_t correlation = 0;
    bool used = false;
    std::uint64_t seq = 0;
  };
  struct RuntimeCall {  // a runtime-API record
    std::uint32_t correlation = 0;
    bool used = false;
    std::uint32_t thread = 0;
    std::uint64_t start = 0;
    std::uint64_t end = 0;
  };
  struct DriverCall {  // a driver-API record whose correlation has a seq
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::uint64_t seq = 0;
  };
  struct ThreadCalls {
    std::uint32_t thread = 0;
    bool used = false;
    std::size_t next = 0;
    DriverCall calls[kDriverCallsPerThread];
  };
  struct Pending {
    trace::GpuTimeRecord record;  // times already converted
    std::uint32_t correlation = 0;
    std::string name;
    std::uint64_t generation = 0;  // flushes completed when it started waiting
  };

  bool find_seq(std::uint32_t correlation, std::uint64_t& seq, bool& nested) const;
  void on_external(const CUpti_ActivityExternalCorrelation& r);
  void on_api(const CUpti_ActivityAPI& r, bool runtime);
  void on_work(trace::GpuTimeRecord record, std::uint32_t correlation, std::string_view name, JoinBatch& out);
  template <class Record>
  bool timed(const Record& activity, trace::GpuWorkKind kind, std::int64_t clock_offset, trace::GpuTimeRecord& out);
  void emit(const trace::GpuTimeRecord& record, std::string_view name, JoinBatch& out);
  void give_up(Pending& p, JoinBatch& out);
  void retry_pending(JoinBatch& out);

  std::vector<External> external_;
  std::vector<RuntimeCall> runtime_;
  std::vector<ThreadCalls> threads_;
  std::deque<Pending> pending_;
  std::uint64_t generation_ = 0;
  JoinCounters counters_;
};

}  // namespace memtool::cupti::detail
