// Sending one buffer to host memory: the copy out, on the swap-out side stream (or, for
// save-on-cpu, on a program stream given), ordered after all work queued so far on every stream
// the program used (not only the buffer's users': work that reaches it through memory memtool
// cannot read, queued before now, has then run before the copy reads it), and after a copy back
// still under way; a buffer no work has written yet leaves without a copy where the mover can
// (its bytes mean nothing, SwapBuffer::blank). Which buffer leaves, and when, is the policy's (the
// rule, or a schedule's trigger); this part only refuses what may not move: a pinned buffer, and
// any move while a stream waits for a value the program has not written (HostWaits: a copy joined
// after every stream would wait behind it, and so would any work that then needs the buffer back,
// a hang).
// Not thread-safe: the swap policy's lock.
#pragma once

#include "swap/move_context.hpp"

namespace memtool::engine::detail {

class SwapOut {
 public:
  explicit SwapOut(MoveContext& moves) : moves_(moves) {}
  SwapOut(const SwapOut&) = delete;
  SwapOut& operator=(const SwapOut&) = delete;

  // On the swap-out stream, or on `on` (save-on-cpu: the compute stream) when given. False: it
  // stays (nothing queued).
  bool send(DevicePtr ptr, SwapBuffer& b, StreamId on = 0) {
    if (b.pinned) return false;  // exported: another process may read it at its place
    // While a stream waits for a value the program has not written, it stays (the policy's
    // hold_budget serves what does not fit from the host meanwhile).
    if (!moves_.host_waits.allowed()) return false;
    StreamId side = on;
    if (on == 0 && !moves_.side_streams.out(side)) return false;
    // After all work queued so far on every stream, on the side stream: the compute streams never
    // wait.
    if (!moves_.joins.join_all(b.streams, side, moves_.remaps)) return false;
    if (b.arrival_pending) {
      // Brought back ahead and needed later than what needs the room now: after that copy.
      (void)moves_.device.stream_wait_event(side, b.arrival);
      moves_.events.give(b.arrival);
      b.arrival_pending = false;
    }
    // Verification reads the bytes that left when they come back: they are copied, as they are.
    if (moves_.verify != nullptr) b.blank = false;
    // A blank buffer leaves without a copy where the mover can: no link time to meter.
    const bool copies = !b.blank || moves_.mover.copies_blank();
    if (!SideStreams::timed_copy(moves_.learner, LinkMeter::Direction::to_host, b.size, copies,
                                 [&](CopyWatch& watch) { return moves_.mover.move_out(ptr, b, side, watch); })) {
      return false;
    }
    UserMarks::forget(b);
    b.kept_out = false;
    if (moves_.verify != nullptr) moves_.verify->sent_out(ptr, b, side, moves_.checked_after());
    moves_.counters.bytes_swapped_out += b.size;
    ++moves_.counters.swap_outs;
    moves_.counters.to_host(b.size);
    return true;
  }

 private:
  MoveContext& moves_;
};

}  // namespace memtool::engine::detail
