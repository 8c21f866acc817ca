// Which live buffer a name stands for (swap_names.hpp: a buffer is named across iterations by its
// birth and its allocation's ordinal there, a persistent one by its address). The tables of this
// iteration's and the last one's allocations by ordinal resolve a schedule's names; at each
// boundary this iteration's buffers become the previous one's, and those older still persistent.
// Also the rule's key of a buffer (one integer: the ordinal, or the marked address). Not
// thread-safe: the swap policy's lock.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "swap_mover.hpp"
#include "swap_names.hpp"

namespace memtool::engine::detail {

class BufferNames {
 public:
  // The rule's name for a buffer: its ordinal in the iteration that made it, or its address (a
  // persistent buffer's, marked so that it never equals an ordinal).
  static std::uint64_t key_of(DevicePtr ptr, const SwapBuffer& b) {
    return b.birth == Birth::persistent ? (kPersistentKey | ptr) : b.ordinal;
  }
  static BufferName name_of(DevicePtr ptr, const SwapBuffer& b) {
    if (b.birth == Birth::persistent) return BufferName{Birth::persistent, ptr};
    return BufferName{b.birth, b.ordinal};
  }

  // `b`, at `ptr`, is this iteration's allocation `ordinal`.
  void born(DevicePtr ptr, SwapBuffer& b, std::uint64_t ordinal) {
    b.ordinal = ordinal;
    b.birth = Birth::current;
    if (current_.size() <= ordinal) current_.resize(ordinal + 1, 0);
    current_[ordinal] = ptr;
  }

  // The live buffer in `buffers` that `name` stands for, or 0.
  [[nodiscard]] DevicePtr resolve(const BufferName& name, const std::map<DevicePtr, SwapBuffer>& buffers) const {
    DevicePtr ptr = 0;
    if (name.birth == Birth::persistent) {
      ptr = name.id;
    } else {
      const auto& table = name.birth == Birth::current ? current_ : previous_;
      if (name.id < table.size()) ptr = table[name.id];
    }
    const auto it = buffers.find(ptr);
    return it != buffers.end() && it->second.birth == name.birth ? ptr : 0;
  }

  // The buffer at `ptr` is freed: its ordinal names nothing any more.
  void forget(DevicePtr ptr, const SwapBuffer& b) {
    auto& table = b.birth == Birth::current ? current_ : previous_;
    if (b.birth != Birth::persistent && b.ordinal < table.size() && table[b.ordinal] == ptr) table[b.ordinal] = 0;
  }

  // At a boundary: this iteration's buffers are the previous one's from now on; those made before
  // it that still live are persistent.
  void next_iteration(std::map<DevicePtr, SwapBuffer>& buffers) {
    for (auto& [ptr, b] : buffers) {
      if (b.birth == Birth::previous) {
        b.birth = Birth::persistent;
      } else if (b.birth == Birth::current) {
        b.birth = Birth::previous;
      }
    }
    previous_ = std::move(current_);
    current_.clear();
  }

 private:
  static constexpr std::uint64_t kPersistentKey = std::uint64_t{1} << 63;
  std::vector<DevicePtr> current_;   // by ordinal: this iteration's buffers (0: freed)
  std::vector<DevicePtr> previous_;  // the last iteration's
};

}  // namespace memtool::engine::detail
