// BlockCache (see block_cache.hpp).
//
// Blocks live in one vector, by index (indices of merged blocks are reused); a segment is a
// chain of blocks linked by prev/next in address order, the first at the address the upstream
// returned. A block is allocated (in allocated_), free (in free_[pool], keyed by stream, size,
// address), pending (freed after use on other streams: waiting on its events, in pending_), or
// lost (its events could not be recorded: it may still be in use, so it is never handed out
// again and its segment never freed).
//
// An Adaptor over the resource its segments come from: the hooks it does not take part in reach
// that upstream unchanged. Thread-safe: one mutex, held across the upstream's allocations and
// frees (the upstream never calls back), not across the hooks forwarded to it.
#include "block_cache.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace memtool::engine::detail {
namespace {

constexpr std::uint32_t kNone = ~std::uint32_t{0};
constexpr int kPools = 2;

enum class BlockState : std::uint8_t { free, allocated, pending, lost };

struct Block {
  DevicePtr ptr = 0;
  std::uint64_t size = 0;
  std::uint64_t requested = 0;  // allocated: the bytes the program asked for
  std::uint64_t id = 0;
  StreamId stream = 0;
  std::uint32_t prev = kNone;  // neighbours in the segment
  std::uint32_t next = kNone;
  int pool = 0;
  BlockState state = BlockState::free;
  bool stream_ordered = false;  // allocated by cuMemAllocAsync on `stream`
  std::vector<StreamId> uses;   // other streams that touched it while allocated
  std::vector<EventId> events;  // pending: recorded on those streams at the free
};

using FreeKey = std::tuple<StreamId, std::uint64_t, DevicePtr, std::uint32_t>;  // stream, size, address, block

class BlockCache final : public Adaptor {
 public:
  BlockCache(Device& device, std::unique_ptr<Resource> upstream, std::unique_ptr<const CachePolicy> policy)
      : Adaptor(std::move(upstream)), device_(device), policy_(std::move(policy)) {
    if (const std::uint64_t bytes = policy_->initial_reserve(); bytes != 0) {
      std::lock_guard lock(mutex_);
      std::uint32_t b = kNone;
      if (new_segment(bytes, 0, 0, b) == kSuccess) free_[0].insert(key(b));  // else: grow on demand
    }
  }

  ~BlockCache() override {
    std::lock_guard lock(mutex_);
    (void)release_cached();
    for (const std::uint32_t b : pending_) {
      for (const EventId e : blocks_[b].events) device_.destroy_event(e);
    }
    // Segments with live blocks stay allocated: the program may still use them.
  }

  std::string_view name() const override { return policy_->name(); }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    if (out == nullptr || request.size == 0) return kInvalidValue;
    std::lock_guard lock(mutex_);
    if (request.memory_pool != 0 || shut_) return pass_through(request, out);
    if (request.kind == MemoryKind::async) current_stream_ = request.stream;
    const StreamId stream = current_stream_;
    process_events();
    const std::uint64_t rounded = policy_->round(request.size);
    const int pool = policy_->pool_of(rounded);
    std::uint32_t b = find_free(pool, stream, rounded);
    if (b != kNone) {
      free_[pool].erase(key(b));
    } else {
      if (!policy_->grows()) return kOutOfMemory;
      const std::uint64_t segment = policy_->segment_size(rounded);
      Status status = new_segment(segment, pool, stream, b);
      if (status == kOutOfMemory && policy_->frees_cache_when_full()) {
        // PyTorch: free enough oversize cached blocks and retry; then every whole cached
        // segment, and retry.
        if (release_oversize(pool, stream, rounded)) status = new_segment(segment, pool, stream, b);
        if (status == kOutOfMemory) {
          (void)release_cached();
          status = new_segment(segment, pool, stream, b);
        }
      }
      if (status == kOutOfMemory && request.kind == MemoryKind::device && policy_->borrows_when_full()) {
        b = find_free_any_stream(pool, rounded);
        if (b != kNone) {
          free_[pool].erase(key(b));
          status = kSuccess;
        }
      }
      if (status != kSuccess) return status;
    }
    split(b, rounded);
    Block& block = blocks_[b];
    block.state = BlockState::allocated;
    block.requested = request.size;
    block.stream_ordered = request.kind == MemoryKind::async;
    block.id = ++next_id_;
    allocated_.emplace(block.ptr, b);
    in_use_ += request.size;
    *out = block.ptr;
    return kSuccess;
  }

  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    std::unique_lock lock(mutex_);
    if (const auto it = passthrough_.find(ptr); it != passthrough_.end()) {
      passthrough_live_ -= it->second;
      passthrough_.erase(it);
      lock.unlock();
      return upstream().deallocate(ptr, kind, stream);
    }
    const auto it = allocated_.find(ptr);
    if (it == allocated_.end()) {
      // Inside our memory but no live block (a double free, an interior pointer): the device
      // must never see it, it would free a whole segment.
      if (inside_segment(ptr)) return kInvalidValue;
      lock.unlock();
      return upstream().deallocate(ptr, kind, stream);
    }
    const std::uint32_t b = it->second;
    allocated_.erase(it);
    Block& block = blocks_[b];
    in_use_ -= block.requested;
    if (kind == MemoryKind::async && stream != block.stream) add_use(block, stream);
    if (block.uses.empty()) {
      free_block(b);
    } else {
      defer(b);
    }
    if (shut_) (void)release_cached();
    return kSuccess;
  }

  bool wants_accesses() const override { return true; }
  void before_item(const WorkItem& item) override {
    {
      std::lock_guard lock(mutex_);
      for (const DevicePtr base : item.touched) note_use(base, item.stream);
    }
    Adaptor::before_item(item);
  }

  MemoryUse memory_use() const override {
    MemoryUse use;
    {
      std::lock_guard lock(mutex_);
      use = MemoryUse{reserved_ + passthrough_live_, in_use_ + passthrough_live_, reserved_, 0};
    }
    use.reserved += upstream_unused_bytes();
    return use;
  }

  std::optional<BufferExtent> extent_of(DevicePtr ptr) const override {
    {
      std::lock_guard lock(mutex_);
      auto it = allocated_.upper_bound(ptr);
      if (it != allocated_.begin()) {
        --it;
        const Block& block = blocks_[it->second];
        if (ptr - block.ptr < block.requested) return BufferExtent{block.ptr, block.requested, block.id};
      }
    }
    return Adaptor::extent_of(ptr);
  }

  // A free block that fits takes nothing new; else a whole segment. Blocks whose other streams'
  // work has not been seen to finish count as taken (more than the truth, never less).
  std::uint64_t growth_of(const AllocationRequest& request) const override {
    std::lock_guard lock(mutex_);
    if (request.memory_pool != 0 || shut_) return Adaptor::growth_of(request);
    const StreamId stream = request.kind == MemoryKind::async ? request.stream : current_stream_;
    const std::uint64_t rounded = policy_->round(request.size);
    if (find_free(policy_->pool_of(rounded), stream, rounded) != kNone) return 0;
    return policy_->grows() ? policy_->segment_size(rounded) : 0;
  }

  std::uint64_t reclaim() override {
    std::uint64_t freed = 0;
    {
      std::lock_guard lock(mutex_);
      freed = release_cached();
    }
    return freed + Adaptor::reclaim();
  }

  void shutdown(bool release_memory) override {
    {
      std::lock_guard lock(mutex_);
      shut_ = true;  // from now on: pass through, and segments go back as they empty
      if (release_memory) (void)release_cached();
    }
    Adaptor::shutdown(release_memory);
  }

 private:
  // Work on `stream` touches the buffer at `base`.
  void note_use(DevicePtr base, StreamId stream) {
    current_stream_ = stream;
    const auto it = allocated_.find(base);
    if (it == allocated_.end()) return;
    Block& block = blocks_[it->second];
    if (stream == block.stream || std::find(block.uses.begin(), block.uses.end(), stream) != block.uses.end()) return;
    // A cuMemAlloc'ed buffer may be used on any stream at once, but its memory may have served
    // a buffer of its pool's stream a moment ago: order this stream after that work. (A
    // stream-ordered allocation is the program's to order, as with the driver.)
    if (!block.stream_ordered) order_after(stream, block.stream);
    block.uses.push_back(stream);
  }

  static FreeKey key_of(const Block& block, std::uint32_t b) { return {block.stream, block.size, block.ptr, b}; }
  FreeKey key(std::uint32_t b) const { return key_of(blocks_[b], b); }

  std::uint32_t new_block() {
    if (!spare_.empty()) {
      const std::uint32_t b = spare_.back();
      spare_.pop_back();
      blocks_[b] = Block{};
      return b;
    }
    blocks_.emplace_back();
    return static_cast<std::uint32_t>(blocks_.size() - 1);
  }

  void recycle(std::uint32_t b) {
    blocks_[b] = Block{};
    spare_.push_back(b);
  }

  Status pass_through(const AllocationRequest& request, DevicePtr* out) {
    const Status status = upstream().allocate(request, out);
    if (status == kSuccess) {
      passthrough_[*out] = request.size;
      passthrough_live_ += request.size;
    }
    return status;
  }

  // One device allocation, as one free block of `pool` on `stream` (not yet in the free set).
  Status new_segment(std::uint64_t bytes, int pool, StreamId stream, std::uint32_t& out) {
    DevicePtr ptr = 0;
    const Status status = upstream().allocate(AllocationRequest{bytes, MemoryKind::device, 0, 0}, &ptr);
    if (status != kSuccess) return status;
    out = new_block();
    Block& block = blocks_[out];
    block.ptr = ptr;
    block.size = bytes;
    block.stream = stream;
    block.pool = pool;
    reserved_ += bytes;
    segments_.emplace(ptr, bytes);
    return kSuccess;
  }

  bool inside_segment(DevicePtr ptr) const {
    auto it = segments_.upper_bound(ptr);
    if (it == segments_.begin()) return false;
    --it;
    return ptr - it->first < it->second;
  }

  std::uint32_t find_free(int pool, StreamId stream, std::uint64_t rounded) const {
    const auto it = free_[pool].lower_bound(FreeKey{stream, rounded, 0, 0});
    if (it == free_[pool].end() || std::get<0>(*it) != stream) return kNone;
    if (!policy_->may_take(rounded, std::get<1>(*it))) return kNone;
    return std::get<3>(*it);
  }

  // The best-fitting free block of `pool` on any stream (borrows_when_full).
  std::uint32_t find_free_any_stream(int pool, std::uint64_t rounded) const {
    std::uint32_t best = kNone;
    for (const FreeKey& k : free_[pool]) {
      const std::uint64_t size = std::get<1>(k);
      if (size < rounded || !policy_->may_take(rounded, size)) continue;
      if (best == kNone || size < blocks_[best].size) best = std::get<3>(k);
    }
    return best;
  }

  // The block keeps `rounded` bytes; the rest becomes a free block after it, if the policy says.
  void split(std::uint32_t b, std::uint64_t rounded) {
    const std::uint64_t rest = blocks_[b].size - rounded;
    if (rest == 0 || !policy_->should_split(blocks_[b].pool, rounded, rest)) return;
    const std::uint32_t r = new_block();  // may move blocks_: no references across it
    Block& head = blocks_[b];
    Block& tail = blocks_[r];
    tail.ptr = head.ptr + rounded;
    tail.size = rest;
    tail.stream = head.stream;
    tail.pool = head.pool;
    tail.prev = b;
    tail.next = head.next;
    if (head.next != kNone) blocks_[head.next].prev = r;
    head.next = r;
    head.size = rounded;
    free_[tail.pool].insert(key(r));
  }

  void order_after(StreamId later, StreamId earlier) {
    EventId e = 0;
    if (device_.create_event(&e) != kSuccess) return;
    if (device_.record_event(e, earlier) == kSuccess) (void)device_.stream_wait_event(later, e);
    device_.destroy_event(e);
  }

  void add_use(Block& block, StreamId stream) {
    if (std::find(block.uses.begin(), block.uses.end(), stream) == block.uses.end()) block.uses.push_back(stream);
  }

  // Freed after work on other streams touched it: back to its pool once that work is done.
  void defer(std::uint32_t b) {
    Block& block = blocks_[b];
    block.state = BlockState::pending;
    for (const StreamId s : block.uses) {
      EventId e = 0;
      if (device_.create_event(&e) != kSuccess) {
        block.state = BlockState::lost;
        break;
      }
      block.events.push_back(e);
      if (device_.record_event(e, s) != kSuccess) {
        block.state = BlockState::lost;
        break;
      }
    }
    if (block.state == BlockState::lost) {
      for (const EventId e : block.events) device_.destroy_event(e);
      block.events.clear();
      return;
    }
    pending_.push_back(b);
  }

  // Pending blocks whose events completed go back to their pools (PyTorch's process_events).
  void process_events(bool synchronize = false) {
    std::erase_if(pending_, [&](std::uint32_t b) {
      Block& block = blocks_[b];
      for (const EventId e : block.events) {
        const bool done = device_.event_completed(e) || (synchronize && device_.synchronize_event(e) == kSuccess);
        if (!done) return false;
      }
      for (const EventId e : block.events) device_.destroy_event(e);
      block.events.clear();
      free_block(b);
      return true;
    });
  }

  // Back into its pool, merged with free neighbours of its segment.
  void free_block(std::uint32_t b) {
    Block& block = blocks_[b];
    block.state = BlockState::free;
    block.uses.clear();
    block.requested = 0;
    if (const std::uint32_t p = block.prev; p != kNone && blocks_[p].state == BlockState::free) {
      const Block& before = blocks_[p];
      free_[before.pool].erase(key(p));
      block.ptr = before.ptr;
      block.size += before.size;
      block.prev = before.prev;
      if (before.prev != kNone) blocks_[before.prev].next = b;
      recycle(p);
    }
    if (const std::uint32_t n = blocks_[b].next; n != kNone && blocks_[n].state == BlockState::free) {
      Block& self = blocks_[b];
      const Block& after = blocks_[n];
      free_[after.pool].erase(key(n));
      self.size += after.size;
      self.next = after.next;
      if (after.next != kNone) blocks_[after.next].prev = b;
      recycle(n);
    }
    free_[blocks_[b].pool].insert(key(b));
  }

  bool whole_segment(std::uint32_t b) const { return blocks_[b].prev == kNone && blocks_[b].next == kNone; }

  // A free block that is a whole segment goes back to the device.
  bool release_segment(std::uint32_t b) {
    const Block block = blocks_[b];
    if (upstream().deallocate(block.ptr, MemoryKind::device, 0) != kSuccess) return false;
    free_[block.pool].erase(key(b));
    reserved_ -= block.size;
    segments_.erase(block.ptr);
    recycle(b);
    return true;
  }

  // PyTorch's release_cached_blocks (emptyCache): wait for pending blocks where the device can,
  // then free every cached whole segment. Returns the bytes given back.
  std::uint64_t release_cached() {
    process_events(/*synchronize=*/true);
    std::vector<std::uint32_t> whole;
    for (const auto& pool : free_) {
      for (const FreeKey& k : pool) {
        if (whole_segment(std::get<3>(k))) whole.push_back(std::get<3>(k));
      }
    }
    std::uint64_t freed = 0;
    for (const std::uint32_t b : whole) {
      const std::uint64_t size = blocks_[b].size;
      if (release_segment(b)) freed += size;
    }
    return freed;
  }

  // PyTorch's release_available_cached_blocks: with max_split_size set, free the smallest
  // oversize cached segment of the stream that covers the request, or else its largest ones
  // until as many bytes are freed. True if that many were.
  bool release_oversize(int pool, StreamId stream, std::uint64_t rounded) {
    const std::uint64_t threshold = policy_->oversize();
    if (threshold == ~std::uint64_t{0}) return false;
    const std::uint64_t want = std::max(rounded, threshold);
    const auto& set = free_[pool];
    const auto it = set.lower_bound(FreeKey{stream, want, 0, 0});
    if (it != set.end() && std::get<0>(*it) == stream) {
      const std::uint32_t b = std::get<3>(*it);
      return whole_segment(b) && release_segment(b);
    }
    std::vector<std::uint32_t> victims;
    std::uint64_t total = 0;
    for (auto r = std::make_reverse_iterator(it); r != set.rend() && total < want; ++r) {
      if (std::get<0>(*r) != stream || std::get<1>(*r) < threshold) break;
      if (!whole_segment(std::get<3>(*r))) continue;
      victims.push_back(std::get<3>(*r));
      total += std::get<1>(*r);
    }
    std::uint64_t released = 0;
    for (const std::uint32_t b : victims) {
      const std::uint64_t size = blocks_[b].size;
      if (release_segment(b)) released += size;
    }
    return released >= want;
  }

  Device& device_;
  std::unique_ptr<const CachePolicy> policy_;
  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
  std::vector<std::uint32_t> spare_;
  std::set<FreeKey> free_[kPools];
  std::map<DevicePtr, std::uint32_t> allocated_;  // by address (extent_of finds interior pointers)
  std::map<DevicePtr, std::uint64_t> segments_;   // base -> size
  std::vector<std::uint32_t> pending_;
  std::unordered_map<DevicePtr, std::uint64_t> passthrough_;  // the program's pools, after shutdown
  std::uint64_t passthrough_live_ = 0;
  std::uint64_t reserved_ = 0;
  std::uint64_t in_use_ = 0;
  std::uint64_t next_id_ = 0;
  StreamId current_stream_ = 0;
  bool shut_ = false;
};

}  // namespace

std::unique_ptr<Resource> make_block_cache(Device& device, std::unique_ptr<Resource> upstream,
                                           std::unique_ptr<const CachePolicy> policy) {
  return std::make_unique<BlockCache>(device, std::move(upstream), std::move(policy));
}

}  // namespace memtool::engine::detail
