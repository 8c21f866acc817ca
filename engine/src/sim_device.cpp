// SimDevice: bytes, capacity, and vector-clock stream ordering. See sim_device.hpp.
#include "memtool/engine/sim_device.hpp"

#include <algorithm>

namespace memtool::engine {

namespace {
void join(std::map<StreamId, std::uint64_t>& into, const std::map<StreamId, std::uint64_t>& from) {
  for (const auto& [stream, tick] : from) into[stream] = std::max(into[stream], tick);
}
std::uint8_t pattern_byte(std::uint32_t seed, std::uint64_t i) {
  return static_cast<std::uint8_t>((seed * 2654435761u + i * 31u + (i >> 8)) & 0xffu);
}
}  // namespace

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
  if (counted > options_.capacity || live_bytes_ > options_.capacity - counted) return kOutOfMemory;
  const std::uint64_t span = (size + 4095) / 4096 * 4096 + 4096;  // never reuse addresses; a guard gap
  if (next_address_ > ~std::uint64_t{0} - span) return kOutOfMemory;  // out of address space
  const DevicePtr ptr = next_address_;
  next_address_ += span;
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
  if (it == blocks_.begin()) return nullptr;
  --it;
  Block& block = it->second;
  const std::uint64_t offset = ptr - it->first;
  if (offset > block.size || bytes > block.size - offset) return nullptr;
  if (block.data.empty()) block.data.assign(block.size, 0);
  return block.data.data() + offset;
}

bool SimDevice::access(StreamId stream, DevicePtr ptr, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
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

void SimDevice::synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  Clock all = drained_;
  for (const auto& [stream, clock] : streams_) join(all, clock);
  drained_ = all;
  for (auto& [stream, clock] : streams_) join(clock, all);
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
std::uint64_t SimDevice::waits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waits_;
}

}  // namespace memtool::engine
