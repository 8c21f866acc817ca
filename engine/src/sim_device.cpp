// SimDevice: bytes, capacity, and vector-clock stream ordering. See sim_device.hpp.
#include "memtool/engine/sim_device.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace memtool::engine {

namespace {
void join(std::map<StreamId, std::uint64_t>& into, const std::map<StreamId, std::uint64_t>& from) {
  for (const auto& [stream, tick] : from) into[stream] = std::max(into[stream], tick);
}
std::uint8_t pattern_byte(std::uint32_t seed, std::uint64_t i) {
  return static_cast<std::uint8_t>((seed * 2654435761u + i * 31u + (i >> 8)) & 0xffu);
}
}  // namespace

namespace {
constexpr std::uint64_t kPageBytes = 4096;
// The addresses a block of `size` bytes takes: whole pages and a guard page after them.
std::uint64_t block_span(std::uint64_t size) { return (size + kPageBytes - 1) / kPageBytes * kPageBytes + kPageBytes; }
constexpr std::uint64_t kMaxAddress = ~std::uint64_t{0};
}  // namespace

bool SimDevice::addresses_taken(DevicePtr begin, DevicePtr end) const {
  const auto block = blocks_.lower_bound(begin);
  if (block != blocks_.end() && block->first < end) return true;
  if (block != blocks_.begin() && std::prev(block)->first + block_span(std::prev(block)->second.size) > begin) {
    return true;
  }
  const auto reserved = reservations_.lower_bound(begin);
  if (reserved != reservations_.end() && reserved->first < end) return true;
  return reserved != reservations_.begin() && std::prev(reserved)->first + std::prev(reserved)->second > begin;
}

bool SimDevice::take_addresses(std::uint64_t span, std::uint64_t align, DevicePtr* out) {
  // First after the last range handed out: addresses are not reused while there are fresh ones,
  // so a stale pointer hits nobody's bytes.
  // (After a wrap below, ranges above it may be live again: it is checked.)
  const std::uint64_t aligned = (next_address_ + align - 1) / align * align;
  if (aligned >= next_address_ && aligned <= kMaxAddress - span && !addresses_taken(aligned, aligned + span)) {
    *out = aligned;
    next_address_ = aligned + span;
    return true;
  }
  // The address space is used up (a few 2^60-byte buffers do it): reuse the first gap between
  // live blocks and reservations, as the driver reuses freed addresses.
  std::vector<std::pair<DevicePtr, DevicePtr>> taken;
  taken.reserve(blocks_.size() + reservations_.size());
  for (const auto& [begin, block] : blocks_) taken.emplace_back(begin, begin + block_span(block.size));
  for (const auto& [begin, bytes] : reservations_) taken.emplace_back(begin, begin + bytes + kPageBytes);
  std::sort(taken.begin(), taken.end());
  DevicePtr candidate = kFirstAddress;
  for (const auto& [begin, end] : taken) {
    if (candidate <= begin && span <= begin - candidate) break;
    if (end > candidate) candidate = (end + align - 1) / align * align;
    if (candidate < end) return false;  // the alignment wrapped past the top
  }
  if (candidate > kMaxAddress - span) return false;
  *out = candidate;
  next_address_ = candidate + span;
  return true;
}

SimDevice::Clock& SimDevice::clock_of(StreamId stream) {
  auto it = streams_.find(stream);
  if (it == streams_.end()) it = streams_.emplace(stream, drained_).first;
  return it->second;
}

std::uint64_t SimDevice::driver_footprint(std::uint64_t size) {
  constexpr std::uint64_t kPage = std::uint64_t{2} << 20;
  constexpr std::uint64_t kSmall = 512;
  if (size > (std::uint64_t{1} << 20)) return (size + kPage - 1) / kPage * kPage;
  return std::max(kSmall, (size + kSmall - 1) / kSmall * kSmall);
}

Status SimDevice::allocate(std::uint64_t size, MemoryKind, StreamId, DevicePtr* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (size == 0) return kInvalidValue;
  if (size > options_.max_single_allocation || size > (std::uint64_t{1} << 62)) return kOutOfMemory;
  const std::uint64_t counted = options_.driver_granularity ? driver_footprint(size) : size;
  if (!make_room(counted, nullptr)) return kOutOfMemory;
  DevicePtr ptr = 0;
  if (!take_addresses(block_span(size), kPageBytes, &ptr)) return kOutOfMemory;  // out of address space
  Block& block = blocks_[ptr];
  block.size = size;
  block.counted = counted;
  live_bytes_ += counted;
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  ++allocate_calls_;
  *out = ptr;
  return kSuccess;
}

Status SimDevice::free(DevicePtr ptr, MemoryKind, StreamId) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return kInvalidValue;
  live_bytes_ -= it->second.counted;
  forget_accesses(ptr, ptr + it->second.size);
  if (it->second.managed) {
    leaving_chunks_ -= it->second.managed->leaving.size();
    managed_.erase(std::find(managed_.begin(), managed_.end(), ptr));
  }
  blocks_.erase(it);
  ++free_calls_;
  return kSuccess;
}

void SimDevice::forget_accesses(DevicePtr begin, DevicePtr end) {
  auto it = shadow_.lower_bound(begin);
  while (it != shadow_.end() && it->first < end) it = shadow_.erase(it);
}

Status SimDevice::create_event(EventId* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  *out = next_event_++;
  events_[*out] = Clock{};
  return kSuccess;
}

Status SimDevice::record_event(EventId event, StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) return kInvalidValue;
  Clock& clock = clock_of(stream);
  ++clock[stream];
  it->second = clock;
  return kSuccess;
}

Status SimDevice::stream_wait_event(StreamId stream, EventId event) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) return kInvalidValue;
  join(clock_of(stream), it->second);
  ++waits_;
  return kSuccess;
}

bool SimDevice::event_completed(EventId event) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) return true;
  for (const auto& [stream, tick] : it->second) {
    auto done = drained_.find(stream);
    if (done == drained_.end() || done->second < tick) return false;
  }
  return true;
}

void SimDevice::destroy_event(EventId event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.erase(event);
}

std::uint8_t* SimDevice::bytes_at(DevicePtr ptr, std::uint64_t bytes) {
  auto it = blocks_.upper_bound(ptr);
  if (it != blocks_.begin()) {
    --it;
    Block& block = it->second;
    const std::uint64_t offset = ptr - it->first;
    if (offset <= block.size && bytes <= block.size - offset) {
      if (block.data.empty()) block.data.assign(block.size, 0);
      return block.data.data() + offset;
    }
  }
  auto m = mappings_.upper_bound(ptr);
  if (m == mappings_.begin()) return nullptr;
  --m;
  const std::uint64_t offset = ptr - m->first;
  if (offset > m->second.size || bytes > m->second.size - offset) return nullptr;
  Physical& ph = physical_.at(m->second.handle);
  if (ph.data.empty()) ph.data.assign(ph.size, 0);
  return ph.data.data() + offset;
}

bool SimDevice::access(StreamId stream, DevicePtr ptr, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!check_access(stream, ptr, bytes)) return false;
  touch_managed(ptr, bytes, true);
  return true;
}

bool SimDevice::check_access(StreamId stream, DevicePtr ptr, std::uint64_t bytes) {
  if (bytes_at(ptr, bytes) == nullptr) return false;
  Clock& clock = clock_of(stream);
  const std::uint64_t tick = ++clock[stream];
  const DevicePtr end = ptr + bytes;
  auto it = shadow_.lower_bound(ptr);
  if (it != shadow_.begin() && std::prev(it)->second.end > ptr) --it;
  while (it != shadow_.end() && it->first < end) {
    const DevicePtr begin = it->first;
    const Shadow last = it->second;
    if (last.stream != stream) {
      auto seen = clock.find(last.stream);
      if (seen == clock.end() || seen->second < last.tick) ++violations_;
    }
    it = shadow_.erase(it);
    if (begin < ptr) shadow_.emplace(begin, Shadow{ptr, last.stream, last.tick});
    if (last.end > end) it = shadow_.emplace(end, Shadow{last.end, last.stream, last.tick}).first;
  }
  shadow_.emplace(ptr, Shadow{end, stream, tick});
  return true;
}

bool SimDevice::fill(DevicePtr ptr, std::uint64_t bytes, std::uint32_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint8_t* data = bytes_at(ptr, bytes);
  if (data == nullptr) return false;
  for (std::uint64_t i = 0; i < bytes; ++i) data[i] = pattern_byte(seed, i);
  return true;
}

bool SimDevice::verify(DevicePtr ptr, std::uint64_t bytes, std::uint32_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint8_t* data = bytes_at(ptr, bytes);
  if (data == nullptr) return false;
  for (std::uint64_t i = 0; i < bytes; ++i) {
    if (data[i] != pattern_byte(seed, i)) return false;
  }
  return true;
}

Status SimDevice::synchronize_event(EventId event) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) return kInvalidValue;
  // The host has seen the work done: whatever it queues next, on any stream, comes after.
  join(drained_, it->second);
  for (auto& [stream, clock] : streams_) join(clock, it->second);
  release_drained();
  return kSuccess;
}

Status SimDevice::create_stream(StreamId* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  *out = next_stream_++;
  return kSuccess;
}

namespace {
constexpr std::uint64_t kGranule = std::uint64_t{2} << 20;
}  // namespace

Status SimDevice::vmm_granularity(std::uint64_t* bytes) {
  *bytes = kGranule;
  return kSuccess;
}

Status SimDevice::host_vmm_granularity(std::uint64_t* bytes) {
  *bytes = kGranule;
  return kSuccess;
}

Status SimDevice::reserve(std::uint64_t bytes, DevicePtr* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes == 0 || bytes % kGranule != 0 || bytes > (std::uint64_t{1} << 50)) return kInvalidValue;
  DevicePtr ptr = 0;
  if (!take_addresses(bytes + kGranule, kGranule, &ptr)) return kOutOfMemory;  // with a guard gap
  reservations_.emplace(ptr, bytes);
  *out = ptr;
  return kSuccess;
}

Status SimDevice::unreserve(DevicePtr ptr, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = reservations_.find(ptr);
  if (it == reservations_.end() || it->second != bytes) return kInvalidValue;
  const auto mapped = mappings_.lower_bound(ptr);
  if (mapped != mappings_.end() && mapped->first < ptr + bytes) return kInvalidValue;  // unmap first
  reservations_.erase(it);
  forget_accesses(ptr, ptr + bytes);
  return kSuccess;
}

Status SimDevice::create_physical_on(std::uint64_t bytes, bool on_host, PhysicalHandle* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes == 0 || bytes % kGranule != 0) return kInvalidValue;
  if (!on_host) {
    if (!make_room(bytes, nullptr)) return kOutOfMemory;
    live_bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  }
  Physical& ph = physical_[next_handle_];
  ph.size = bytes;
  ph.on_host = on_host;
  *out = next_handle_++;
  return kSuccess;
}

Status SimDevice::create_physical(std::uint64_t bytes, PhysicalHandle* out) {
  return create_physical_on(bytes, false, out);
}

Status SimDevice::create_host_physical(std::uint64_t bytes, PhysicalHandle* out) {
  return create_physical_on(bytes, true, out);
}

void SimDevice::drop_physical_if_unused(PhysicalHandle handle) {
  const auto it = physical_.find(handle);
  if (it == physical_.end() || !it->second.released || it->second.mappings != 0) return;
  if (!it->second.on_host) live_bytes_ -= it->second.size;
  physical_.erase(it);
}

Status SimDevice::release_physical(PhysicalHandle handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.released) return kInvalidValue;
  it->second.released = true;  // gone once unmapped, as the driver's
  drop_physical_if_unused(handle);
  return kSuccess;
}

Status SimDevice::map(DevicePtr ptr, std::uint64_t bytes, PhysicalHandle handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto ph = physical_.find(handle);
  if (ph == physical_.end() || ph->second.released || bytes != ph->second.size) return kInvalidValue;
  auto r = reservations_.upper_bound(ptr);
  if (r == reservations_.begin()) return kInvalidValue;
  --r;
  if (ptr - r->first >= r->second || bytes > r->second - (ptr - r->first)) return kInvalidValue;
  const auto next = mappings_.lower_bound(ptr);
  if (next != mappings_.end() && next->first < ptr + bytes) return kInvalidValue;
  if (next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.size > ptr) return kInvalidValue;
  mappings_.emplace(ptr, Mapping{bytes, handle});
  ++ph->second.mappings;
  return kSuccess;
}

Status SimDevice::unmap(DevicePtr ptr, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = mappings_.find(ptr);
  if (it == mappings_.end() || it->second.size != bytes) return kInvalidValue;
  // The driver's unmap does not wait for the device: work still queued on the range (not known
  // done to the host) would touch memory that is gone.
  for (auto s = shadow_.lower_bound(ptr); s != shadow_.end() && s->first < ptr + bytes; ++s) {
    const auto done = drained_.find(s->second.stream);
    if (done == drained_.end() || done->second < s->second.tick) ++violations_;
  }
  const PhysicalHandle handle = it->second.handle;
  mappings_.erase(it);
  --physical_.at(handle).mappings;
  drop_physical_if_unused(handle);
  return kSuccess;
}

// --- managed memory ---------------------------------------------------------------------------
// As tests/fakecuda models it (its README, "Managed memory"): residency per chunk; a first touch
// populates where it happens (cuMemPrefetchAsync: "If no physical memory has been allocated for
// this region, then this memory region will be populated and mapped on the destination device");
// room on the device comes from evicting other managed allocations' chunks to the host ("the
// Unified Memory driver may evict pages from other cuMemAllocManaged allocations", and cuMemAlloc
// memory is never evicted); a device fault on data already at its preferred location that the
// device can map (the host) maps it instead of migrating it (CU_MEM_ADVISE_SET_PREFERRED_LOCATION).

namespace {
constexpr std::uint64_t kManagedChunk = std::uint64_t{64} << 10;  // fakecuda's residency unit
// Larger managed requests are out of memory (the driver refuses more than the host and device hold).
constexpr std::uint64_t kMaxManagedBytes = std::uint64_t{1} << 40;
std::uint64_t chunk_bytes(std::uint64_t size, std::uint64_t c) {
  return std::min(kManagedChunk, size - c * kManagedChunk);
}
}  // namespace

bool SimDevice::make_room(std::uint64_t wanted, const Block* keep) {
  const std::uint64_t capacity = options_.capacity;
  if (wanted > capacity) return false;
  for (std::size_t i = 0; i < managed_.size() && live_bytes_ > capacity - wanted; ++i) {
    Block& block = blocks_.at(managed_[i]);
    if (&block == keep) continue;
    std::vector<Where>& where = block.managed->where;
    for (std::uint64_t c = 0; c < where.size() && live_bytes_ > capacity - wanted; ++c) {
      if (where[c] == Where::device) chunk_to_host(block, c, nullptr);
    }
  }
  return live_bytes_ <= capacity - wanted;
}

bool SimDevice::chunk_to_device(Block& block, std::uint64_t c) {
  Managed& m = *block.managed;
  const Where was = m.where[c];
  if (was == Where::device) return true;
  const std::uint64_t bytes = chunk_bytes(block.size, c);
  if (const auto leaving = m.leaving.find(c); leaving != m.leaving.end()) {
    // Back before its device bytes were given up: still counted, not counted again.
    m.leaving.erase(leaving);
    --leaving_chunks_;
  } else {
    if (!make_room(bytes, &block)) return false;
    block.counted += bytes;
    live_bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  }
  if (was == Where::host) migrated_to_device_ += bytes;
  m.where[c] = Where::device;
  return true;
}

void SimDevice::chunk_to_host(Block& block, std::uint64_t c, const Leaving* leaving) {
  Managed& m = *block.managed;
  const Where was = m.where[c];
  m.where[c] = Where::host;
  if (was != Where::device) return;  // populated on the host, or there already
  const std::uint64_t bytes = chunk_bytes(block.size, c);
  migrated_to_host_ += bytes;
  if (leaving != nullptr) {
    m.leaving.emplace(c, *leaving);
    ++leaving_chunks_;
    return;
  }
  block.counted -= bytes;
  live_bytes_ -= bytes;
}

void SimDevice::release_drained() {
  if (leaving_chunks_ == 0) return;
  for (const DevicePtr base : managed_) {
    Block& block = blocks_.at(base);
    auto& leaving = block.managed->leaving;
    for (auto it = leaving.begin(); it != leaving.end();) {
      const auto done = drained_.find(it->second.stream);
      if (done == drained_.end() || done->second < it->second.tick) {
        ++it;
        continue;
      }
      const std::uint64_t bytes = chunk_bytes(block.size, it->first);
      block.counted -= bytes;
      live_bytes_ -= bytes;
      --leaving_chunks_;
      it = leaving.erase(it);
    }
  }
}

SimDevice::Block* SimDevice::managed_block(DevicePtr ptr, std::uint64_t bytes, DevicePtr* base) {
  if (managed_.empty()) return nullptr;
  auto it = blocks_.upper_bound(ptr);
  if (it == blocks_.begin()) return nullptr;
  --it;
  Block& block = it->second;
  const std::uint64_t offset = ptr - it->first;
  if (!block.managed || offset >= block.size || bytes > block.size - offset) return nullptr;
  *base = it->first;
  return &block;
}

void SimDevice::touch_managed(DevicePtr ptr, std::uint64_t bytes, bool migrate) {
  DevicePtr base = 0;
  Block* block = managed_block(ptr, bytes, &base);
  if (block == nullptr || bytes == 0) return;
  Managed& m = *block->managed;
  const std::uint64_t first = (ptr - base) / kManagedChunk;
  const std::uint64_t last = (ptr - base + bytes - 1) / kManagedChunk;
  for (std::uint64_t c = first; c <= last; ++c) {
    const Where was = m.where[c];
    if (was == Where::device) continue;
    // A copy populates what was never touched and leaves populated chunks where they are
    // (fakecuda's rule); a kernel maps host-preferred chunks that are on the host.
    const bool stays = was == Where::host && (!migrate || m.preferred[c] == Preferred::host);
    if (stays || !chunk_to_device(*block, c)) {
      m.where[c] = Where::host;  // no room on the device (full of cuMemAlloc memory): mapped there
      const DevicePtr chunk_begin = base + c * kManagedChunk;
      const DevicePtr from = std::max(ptr, chunk_begin);
      const DevicePtr to = std::min(ptr + bytes, chunk_begin + chunk_bytes(block->size, c));
      accessed_on_host_ += to - from;
    }
  }
}

Status SimDevice::allocate_managed(std::uint64_t bytes, DevicePtr* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes == 0) return kInvalidValue;
  if (bytes > kMaxManagedBytes) return kOutOfMemory;
  DevicePtr ptr = 0;
  if (!take_addresses(block_span(bytes), kPageBytes, &ptr)) return kOutOfMemory;
  Block& block = blocks_[ptr];
  block.size = bytes;
  block.managed = std::make_unique<Managed>();
  const std::uint64_t chunks = (bytes + kManagedChunk - 1) / kManagedChunk;
  block.managed->where.assign(chunks, Where::unpopulated);  // nothing on the device until touched
  block.managed->preferred.assign(chunks, Preferred::none);
  managed_.push_back(ptr);
  *out = ptr;
  return kSuccess;
}

Status SimDevice::advise(DevicePtr ptr, std::uint64_t bytes, Residence preferred) {
  std::lock_guard<std::mutex> lock(mutex_);
  DevicePtr base = 0;
  Block* block = bytes == 0 ? nullptr : managed_block(ptr, bytes, &base);
  if (block == nullptr) return kInvalidValue;
  // Advice only: nothing moves now (cuMemAdvise).
  const Preferred to = preferred == Residence::host ? Preferred::host : Preferred::device;
  for (std::uint64_t c = (ptr - base) / kManagedChunk; c <= (ptr - base + bytes - 1) / kManagedChunk; ++c) {
    block->managed->preferred[c] = to;
  }
  return kSuccess;
}

Status SimDevice::prefetch(DevicePtr ptr, std::uint64_t bytes, Residence to, StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  DevicePtr base = 0;
  Block* block = bytes == 0 ? nullptr : managed_block(ptr, bytes, &base);
  if (block == nullptr) return kInvalidValue;
  // In its stream's order, like a copy: it reads and writes the range there.
  (void)check_access(stream, ptr, bytes);
  const Leaving leaving{stream, clock_of(stream)[stream]};
  for (std::uint64_t c = (ptr - base) / kManagedChunk; c <= (ptr - base + bytes - 1) / kManagedChunk; ++c) {
    if (to == Residence::host) {
      chunk_to_host(*block, c, &leaving);
    } else {
      (void)chunk_to_device(*block, c);  // no room: the rest stays where it is (the call still succeeds)
    }
  }
  return kSuccess;
}

Status SimDevice::copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint8_t* to = bytes_at(dst, bytes);
  const std::uint8_t* from = bytes_at(src, bytes);
  if (to == nullptr || from == nullptr) return kInvalidValue;
  std::copy_n(from, bytes, to);
  (void)check_access(stream, src, bytes);
  (void)check_access(stream, dst, bytes);
  touch_managed(src, bytes, false);
  touch_managed(dst, bytes, false);
  return kSuccess;
}

Status SimDevice::copy_to_host(void* dst, DevicePtr src, std::uint64_t bytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint8_t* from = bytes_at(src, bytes);
  if (from == nullptr || dst == nullptr) return kInvalidValue;
  std::copy_n(from, bytes, static_cast<std::uint8_t*>(dst));
  (void)check_access(stream, src, bytes);
  touch_managed(src, bytes, false);
  return kSuccess;
}

void SimDevice::synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  Clock all = drained_;
  for (const auto& [stream, clock] : streams_) join(all, clock);
  drained_ = all;
  for (auto& [stream, clock] : streams_) join(clock, all);
  release_drained();
}

void SimDevice::set_capacity(std::uint64_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  options_.capacity = capacity;
}

std::uint64_t SimDevice::violations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return violations_;
}
std::uint64_t SimDevice::live_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_bytes_;
}
std::uint64_t SimDevice::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_bytes_;
}
std::uint64_t SimDevice::live_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}
std::uint64_t SimDevice::allocate_calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocate_calls_;
}
std::uint64_t SimDevice::free_calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_calls_;
}
std::uint64_t SimDevice::bytes_migrated_to_device() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return migrated_to_device_;
}
std::uint64_t SimDevice::bytes_migrated_to_host() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return migrated_to_host_;
}
std::uint64_t SimDevice::bytes_accessed_on_host() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return accessed_on_host_;
}
std::uint64_t SimDevice::waits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waits_;
}

}  // namespace memtool::engine
