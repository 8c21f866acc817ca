// Where MEMTOOL_SWAP_VERIFY checks a swap (swap_verify.hpp says what each check proves): a buffer
// just sent out is checksummed (a prefetch to the host is waited for and read now; an explicit
// copy once it has landed, when the mover asks `leaving_landed`), its host copy is compared before
// it comes back, and its device bytes once the copy back has landed. Each takes `checked_after`,
// the last work item queued before now: what a checksum taken now follows, and the item after it
// bounds a mismatch's suspects. Where the host may not wait for the GPU (HostWaits), that check is
// skipped. Owns the verifier; the swap policy keeps the buffers and calls in under its lock.
#pragma once

#include <cstdint>

#include "host_waits.hpp"
#include "memtool/engine/device.hpp"
#include "spare_events.hpp"
#include "swap_mover.hpp"
#include "swap_verify.hpp"

namespace memtool::engine::detail {

class VerifyHooks {
 public:
  // `remaps`: explicit mode (a move remaps the address; its copies are checked as they land).
  VerifyHooks(Device& device, SpareEvents& events, HostWaits& waits, const SwapMover& mover, bool remaps)
      : device_(device), events_(events), waits_(waits), mover_(mover), remaps_(remaps), verifier_(device) {}
  VerifyHooks(const VerifyHooks&) = delete;
  VerifyHooks& operator=(const VerifyHooks&) = delete;

  [[nodiscard]] SwapVerifier& verifier() { return verifier_; }
  [[nodiscard]] const SwapVerifier& verifier() const { return verifier_; }

  // Just sent out on `side`: the mover checks explicit copies once they land (leaving_landed); a
  // prefetch to the host is waited for and checksummed now.
  void sent_out(DevicePtr ptr, SwapBuffer& b, StreamId side, std::uint64_t checked_after) {
    b.digest_valid = false;
    b.digest_work = checked_after;
    if (remaps_) return;
    bool ok = false;
    const EventId e = events_.take(device_, ok);
    if (!ok) return;
    if (device_.record_event(e, side) == kSuccess && waits_.wait(e)) {
      b.digest_valid = verifier_.checksum(ptr, b.size, &b.digest);
    }
    events_.give(e);
  }

  // The mover's question once an explicit copy out has landed: do the device bytes still equal
  // the copy? If not, something wrote them after the copy read them: false, the buffer stays.
  bool leaving_landed(DevicePtr ptr, SwapBuffer& b, DevicePtr host_copy, std::uint64_t checked_after) {
    std::uint64_t on_device = 0;
    std::uint64_t on_host = 0;
    if (!verifier_.checksum(ptr, b.size, &on_device) || !verifier_.checksum(host_copy, b.size, &on_host)) return true;
    if (on_device != on_host) {
      verifier_.mismatch(ptr, b.size, b.id, "while leaving, after its copy out read it (it stays on the device)",
                         b.digest_work, checked_after + 1);
      b.digest_valid = false;
      return false;
    }
    b.digest = on_host;
    b.digest_valid = true;
    return true;
  }

  // Before a buffer that is out comes back: its host copy must be what left.
  void coming_back(DevicePtr ptr, SwapBuffer& b, std::uint64_t checked_after) {
    if (!b.digest_valid) return;
    std::uint64_t now = 0;
    if (!verifier_.checksum(mover_.host_copy(ptr, b), b.size, &now)) return;
    if (now != b.digest) {
      verifier_.mismatch(ptr, b.size, b.id, "while out, through its address (memtool did not see that access)",
                         b.digest_work, checked_after + 1);
      b.digest = now;
    }
  }

  // Its copy back was queued on `stream`: once it has landed, the device bytes must be the copy.
  void arrived(DevicePtr ptr, SwapBuffer& b, StreamId stream, std::uint64_t checked_after) {
    const bool had = b.digest_valid;
    b.digest_valid = false;
    if (!had || !remaps_) return;
    bool ok = false;
    const EventId e = events_.take(device_, ok);
    if (!ok) return;
    std::uint64_t now = 0;
    if (device_.record_event(e, stream) == kSuccess && waits_.wait(e) && verifier_.checksum(ptr, b.size, &now) &&
        now != b.digest) {
      verifier_.mismatch(ptr, b.size, b.id, "while coming back, before its copy back landed", b.digest_work,
                         checked_after + 1);
    }
    events_.give(e);
  }

 private:
  Device& device_;
  SpareEvents& events_;
  HostWaits& waits_;
  const SwapMover& mover_;
  const bool remaps_;
  SwapVerifier verifier_;
};

}  // namespace memtool::engine::detail
