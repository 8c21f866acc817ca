// GpuTimeStore (see gpu_time_store.hpp): a direct-mapped table of the latest joined records.
#include "memtool/cupti/gpu_time_store.hpp"

#include <bit>

namespace memtool::cupti {

GpuTimeStore::GpuTimeStore(std::size_t capacity)
    : slots_(std::bit_ceil(capacity == 0 ? std::size_t{1} : capacity)), mask_(slots_.size() - 1) {}

void GpuTimeStore::add(std::span<const trace::GpuTimeRecord> records) {
  std::lock_guard lock(mutex_);
  for (const trace::GpuTimeRecord& r : records) {
    if (!r.joined()) continue;
    slots_[r.event_seq & mask_] = Slot{r.event_seq + 1, GpuSpan{r.kind, r.start_ns, r.end_ns}};
    ++totals_.records;
    const std::uint64_t d = r.duration_ns();
    switch (r.kind) {
      case trace::GpuWorkKind::kernel:
        totals_.kernel_ns += d;
        break;
      case trace::GpuWorkKind::copy:
        totals_.copy_ns += d;
        break;
      case trace::GpuWorkKind::memset:
        totals_.memset_ns += d;
        break;
    }
  }
}

std::optional<GpuSpan> GpuTimeStore::find(std::uint64_t event_seq) const {
  std::lock_guard lock(mutex_);
  const Slot& slot = slots_[event_seq & mask_];
  if (slot.seq_plus_one != event_seq + 1 || slot.seq_plus_one == 0) return std::nullopt;
  return slot.span;
}

GpuTimeTotals GpuTimeStore::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

}  // namespace memtool::cupti
