// One iteration as the swap policy saw it (work items, swap candidates' allocations, frees and
// uses), turned into the swapper's input (memtool/swapper/iteration.hpp) so that the offline
// planner makes the in-process schedule.
//
// A buffer is named across iterations by its birth and its allocation's ordinal in the iteration
// that made it (BufferName): `current` — made in this iteration, `previous` — made in the one
// before (so freed here, or living on), `persistent` — made before the first iteration or living
// longer than one (named by its address). In the steady state a `current` buffer not freed by
// the end of its iteration is freed in the next at the op where the `previous` buffer of the same
// ordinal was freed in this one: it crosses the boundary (swapper convention: alloc > free).
// A `current` buffer with no such counterpart, and a `previous` one that lives on, are kept
// resident (persistent, not swappable): the plan cannot know when they go.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "item_times.hpp"
#include "memtool/engine/device.hpp"
#include "memtool/swapper/iteration.hpp"
#include "swap_names.hpp"

namespace memtool::engine::detail {

class IterationLog {
 public:
  // A new iteration; then every buffer alive at its start (persistent or previous) is named.
  void clear();
  // `bytes`: what a copy of it moves (its allocation's size, at most the footprint; 0: the footprint).
  void alive(const BufferName& name, std::uint64_t footprint, DevicePtr address, std::uint64_t bytes = 0);
  // A work item is about to be issued; returns its index in the iteration.
  std::uint32_t item();
  [[nodiscard]] std::uint32_t items() const { return items_; }
  // A current buffer, allocated before the next item.
  void allocated(std::uint64_t ordinal, std::uint64_t footprint, DevicePtr address, std::uint64_t bytes = 0);
  // Freed after the items issued so far.
  void freed(const BufferName& name);
  // Touched by the item just counted.
  void used(const BufferName& name);
  // The item just counted may reach every buffer (WorkItem::reaches_all: swapper::Op::reaches_all).
  void reaches_all();
  // The current buffers' footprints in allocation order: two iterations with the same
  // signature (and item count) are taken to repeat.
  [[nodiscard]] const std::vector<std::uint64_t>& signature() const { return signature_; }

  struct Input {
    swapper::Iteration iteration;   // Buffer::id: index into names
    std::vector<BufferName> names;  // as they are called in the next iteration
  };
  // The swapper's input with the items' GPU times (times.gpu_ns.size() == items(): the
  // durations) and, where `times` says so, their host times and synchronisations
  // (swapper::Op::host_ns, syncs; Iteration::host_timed); nullopt when there is nothing to plan
  // (fewer than two items, or no swappable buffer), `why` says.
  [[nodiscard]] std::optional<Input> to_input(const ItemTimes& times, std::string& why) const;

 private:
  struct Record {
    std::uint64_t footprint = 0;
    std::uint64_t bytes = 0;  // what a copy moves (swapper::Buffer::copy_bytes; 0: the footprint)
    DevicePtr address = 0;
    std::uint32_t alloc = 0;  // current: items before its allocation
    std::int64_t free = -1;   // the last item issued before its free (-1: before any)
    bool freed = false;
    std::vector<std::uint32_t> uses;
  };
  struct NameHash {
    std::size_t operator()(const BufferName& n) const {
      return std::hash<std::uint64_t>()(n.id * 4 + static_cast<std::uint64_t>(n.birth));
    }
  };
  // Null for a buffer the log was not told of (allocated before the log started).
  Record* find(const BufferName& name);

  std::uint32_t items_ = 0;
  std::vector<std::uint32_t> reaching_all_;  // items, in order
  std::vector<std::uint64_t> signature_;
  std::vector<BufferName> order_;  // first seen order (deterministic output)
  std::unordered_map<BufferName, Record, NameHash> records_;
};

}  // namespace memtool::engine::detail
