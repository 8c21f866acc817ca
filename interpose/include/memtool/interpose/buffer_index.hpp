// The index of live buffers: which allocation, if any, contains an address. Launches ask it
// for every 8-byte word of their arguments, so lookups are the hot path: an ordered map of
// disjoint [base, base+size) ranges behind a one-comparison filter on the lowest and highest
// live address (most argument words are sizes, strides or floats far outside that range).
//
// Not thread-safe: its owner serialises every call (the recorder's emit lock, which it holds
// for each event anyway — a lock of the index's own would be taken and released for nothing).
#pragma once

#include <cstdint>
#include <map>
#include <new>
#include <optional>
#include <utility>
#include <span>
#include <vector>

#include "memtool/trace/event.hpp"

namespace memtool::interpose {

struct LiveBuffer {
  std::uint64_t base = 0;
  std::uint64_t size = 0;  // bytes asked for (at least 1 for lookups)
  trace::MemoryKind kind = trace::MemoryKind::device;
};

namespace detail {

// Freed map nodes, kept for the next insertion: a program frees and allocates in turn, so
// each insertion reuses the node the last erase left, still in cache, without a trip
// through malloc (which on the allocation path costs more than the tree itself).
struct NodeFreeList {
  static constexpr std::size_t kMaxKept = 4096;
  struct Link {
    Link* next;
    std::size_t kept;  // nodes in the list from this one down: the list is one pointer wide
  };
  Link* head = nullptr;

  NodeFreeList() = default;
  NodeFreeList(const NodeFreeList&) = delete;
  NodeFreeList& operator=(const NodeFreeList&) = delete;
  ~NodeFreeList() {
    while (head != nullptr) ::operator delete(std::exchange(head, head->next));
  }
  [[nodiscard]] std::size_t kept() const noexcept { return head != nullptr ? head->kept : 0; }
};

// The map's allocator over a NodeFreeList (single-object allocations only are recycled;
// the map makes nothing else).
template <class T>
class RecyclingAllocator {
 public:
  using value_type = T;
  explicit RecyclingAllocator(NodeFreeList* list) noexcept : list_(list) {}
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>& other) noexcept : list_(other.list()) {}  // NOLINT: rebinding

  T* allocate(std::size_t n) {
    if (n == 1 && list_->head != nullptr) return reinterpret_cast<T*>(std::exchange(list_->head, list_->head->next));
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    static_assert(sizeof(T) >= sizeof(NodeFreeList::Link));
    const std::size_t kept = list_->kept();
    if (n == 1 && kept < NodeFreeList::kMaxKept) {
      list_->head = ::new (static_cast<void*>(p)) NodeFreeList::Link{list_->head, kept + 1};
      return;
    }
    ::operator delete(p);
  }
  [[nodiscard]] NodeFreeList* list() const noexcept { return list_; }
  friend bool operator==(const RecyclingAllocator& a, const RecyclingAllocator& b) noexcept {
    return a.list_ == b.list_;
  }

 private:
  NodeFreeList* list_;
};

}  // namespace detail

class BufferIndex {
 public:
  // Adds a buffer; a stale entry at the same base (a free we never saw) is replaced.
  void insert(const LiveBuffer& buffer);
  // Removes the buffer starting at `base`; nullopt when there is none.
  std::optional<LiveBuffer> erase(std::uint64_t base);
  // Removes every buffer whose base lies in [begin, end) (cuMemUnmap of a range).
  std::vector<LiveBuffer> erase_range(std::uint64_t begin, std::uint64_t end);
  // The buffer containing `address` (interior pointers included), or null; valid until the
  // next change.
  [[nodiscard]] const LiveBuffer* find(std::uint64_t address) const;

  // Appends to `bases` the base of the buffer each word points into, once per buffer (in
  // first-touch order).
  void scan(std::span<const std::uint64_t> words, std::vector<std::uint64_t>& bases) const;

  [[nodiscard]] std::size_t size() const { return by_base_.size(); }
  [[nodiscard]] std::uint64_t live_bytes() const { return live_bytes_; }

 private:
  void update_bounds();

  using Map = std::map<std::uint64_t, LiveBuffer, std::less<>,
                       detail::RecyclingAllocator<std::pair<const std::uint64_t, LiveBuffer>>>;
  std::uint64_t low_ = ~std::uint64_t{0};  // [low_, high_) covers every live buffer
  std::uint64_t high_ = 0;
  std::uint64_t live_bytes_ = 0;
  detail::NodeFreeList free_nodes_;  // declared before the map: outlives it
  Map by_base_{Map::allocator_type(&free_nodes_)};
};

}  // namespace memtool::interpose
