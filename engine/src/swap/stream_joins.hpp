// Ordering a swap copy after the program's work: every stream the program has queued work on is
// noted, and a copy's side stream joins (waits for an event recorded now on) each of them and
// each stream that used the buffer, so work that reaches the buffer through memory memtool cannot
// read, queued before the copy, has run before the copy reads it. Streams the program destroyed
// are forgotten as they are found. Not thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "memtool/engine/device.hpp"
#include "spare_events.hpp"

namespace memtool::engine::detail {

class StreamJoins {
 public:
  StreamJoins(Device& device, SpareEvents& events) : device_(device), events_(events) {}
  StreamJoins(const StreamJoins&) = delete;
  StreamJoins& operator=(const StreamJoins&) = delete;

  // The program queued work on `stream`.
  void note(StreamId stream) {
    if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) streams_.push_back(stream);
  }

  // Orders `side` after the work queued so far on every stream the program used and every one
  // in `users`; false if an event could not be had (then nothing may rely on the order).
  // `strict`: a stream that cannot be named now fails it too (explicit copies remap the buffer).
  bool join_all(std::span<const StreamId> users, StreamId side, bool strict) {
    // A stream that takes no event any more was destroyed by the program (its work runs to its
    // end, as cuStreamDestroy says): it is forgotten. (Stopping there, the streams after it went
    // unjoined: adversarial_train's threads destroy theirs while others still free buffers, and
    // a free was carried out under the kernel before it.) One refused for now (another thread's
    // per-thread stream while a capture runs) is kept: with explicit copies, where work that
    // reaches the buffer unseen would read a remapped address, the move waits for a later try;
    // UVM migrates what any access touches, so it goes on. (Before, a refused stream was
    // forgotten as a destroyed one until its thread's next work item.)
    bool ordered = true;
    std::erase_if(streams_, [&](StreamId s) {
      if (s == side || std::find(users.begin(), users.end(), s) != users.end()) return false;
      const Join j = join(s, side);
      ordered = ordered && j != Join::failed && (j != Join::refused || !strict);
      return j == Join::gone;
    });
    if (!ordered) return false;
    for (const StreamId s : users) {
      if (s != side && join(s, side) != Join::joined) return false;
    }
    return true;
  }

 private:
  // `side` waits for the work queued so far on `s` (gone: `s` takes no event, it was destroyed;
  // refused: it cannot be named now, Device::kCaptureImplicit, try again later).
  enum class Join : std::uint8_t { joined, refused, gone, failed };
  Join join(StreamId s, StreamId side) {
    bool ok = false;
    const EventId e = events_.take(device_, ok);
    if (!ok) return Join::failed;
    Join result = Join::gone;
    const Status recorded = device_.record_event(e, s);
    if (recorded == kSuccess) {
      result = device_.stream_wait_event(side, e) == kSuccess ? Join::joined : Join::failed;
    } else if (recorded == kCaptureImplicit) {
      result = Join::refused;
    }
    events_.give(e);
    return result;
  }

  Device& device_;
  SpareEvents& events_;
  std::vector<StreamId> streams_;  // every stream the program queued work on
};

}  // namespace memtool::engine::detail
