// The program's frees of swapped buffers, carried out once the GPU has reached them, and
// settling: what the device still holds for buffers on their way off it. A free is deferred until
// an event recorded at it (or, with none, a copy back still under way) has completed: polled as
// work goes on, never a host wait unless asked (`wait`) and allowed (HostWaits). Until then the
// buffer's device bytes still count (device_bytes: the policy's committed bytes leave them out,
// since they come back with a wait, not a copy). Settling collects the frees and lets the mover
// release the device memory of copies out that have landed; settling until bytes fit waits for
// the oldest copies only, as long as the bytes do not fit. Not thread-safe: the swap policy's
// lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "swap/move_context.hpp"

namespace memtool::engine::detail {

class DeferredFrees {
 public:
  using Buffers = std::map<DevicePtr, SwapBuffer>;  // node-based: the mover keeps pointers to them

  explicit DeferredFrees(MoveContext& moves) : moves_(moves) {}
  DeferredFrees(const DeferredFrees&) = delete;
  DeferredFrees& operator=(const DeferredFrees&) = delete;

  // A freed buffer (taken whole out of the policy's map, so the mover's pointer to it stays
  // good), carried out once `reached`, recorded at its free, has completed.
  void add_after(Buffers::node_type buffer, EventId reached) {
    const DevicePtr ptr = buffer.key();
    add(std::move(buffer));
    events_.emplace(ptr, reached);
  }
  // One with no event at its free: carried out once its copy back under way (b.arrival, if
  // b.arrival_pending) has landed.
  void add_unordered(Buffers::node_type buffer) { add(std::move(buffer)); }

  // Frees whose stream has reached them (one with no event once a copy back under way has
  // landed) and that the mover can carry out now; with `wait`, all of them where the host may
  // wait (HostWaits).
  void collect(bool wait) {
    for (auto it = dying_.begin(); it != dying_.end();) {
      SwapBuffer& b = it->second;
      const auto event = events_.find(it->first);
      const bool ordered = event != events_.end() ? moves_.host_waits.reached(event->second, wait)
                                                  : !b.arrival_pending || moves_.host_waits.reached(b.arrival, wait);
      if (!ordered || !moves_.mover.free(it->first, b)) {
        ++it;
        continue;
      }
      if (b.arrival_pending) {
        moves_.events.give(b.arrival);
        b.arrival_pending = false;
      }
      if (b.resident) {
        device_bytes_ -= std::min(device_bytes_, b.footprint);
      } else {
        moves_.counters.off_host(b.size);
      }
      if (event != events_.end()) {
        moves_.events.give(event->second);
        events_.erase(event);
      }
      it = dying_.erase(it);
    }
  }

  // The frees, then the mover's copies out that have landed; with `wait`, waited for where the
  // host may wait (a stream that waits for a value not written yet: polled only).
  void settle(bool wait) {
    if (wait && !moves_.host_waits.allowed()) wait = false;
    collect(wait);
    moves_.mover.settle(wait);
    moves_.host_waited = moves_.host_waited || wait;
  }

  // Settling until the mover holds at most `device_bytes_limit` device bytes (the bytes needed
  // now fit): what has landed or been reached, then the oldest copies out one at a time, each
  // waited for (HostWaits) and the frees it reached collected (a copy out is queued after the
  // work queued before it), and only if that is not enough, everything (settle(true)). Waiting
  // for the newest copy would drain the GPU's queue where the oldest frees the bytes.
  void settle_until(std::uint64_t device_bytes_limit) {
    settle(false);
    const auto fits = [&] { return moves_.mover.device_bytes() <= device_bytes_limit; };
    if (fits() || !moves_.host_waits.allowed()) return;
    while (!fits() && moves_.mover.settle_oldest()) {
      moves_.host_waited = true;
      collect(false);
    }
    if (!fits()) settle(true);
  }

  // Device bytes of buffers freed while resident and not yet carried out.
  [[nodiscard]] std::uint64_t device_bytes() const { return device_bytes_; }
  [[nodiscard]] bool empty() const { return dying_.empty(); }
  // A buffer the program has freed whose free is not carried out yet (a second free of it is the
  // program's error, not a pointer for the layer below).
  [[nodiscard]] bool holds(DevicePtr ptr) const { return dying_.contains(ptr); }

 private:
  void add(Buffers::node_type buffer) {
    if (buffer.mapped().resident) device_bytes_ += buffer.mapped().footprint;
    dying_.insert(std::move(buffer));
  }

  MoveContext& moves_;
  Buffers dying_;                                  // freed by the program, not yet reached
  std::uint64_t device_bytes_ = 0;                 // of those, device bytes (resident when freed)
  std::unordered_map<DevicePtr, EventId> events_;  // each dying buffer's: its free reached
};

}  // namespace memtool::engine::detail
