// How a swapped buffer's bytes move: the mechanism under the swap policy (swap_adaptor.cpp).
// The policy decides which buffer leaves the device and when it comes back; a mover backs the
// buffers and moves them, without ever changing the program's pointer:
//  - UvmMover (uvm_mover.cpp): managed memory, moved by prefetches; the driver migrates pages
//    on demand, so any access reads the right bytes.
//  - VmmMover (vmm_mover.cpp): explicit copies. A buffer is a reserved address range with
//    device memory mapped into it; swapped out, its bytes are copied into pinned host memory
//    (a physical allocation located on the host) and, once the copy is done, the device memory
//    is released and the host memory mapped at the same address, so an access the policy did
//    not see still reads the right bytes, across the link.
// Movers are called with the policy's lock held; they wait for the device only through HostWaits
// (host_waits.hpp), when asked (settle(wait = true)) or to free a buffer, never while a stream
// waits for a value that may not be written yet.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "host_waits.hpp"
#include "memtool/engine/device.hpp"
#include "spare_events.hpp"
#include "swap_names.hpp"

namespace memtool::engine::detail {

// Told of the copy a move queues (a copy or a prefetch), right around the driver call that queues
// it, so that whatever times it (the link meter: swap/side_streams.hpp) brackets the copy alone:
// not the move's host work before it (taking device memory, unmapping, mapping), which a start
// event recorded before the move would hold on an idle stream, and which is the swap's host cost
// per copy instead (swap/host_costs.hpp). A move that queues no copy tells it nothing; one the
// policy counts as none (a buffer still leaving comes back) is given none().
class CopyWatch {
 public:
  // The copy is about to be queued on `stream`.
  virtual void queuing(StreamId stream) = 0;
  // It was queued on `stream` (not called when the driver refused it).
  virtual void queued(StreamId stream) = 0;
  // One that does nothing: a move nobody times.
  static CopyWatch& none();

 protected:
  CopyWatch() = default;
  ~CopyWatch() = default;
  CopyWatch(const CopyWatch&) = default;
  CopyWatch& operator=(const CopyWatch&) = default;
};

struct SwapBuffer {
  // The policy's.
  std::uint64_t size = 0;
  std::uint64_t id = 0;           // what pointer queries answer as its buffer id
  bool resident = true;           // on the device, or on its way there
  std::vector<StreamId> streams;  // every stream that used it since it last reached the device
  // Per stream that used it while it was out: the mark after the last such use (swap/user_marks.hpp).
  struct UserMark {
    StreamId stream = 0;
    std::uint64_t mark = 0;  // 0: none, the stream is waited for whole
  };
  std::vector<UserMark> user_marks;
  std::uint64_t last_work = 0;  // absolute work counter of its last use
  EventId arrival = 0;          // a copy back in flight: its users wait on this
  bool arrival_pending = false;
  bool arrival_ahead = false;      // that copy was a swap-in ahead, not yet used
  std::uint32_t scheduled_in = 0;  // 1 + the schedule's swap that copy was; 0: not the schedule's
  EventId timed_arrival = 0;       // a timing event after that copy (0: none), to judge lateness on the GPU
  bool held_out = false;           // sent out by the schedule, which also brings it back
  bool kept_out = false;           // within its lead, but not brought back for want of room
  std::uint64_t ordinal = 0;       // its allocation's place in the iteration that made it
  Birth birth = Birth::persistent;
  // Allocated by the policy and no work may have written it since (none used it, none that may
  // reach every buffer ran): its bytes mean nothing yet, so a mover that can moves it, out or
  // back, without a copy (SwapMover::copies_blank).
  bool blank = false;
  bool pinned = false;  // exported, or its address went where memtool cannot follow: never moves again
  // MEMTOOL_SWAP_VERIFY (swap_verify.hpp): the checksum of its bytes when it last left, and the
  // work item then.
  std::uint64_t digest = 0;
  std::uint64_t digest_work = 0;
  bool digest_valid = false;
  // The mover's.
  std::uint64_t footprint = 0;  // device bytes it holds when resident
  Device::PhysicalHandle device_memory = 0;
  std::uint32_t host_slot = 0;  // 1 + index in the host pool; 0: none
  EventId left = 0;             // the copy to the host: done when this completes
  bool leaving = false;         // copied out, device memory not yet released
};

namespace copy_watch {
class Unwatched final : public CopyWatch {
 public:
  void queuing(StreamId) override {}
  void queued(StreamId) override {}
};
}  // namespace copy_watch

inline CopyWatch& CopyWatch::none() {
  static copy_watch::Unwatched unwatched;
  return unwatched;
}

class SwapMover {
 public:
  virtual ~SwapMover() = default;
  [[nodiscard]] virtual std::string_view mode() const = 0;  // "uvm" | "explicit"
  // Device bytes a buffer of `size` bytes holds when resident.
  [[nodiscard]] virtual std::uint64_t footprint_of(std::uint64_t size) const = 0;
  // Back a new buffer of b.size bytes, resident; sets b.footprint.
  virtual Status allocate(SwapBuffer& b, StreamId stream, DevicePtr* out) = 0;
  // No device memory for a new buffer, or none to be had under the budget: back it with host
  // memory at a device address, as if swapped out from the start (b.resident false), in
  // `stream`'s order where that takes work on the GPU. kNotSupported where the mover cannot.
  virtual Status allocate_on_host(SwapBuffer& b, StreamId stream, DevicePtr* out) = 0;
  // Give its memory back; every use of it has completed. False: not now, as that would wait on
  // the host while it may not (HostWaits); nothing changed, ask again later.
  virtual bool free(DevicePtr ptr, SwapBuffer& b) = 0;
  // Queue its move to the host on `side` (already ordered after its last use), `watch` told
  // around its copy. False: it stays.
  virtual bool move_out(DevicePtr ptr, SwapBuffer& b, StreamId side, CopyWatch& watch) = 0;
  // Whether move_out and move_in copy a blank buffer's bytes too. False (explicit): it moves its
  // place only, its device memory released at once, and its free needs no ordering either.
  [[nodiscard]] virtual bool copies_blank() const { return true; }
  // Whether a copy out of its own still reads its device memory (it is leaving, or came back
  // before that copy landed and kept the memory): a free must be ordered after that copy.
  [[nodiscard]] virtual bool copy_out_reads(DevicePtr ptr, const SwapBuffer& b) {
    (void)ptr;
    return b.leaving;
  }
  // Queue its move back on `stream`: work queued on `stream` after this sees its bytes; `watch`
  // told around its copy, if it needs one. False: no device memory for it now (it stays on the
  // host, still readable there).
  virtual bool move_in(DevicePtr ptr, SwapBuffer& b, StreamId stream, CopyWatch& watch) = 0;
  // Release the device memory of buffers whose copy out has finished; with `wait`, wait for
  // those copies first where the host may wait (a stall, counted by HostWaits).
  virtual void settle(bool wait) = 0;
  // Wait for the oldest copy out still under way (copies land in the order they were queued on
  // the side streams, each after the work queued before it) and release what it held: a stall,
  // counted by HostWaits. False: none under way, or the host may not wait now.
  virtual bool settle_oldest() = 0;

  [[nodiscard]] virtual std::uint64_t device_bytes() const = 0;   // held on the device now
  [[nodiscard]] virtual std::uint64_t leaving_bytes() const = 0;  // of those, freed by settle
  // Held on the device once a buffer of `footprint` device bytes is back (memory kept for reuse
  // taken for it, or let go to make room for new memory).
  [[nodiscard]] virtual std::uint64_t device_bytes_with(std::uint64_t footprint) const = 0;
  // Release everything it holds that no buffer uses (the host pool's free slots).
  virtual void trim() = 0;

  // Where a buffer that is out keeps its bytes: the host copy's own mapping, or its address.
  [[nodiscard]] virtual DevicePtr host_copy(DevicePtr ptr, const SwapBuffer& b) const = 0;
  // Asked once a copy out has landed, before the buffer's address is remapped to the host copy:
  // false keeps the buffer on the device, its device memory (still mapped) the truth. Movers
  // that do not remap never ask.
  using LeaveCheck = std::function<bool(DevicePtr ptr, SwapBuffer& b, DevicePtr host_copy)>;
  // A sink: the overrides that use it move from it.
  virtual void set_leave_check(LeaveCheck check) { (void)check; }  // NOLINT(performance-unnecessary-value-param)
};

// Null when the device cannot do it (no managed memory; no VMM with host-located memory).
std::unique_ptr<SwapMover> make_uvm_mover(Device& device, SpareEvents& events, HostWaits& waits);
std::unique_ptr<SwapMover> make_vmm_mover(Device& device, SpareEvents& events, HostWaits& waits,
                                          std::uint64_t host_limit_bytes);

}  // namespace memtool::engine::detail
