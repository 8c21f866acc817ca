// RecordJoin (see record_join.hpp): the switch over CUPTI record kinds, the direct and nested
// joins, and the pending list.
#include "record_join.hpp"

#include <cstddef>

namespace memtool::cupti::detail {
namespace {

// The fields read here sit at the same offsets in the records CUPTI 12 writes (Kernel9,
// Memcpy5, Memset3) as in CUPTI 13's (Kernel10, Memcpy6, Memset4): one parser reads both.
#define MEMTOOL_SAME_OFFSET(a, b, field) static_assert(offsetof(a, field) == offsetof(b, field), #a "." #field)
MEMTOOL_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, start);
MEMTOOL_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, end);
MEMTOOL_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, deviceId);
MEMTOOL_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, streamId);
MEMTOOL_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, correlationId);
MEMTOOL_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, name);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, copyKind);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, bytes);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, start);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, end);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, deviceId);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, streamId);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, correlationId);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, bytes);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, start);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, end);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, deviceId);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, streamId);
MEMTOOL_SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, correlationId);
#undef MEMTOOL_SAME_OFFSET

trace::CopyKind copy_kind(std::uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return trace::CopyKind::h2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return trace::CopyKind::d2h;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return trace::CopyKind::d2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return trace::CopyKind::h2h;
    default:
      return trace::CopyKind::unknown;
  }
}

std::uint64_t to_trace_clock(std::uint64_t cupti_ns, std::int64_t offset) {
  return cupti_ns + static_cast<std::uint64_t>(offset);  // modulo 2^64, as the offset is signed
}

}  // namespace

RecordJoin::RecordJoin() : external_(kTableSize), runtime_(kTableSize), threads_(kThreadSlots) {}

void RecordJoin::on_external(const CUpti_ActivityExternalCorrelation& r) {
  if (r.externalKind != kExternalKind) return;  // another tool's
  External& slot = external_[r.correlationId & (kTableSize - 1)];
  slot = External{r.correlationId, true, r.externalId};
}

void RecordJoin::on_api(const CUpti_ActivityAPI& r, bool runtime) {
  if (runtime) {
    runtime_[r.correlationId & (kTableSize - 1)] = RuntimeCall{r.correlationId, true, r.threadId, r.start, r.end};
    return;
  }
  const External& e = external_[r.correlationId & (kTableSize - 1)];
  if (!e.used || e.correlation != r.correlationId) return;  // not one of ours
  ThreadCalls* calls = &threads_[r.threadId % kThreadSlots];
  if (!calls->used || calls->thread != r.threadId) {  // a new thread takes the slot
    calls->used = true;
    calls->thread = r.threadId;
    calls->next = 0;
    for (DriverCall& c : calls->calls) c = DriverCall{};
  }
  calls->calls[calls->next % kDriverCallsPerThread] = DriverCall{r.start, r.end, e.seq};
  ++calls->next;
}

bool RecordJoin::find_seq(std::uint32_t correlation, std::uint64_t& seq, bool& nested) const {
  const External& e = external_[correlation & (kTableSize - 1)];
  if (e.used && e.correlation == correlation) {
    seq = e.seq;
    nested = false;
    return true;
  }
  const RuntimeCall& r = runtime_[correlation & (kTableSize - 1)];
  if (!r.used || r.correlation != correlation) return false;
  const ThreadCalls& calls = threads_[r.thread % kThreadSlots];
  if (!calls.used || calls.thread != r.thread) return false;
  for (const DriverCall& c : calls.calls) {
    if (c.end != 0 && r.start <= c.start && c.end <= r.end) {
      seq = c.seq;
      nested = true;
      return true;
    }
  }
  return false;
}

void RecordJoin::emit(const trace::GpuTimeRecord& record, std::string_view name, JoinBatch& out) {
  out.records.push_back(record);
  out.kernel_names.push_back(name);
  switch (record.kind) {
    case trace::GpuWorkKind::kernel:
      ++counters_.kernels;
      break;
    case trace::GpuWorkKind::copy:
      ++counters_.copies;
      break;
    case trace::GpuWorkKind::memset:
      ++counters_.memsets;
      break;
  }
  if (record.joined()) ++counters_.joined;
}

void RecordJoin::give_up(Pending& p, JoinBatch& out) {
  ++counters_.given_up;
  out.owned_names.push_back(std::move(p.name));
  emit(p.record, out.owned_names.back(), out);
}

void RecordJoin::on_work(trace::GpuTimeRecord record, std::uint32_t correlation, std::string_view name,
                         JoinBatch& out) {
  bool nested = false;
  if (find_seq(correlation, record.event_seq, nested)) {
    if (nested) ++counters_.joined_nested;
    emit(record, name, out);
    return;
  }
  if (pending_.size() == kMaxPending) {  // the oldest waited longest: it goes first
    ++counters_.pending_overflow;
    give_up(pending_.front(), out);
    pending_.pop_front();
  }
  pending_.push_back(Pending{record, correlation, std::string(name), generation_});
}

void RecordJoin::retry_pending(JoinBatch& out) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    bool nested = false;
    if (find_seq(p.correlation, p.record.event_seq, nested)) {
      if (nested) ++counters_.joined_nested;
      out.owned_names.push_back(std::move(p.name));
      emit(p.record, out.owned_names.back(), out);
    } else {
      if (kept != i) pending_[kept] = std::move(p);  // never onto itself: a self-move empties the name
      ++kept;
    }
  }
  pending_.resize(kept);
}

// The fields every kernel, copy and memset record has; false (counted) for one CUPTI could not time.
template <class Record>
bool RecordJoin::timed(const Record& a, trace::GpuWorkKind kind, std::int64_t clock_offset, trace::GpuTimeRecord& r) {
  if (a.start == 0 && a.end == 0) {
    ++counters_.untimed;
    return false;
  }
  r.kind = kind;
  r.start_ns = to_trace_clock(a.start, clock_offset);
  r.end_ns = a.end >= a.start ? to_trace_clock(a.end, clock_offset) : r.start_ns;
  r.device = a.deviceId;
  r.stream = a.streamId;
  return true;
}

void RecordJoin::add_buffer(NextRecord next, std::uint8_t* buffer, std::size_t valid, std::int64_t clock_offset,
                            JoinBatch& out) {
  CUpti_Activity* record = nullptr;
  while (next(buffer, valid, &record) == CUPTI_SUCCESS && record != nullptr) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        on_external(*reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record));
        break;
      case CUPTI_ACTIVITY_KIND_DRIVER:
        on_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), false);
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
        on_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), true);
        break;
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto& k = *reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        trace::GpuTimeRecord r;
        if (!timed(k, trace::GpuWorkKind::kernel, clock_offset, r)) break;
        on_work(r, k.correlationId, k.name != nullptr ? std::string_view(k.name) : std::string_view(), out);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        trace::GpuTimeRecord r;
        if (!timed(m, trace::GpuWorkKind::copy, clock_offset, r)) break;
        r.bytes = m.bytes;
        r.copy_kind = copy_kind(m.copyKind);
        on_work(r, m.correlationId, {}, out);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        trace::GpuTimeRecord r;
        if (!timed(m, trace::GpuWorkKind::memset, clock_offset, r)) break;
        r.bytes = m.bytes;
        on_work(r, m.correlationId, {}, out);
        break;
      }
      default:
        break;  // kinds we did not enable, or another tool's
    }
  }
  if (!pending_.empty()) retry_pending(out);
}

void RecordJoin::end_of_flush(JoinBatch& out, bool everything) {
  if (!pending_.empty()) retry_pending(out);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    if (everything || p.generation < generation_) {
      give_up(p, out);
    } else {
      if (kept != i) pending_[kept] = std::move(p);
      ++kept;
    }
  }
  pending_.resize(kept);
  ++generation_;
}

}  // namespace memtool::cupti::detail
