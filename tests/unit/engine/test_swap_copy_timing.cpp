// The link meter times each swap copy from right before the mover queues it (CopyWatch in
// swap_mover.hpp, swap/side_streams.hpp), not from before the mover's host work: on a device
// whose GPU clock the host's work runs ahead of, copies out and back through either mover, each
// after host work that takes time (memory taken, unmapped, mapped), read a link of no latency
// and its true bandwidth. A move whose copy is not queued leaves no timing event behind: none
// is recorded when it fails before its copy, and the start goes back to the spares when the
// driver refuses the copy itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "sim_forwarding_device.hpp"
#include "swap/frees.hpp"
#include "swap/move_context.hpp"
#include "swap/swap_in.hpp"
#include "swap/swap_out.hpp"

using namespace memtool::engine;
namespace swapper = memtool::swapper;
using detail::LinkMeter;
using detail::SwapBuffer;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr double kBytesPerNs = 0.5;          // the link, each way; no latency
constexpr double kHostWorkNs = 200'000.0;    // each driver call of the mover's host work
constexpr double kIdleGapNs = 50'000'000.0;  // between two moves: every copy finds its stream idle

// SimDevice on a clock: the host's (host_ns) moves on by kHostWorkNs at each call that is the
// mover's host work (physical memory made, reserved, mapped, unmapped, advised), and a stream
// runs its copies in order at kBytesPerNs, from when they are queued or its last copy ends. An
// event is stamped when its stream reaches it; timing events have completed once polled.
class ClockedDevice final : public test::SimForwardingDevice {
 public:
  double host_ns = 0;
  bool refuse_copies = false;     // copy_device and prefetch fail
  bool no_device_memory = false;  // create_physical fails
  int timing_records = 0;         // record_event calls on timing events
  int timing_created = 0;

  Status create_timing_event(EventId* out) override {
    const Status status = sim.create_event(out);
    if (status == kSuccess) {
      timing_.insert(*out);
      ++timing_created;
    }
    return status;
  }
  Status record_event(EventId event, StreamId stream) override {
    stamp_[event] = reached(stream);
    if (timing_.contains(event)) ++timing_records;
    return sim.record_event(event, stream);
  }
  bool event_completed(EventId event) override { return timing_.contains(event) || sim.event_completed(event); }
  void destroy_event(EventId event) override {
    stamp_.erase(event);
    timing_.erase(event);
    sim.destroy_event(event);
  }
  Status elapsed_ns(EventId start, EventId end, double* out) override {
    const auto a = stamp_.find(start);
    const auto b = stamp_.find(end);
    if (a == stamp_.end() || b == stamp_.end()) return kNotSupported;
    *out = b->second - a->second;
    return kSuccess;
  }

  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    if (refuse_copies) return kInvalidValue;
    run(stream, bytes);
    return sim.copy_device(dst, src, bytes, stream);
  }
  Status prefetch(DevicePtr ptr, std::uint64_t bytes, Residence to, StreamId stream) override {
    if (refuse_copies) return kInvalidValue;
    run(stream, bytes);
    return sim.prefetch(ptr, bytes, to, stream);
  }

  Status create_physical(std::uint64_t bytes, PhysicalHandle* out) override {
    work();
    if (no_device_memory) return kOutOfMemory;
    return sim.create_physical(bytes, out);
  }
  Status create_host_physical(std::uint64_t bytes, PhysicalHandle* out) override {
    work();
    return sim.create_host_physical(bytes, out);
  }
  Status reserve(std::uint64_t bytes, DevicePtr* out) override {
    work();
    return sim.reserve(bytes, out);
  }
  Status map(DevicePtr ptr, std::uint64_t bytes, PhysicalHandle handle) override {
    work();
    return sim.map(ptr, bytes, handle);
  }
  Status unmap(DevicePtr ptr, std::uint64_t bytes) override {
    work();
    return sim.unmap(ptr, bytes);
  }
  Status advise(DevicePtr ptr, std::uint64_t bytes, Residence preferred) override {
    work();
    return sim.advise(ptr, bytes, preferred);
  }

 private:
  void work() { host_ns += kHostWorkNs; }
  double reached(StreamId stream) { return std::max(host_ns, free_[stream]); }
  void run(StreamId stream, std::uint64_t bytes) {
    free_[stream] = reached(stream) + static_cast<double>(bytes) / kBytesPerNs;
  }

  std::map<EventId, double> stamp_;
  std::set<EventId> timing_;
  std::map<StreamId, double> free_;  // when each stream's last copy ends
};

enum class Mover : std::uint8_t { explicit_copies, uvm };

// What the swap policy owns, as it hands it to the parts, its learner logging an iteration.
struct TimedRig {
  ClockedDevice device;
  detail::SpareEvents events;
  detail::SpareTimingEvents timing;
  detail::HostWaits waits{device};
  std::unique_ptr<detail::SwapMover> mover;
  detail::SideStreams sides{device};
  detail::ScheduleLearner learner{device, timing, "ours", 0, ""};
  detail::StreamJoins joins{device, events};
  detail::UserMarks marks{device, events};
  detail::SwapCounters counters;
  std::uint64_t work = 0;
  bool in_item = false;
  bool host_waited = false;
  std::unique_ptr<detail::MoveContext> moves;
  std::unique_ptr<detail::DeferredFrees> frees;
  std::unique_ptr<detail::SwapOut> out;
  std::unique_ptr<detail::SwapIn> in;
  std::map<DevicePtr, SwapBuffer> buffers;  // node-based, as the policy's: the mover keeps pointers
  StreamId program = 0;

  explicit TimedRig(Mover kind) {
    mover = kind == Mover::uvm ? detail::make_uvm_mover(device, events, waits)
                               : detail::make_vmm_mover(device, events, waits, 0);
    REQUIRE(mover != nullptr);
    moves = std::make_unique<detail::MoveContext>(
        detail::MoveContext{device, *mover, events, timing, waits, sides, learner, joins, marks, counters, nullptr,
                            kind == Mover::explicit_copies, work, in_item, host_waited});
    frees = std::make_unique<detail::DeferredFrees>(*moves);
    out = std::make_unique<detail::SwapOut>(*moves);
    in = std::make_unique<detail::SwapIn>(*moves, *frees);
    REQUIRE(device.create_stream(&program) == kSuccess);
    joins.note(program);
    (void)learner.start();
  }

  DevicePtr add(std::uint64_t size) {
    SwapBuffer b;
    b.size = size;
    DevicePtr ptr = 0;
    REQUIRE(mover->allocate(b, program, &ptr) == kSuccess);
    REQUIRE(device.sim.access(program, ptr, size));
    b.streams.push_back(program);
    return buffers.emplace(ptr, b).first->first;
  }
  // Sent out once its stream is idle, and landed.
  void send(DevicePtr ptr) {
    device.host_ns += kIdleGapNs;
    REQUIRE(out->send(ptr, buffers.at(ptr)));
    device.host_ns += kIdleGapNs;
    frees->settle(true);
    REQUIRE_FALSE(buffers.at(ptr).leaving);
  }
  // Brought back ahead once its stream is idle.
  void bring_back(DevicePtr ptr) {
    device.host_ns += kIdleGapNs;
    REQUIRE(in->ahead(ptr, buffers.at(ptr)) == swapper::Arrival::back);
  }
  // Timing events neither in the spares nor destroyed: recorded for a copy under way.
  [[nodiscard]] long outstanding() const {
    return static_cast<long>(device.timing_created) - static_cast<long>(timing.spare.size());
  }
};

}  // namespace

TEST_CASE("swap copy timing: a copy is timed from its queueing, not the mover's host work before it",
          "[engine][swap][link]") {
  const Mover kind = GENERATE(Mover::explicit_copies, Mover::uvm);
  INFO((kind == Mover::uvm ? "uvm" : "explicit"));
  TimedRig rig(kind);
  std::vector<DevicePtr> ptrs;
  for (const std::uint64_t size : {2 * MiB, 4 * MiB, 6 * MiB, 10 * MiB, 16 * MiB}) ptrs.push_back(rig.add(size));
  for (const DevicePtr ptr : ptrs) rig.send(ptr);
  for (const DevicePtr ptr : ptrs) rig.bring_back(ptr);
  LinkMeter& meter = rig.learner.meter();
  meter.poll();
  REQUIRE(meter.samples(LinkMeter::Direction::to_host) == ptrs.size());
  REQUIRE(meter.samples(LinkMeter::Direction::to_device) == ptrs.size());
  swapper::Link fallback;
  fallback.d2h_bytes_per_ns = fallback.h2d_bytes_per_ns = 100.0;
  fallback.d2h_latency_ns = fallback.h2d_latency_ns = 1'000'000;
  bool measured = false;
  const swapper::Link link = meter.link(fallback, &measured);
  REQUIRE(measured);
  CHECK(link.d2h_bytes_per_ns == Approx(kBytesPerNs).epsilon(1e-6));
  CHECK(link.h2d_bytes_per_ns == Approx(kBytesPerNs).epsilon(1e-6));
  // Each move took host work of a few kHostWorkNs before its copy: none of it is latency.
  CHECK(link.d2h_latency_ns < 1000);
  CHECK(link.h2d_latency_ns < 1000);
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap copy timing: a copy back with no device memory records no timing event", "[engine][swap][link]") {
  TimedRig rig(Mover::explicit_copies);
  const DevicePtr ptr = rig.add(4 * MiB);
  rig.send(ptr);
  rig.mover->trim();  // no device memory kept for reuse: the copy back must make some
  rig.device.no_device_memory = true;
  const int records = rig.device.timing_records;
  const long held = rig.outstanding();
  CHECK(rig.in->ahead(ptr, rig.buffers.at(ptr)) == swapper::Arrival::skipped);
  CHECK_FALSE(rig.buffers.at(ptr).resident);
  CHECK(rig.device.timing_records == records);  // it failed before its copy: nothing to time
  CHECK(rig.outstanding() == held);
}

TEST_CASE("swap copy timing: a copy the driver refuses gives its start event back", "[engine][swap][link]") {
  const Mover kind = GENERATE(Mover::explicit_copies, Mover::uvm);
  INFO((kind == Mover::uvm ? "uvm" : "explicit"));
  TimedRig rig(kind);
  const DevicePtr ptr = rig.add(4 * MiB);
  rig.device.refuse_copies = true;
  const int records = rig.device.timing_records;
  const long held = rig.outstanding();
  CHECK_FALSE(rig.out->send(ptr, rig.buffers.at(ptr)));
  CHECK(rig.buffers.at(ptr).resident);
  CHECK(rig.device.timing_records == records + 1);  // the start, right before the copy
  CHECK(rig.outstanding() == held);                 // back in the spares
  rig.learner.meter().poll();
  CHECK(rig.learner.meter().samples(LinkMeter::Direction::to_host) == 0);
}
