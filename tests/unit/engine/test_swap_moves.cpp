// The swap policy's parts that move buffers (engine/src/swap/: swap_out.hpp, swap_in.hpp,
// frees.hpp, schedule_applier.hpp), white-box on the simulated device with the explicit (VMM)
// mover: a copy out ordered after the program's work and refused for a pinned buffer, none for a
// buffer nothing has written; a copy back
// on demand (settling what copies out still hold when there is no device memory), ahead, never
// under work that may still read the host copy, yet not waiting for later work on its stream (its
// users' marks, swap/user_marks.hpp); frees carried out only once the GPU reached them, and
// after a copy out that still reads the memory of a buffer brought back before it landed;
// settling until bytes fit waits for the oldest copies out only;
// a schedule's triggers, each once an iteration, skipping what may not move. The simulator counts
// every access not ordered after the last one from another stream.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <thread>

#include "memtool/engine/sim_device.hpp"
#include "planned_swaps.hpp"
#include "swap/schedule_applier.hpp"
#include "swap_move_rig.hpp"

using namespace memtool::engine;
namespace swapper = memtool::swapper;
using detail::Birth;
using detail::BufferName;
using detail::SwapBuffer;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kSize = 2 * MiB;  // one of the simulator's VMM granules

// What the swap policy owns, as it hands it to the parts, with the explicit (VMM) mover.
struct MoveRig : test::SwapMoveRig<SimDevice> {
  detail::BufferNames names;

  explicit MoveRig(std::uint64_t capacity = 64 * MiB) : SwapMoveRig(false, "ours", SimDevice::Options{capacity}) {}

  // Another stream for the program's work.
  StreamId stream() {
    StreamId s = 0;
    REQUIRE(device.create_stream(&s) == kSuccess);
    return s;
  }

  // A buffer born `ordinal`-th in this iteration, written by a kernel on the program's stream.
  DevicePtr add(std::uint32_t seed, std::uint64_t ordinal = 0) {
    const DevicePtr ptr = add_blank(seed, ordinal);
    buffers.at(ptr).blank = false;
    REQUIRE(device.access(program, ptr, kSize));
    return ptr;
  }
  // One allocated on `program` that no work has used (SwapBuffer::blank); its device bytes are
  // `seed`'s all the same (the simulator's fill), which no copy should carry.
  DevicePtr add_blank(std::uint32_t seed, std::uint64_t ordinal = 0) {
    SwapBuffer b;
    b.size = kSize;
    b.blank = true;
    DevicePtr ptr = 0;
    REQUIRE(mover->allocate(b, program, &ptr) == kSuccess);
    REQUIRE(device.fill(ptr, kSize, seed));
    b.streams.push_back(program);
    names.born(ptr, b, ordinal);
    buffers.emplace(ptr, b);
    return ptr;
  }

  // Sent out and landed: its address maps the host copy.
  void out_and_landed(DevicePtr ptr) {
    REQUIRE(out.send(ptr, buffers.at(ptr)));
    frees.settle(true);
    REQUIRE(!buffers.at(ptr).leaving);
  }

  // The program's next kernel, ordered after the buffer's arrival, finds what `seed` wrote.
  void use_after_arrival(DevicePtr ptr, const SwapBuffer& b, std::uint32_t seed) {
    REQUIRE(device.stream_wait_event(program, b.arrival) == kSuccess);
    REQUIRE(device.access(program, ptr, kSize));
    device.synchronize();
    CHECK(device.verify(ptr, kSize, seed));
    CHECK(device.violations() == 0);
  }
};

}  // namespace

TEST_CASE("swap out: after the program's work on a side stream; a pinned buffer stays", "[engine][swap]") {
  MoveRig rig;
  const DevicePtr ptr = rig.add(7);
  SwapBuffer& b = rig.buffers.at(ptr);

  b.pinned = true;
  CHECK_FALSE(rig.out.send(ptr, b));
  CHECK(b.resident);
  CHECK(rig.counters.swap_outs == 0);
  b.pinned = false;

  REQUIRE(rig.out.send(ptr, b));
  CHECK_FALSE(b.resident);
  CHECK(b.leaving);
  CHECK(b.streams.empty());  // its users' work is ordered before the copy
  CHECK(rig.counters.swap_outs == 1);
  CHECK(rig.counters.bytes_swapped_out == kSize);
  CHECK(rig.counters.host_bytes_now == kSize);
  CHECK(rig.mover->leaving_bytes() == kSize);
  // The copy read the buffer after the program's kernel that wrote it: no unordered access.
  CHECK(rig.device.violations() == 0);

  // Settling without a wait leaves a copy the GPU has not run; with one, its device memory goes.
  rig.frees.settle(false);
  CHECK(b.leaving);
  CHECK_FALSE(rig.host_waited);
  rig.frees.settle(true);
  CHECK_FALSE(b.leaving);
  CHECK(rig.mover->device_bytes() == 0);
  CHECK(rig.host_waited);
  CHECK(rig.device.verify(ptr, kSize, 7));  // read through its address, from the host copy
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("swap out: a buffer no work has written leaves without a copy, one written is copied", "[engine][swap]") {
  MoveRig rig;
  // The device holds bytes in both (the simulator's fill); only the second one's are the program's.
  const DevicePtr blank = rig.add_blank(3);
  const DevicePtr written = rig.add(4, 1);

  rig.out_and_landed(blank);
  rig.out_and_landed(written);
  CHECK(rig.counters.swap_outs == 2);
  CHECK(rig.mover->device_bytes() == 0);
  CHECK_FALSE(rig.device.verify(blank, kSize, 3));  // its host copy holds nothing that was on the device
  CHECK(rig.device.verify(written, kSize, 4));
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("swap out: a blank buffer's device memory goes at once, not behind the copies out queued before it",
          "[engine][swap]") {
  MoveRig rig;
  const DevicePtr written = rig.add(4, 1);
  const DevicePtr blank = rig.add_blank(3);
  REQUIRE(rig.out.send(written, rig.buffers.at(written)));  // its copy under way
  REQUIRE(rig.out.send(blank, rig.buffers.at(blank)));
  CHECK_FALSE(rig.buffers.at(blank).leaving);  // out already: its memory is the mover's to reuse
  CHECK_FALSE(rig.buffers.at(blank).resident);
  CHECK(rig.buffers.at(written).leaving);
  rig.frees.settle(true);
  CHECK(rig.mover->device_bytes() == 0);
  CHECK(rig.device.verify(written, kSize, 4));
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("swap in: on demand, ahead, never under work that may read the host copy", "[engine][swap]") {
  MoveRig rig;
  const DevicePtr ptr = rig.add(11);
  SwapBuffer& b = rig.buffers.at(ptr);
  rig.out_and_landed(ptr);

  // A kernel queued while it was out reads the host copy through its address: no remap under it.
  REQUIRE(rig.device.access(rig.program, ptr, kSize));
  b.streams.push_back(rig.program);
  rig.host_waited = false;
  CHECK_FALSE(rig.in.move_back(ptr, b, rig.program, false));
  CHECK_FALSE(b.resident);
  CHECK(rig.counters.swap_ins_on_demand == 0);

  // On demand, that work is waited for first.
  b.kept_out = true;
  REQUIRE(rig.in.now(ptr, b, rig.program));
  CHECK(b.resident);
  CHECK_FALSE(b.kept_out);
  CHECK(rig.host_waited);
  CHECK(b.arrival_pending);
  CHECK_FALSE(b.arrival_ahead);
  CHECK(rig.counters.swap_ins_on_demand == 1);
  CHECK(rig.counters.bytes_swapped_in == kSize);
  CHECK(rig.counters.host_bytes_now == 0);
  REQUIRE(rig.device.access(rig.program, ptr, kSize));  // its consumer, in the copy's stream order
  rig.device.synchronize();
  CHECK(rig.device.verify(ptr, kSize, 11));
  CHECK(rig.device.violations() == 0);

  // Ahead, on the swap-in stream: its users wait on the arrival event.
  rig.out_and_landed(ptr);
  CHECK(rig.in.ahead(ptr, b) == swapper::Arrival::back);
  CHECK(b.resident);
  REQUIRE(b.arrival_pending);
  CHECK(b.arrival_ahead);
  CHECK_FALSE(rig.device.event_completed(b.arrival));  // queued, not run
  CHECK(rig.counters.swap_ins_ahead == 1);
  rig.use_after_arrival(ptr, b, 11);

  // A pinned buffer never moves: read where it is.
  rig.out_and_landed(ptr);
  b.pinned = true;
  CHECK_FALSE(rig.in.now(ptr, b, rig.program));
  CHECK_FALSE(b.resident);
  CHECK(rig.counters.swap_ins_failed == 1);
  CHECK(rig.counters.host_bytes_now == kSize);
}

TEST_CASE("swap in: a copy back waits for its users' last work, not for later work on their stream",
          "[engine][swap][marks]") {
  MoveRig rig;
  const DevicePtr a = rig.add(41, 0);
  const DevicePtr c = rig.add(42, 1);
  const StreamId user = rig.stream();
  rig.out_and_landed(a);
  SwapBuffer& b = rig.buffers.at(a);

  // A kernel on `user` that may reach a reads its host copy; the host sees it done.
  rig.marks.user(b, user);
  REQUIRE(rig.device.access(user, a, kSize));
  rig.marks.queued();  // the thread calls in again: the kernel is queued
  rig.device.synchronize();
  // Later work on the same stream that does not reach a, still running.
  REQUIRE(rig.device.access(user, c, kSize));
  EventId later = 0;
  REQUIRE(rig.device.create_event(&later) == kSuccess);
  REQUIRE(rig.device.record_event(later, user) == kSuccess);

  rig.host_waited = false;
  CHECK(rig.in.ahead(a, b) == swapper::Arrival::back);
  CHECK(b.resident);
  CHECK(b.user_marks.empty());
  CHECK_FALSE(rig.host_waited);
  CHECK_FALSE(rig.device.event_completed(later));  // not waited for
  rig.use_after_arrival(a, b, 41);
  CHECK(rig.device.verify(c, kSize, 42));
  rig.device.destroy_event(later);
}

TEST_CASE("swap in: no copy back ahead while this thread's item that may reach the buffer is being issued",
          "[engine][swap][marks]") {
  MoveRig rig;
  const DevicePtr a = rig.add(45, 0);
  const StreamId user = rig.stream();
  rig.out_and_landed(a);
  rig.device.synchronize();
  SwapBuffer& b = rig.buffers.at(a);

  // The item may reach a and is not queued yet: a copy back on the side stream now would not be
  // ordered before it, and the remap would show it device memory still being written.
  rig.marks.user(b, user);
  bool waited = false;
  CHECK(rig.marks.reached(b, user, false, rig.waits, waited) == detail::UserMarks::Reach::not_yet);
  CHECK(rig.in.ahead(a, b) == swapper::Arrival::skipped);
  CHECK_FALSE(b.resident);
  CHECK_FALSE(waited);
  REQUIRE(rig.device.access(user, a, kSize));  // queued: it reads the host copy
  rig.marks.queued();
  rig.device.synchronize();
  CHECK(rig.in.ahead(a, b) == swapper::Arrival::back);
  CHECK(b.resident);
  rig.use_after_arrival(a, b, 45);
}

TEST_CASE("swap in: work that may read the host copy and has not run is still waited for", "[engine][swap][marks]") {
  MoveRig rig;
  const DevicePtr a = rig.add(43, 0);
  const DevicePtr c = rig.add(44, 1);
  const StreamId user = rig.stream();
  rig.out_and_landed(a);
  rig.device.synchronize();
  SwapBuffer& b = rig.buffers.at(a);

  // Two kernels on `user` that may reach a, then one that does not: none has run.
  for (int i = 0; i < 2; ++i) {
    rig.marks.user(b, user);
    REQUIRE(rig.device.access(user, a, kSize));
    rig.marks.queued();
  }
  REQUIRE(rig.device.access(user, c, kSize));
  EventId later = 0;
  REQUIRE(rig.device.create_event(&later) == kSuccess);
  REQUIRE(rig.device.record_event(later, user) == kSuccess);
  rig.marks.queued();  // nothing more to mark; the marks stay until their kernels have run
  CHECK(rig.marks.held() == 2);

  // Without a wait it stays out; on demand the host waits for the last kernel that may reach it.
  CHECK(rig.in.ahead(a, b) == swapper::Arrival::skipped);
  CHECK_FALSE(b.resident);
  rig.host_waited = false;
  REQUIRE(rig.in.now(a, b, rig.program));
  CHECK(b.resident);
  CHECK(rig.host_waited);
  CHECK_FALSE(rig.device.event_completed(later));  // only the users were waited for
  rig.marks.queued();
  CHECK(rig.marks.held() == 0);  // retired, their events back to the spares
  REQUIRE(rig.device.access(rig.program, a, kSize));
  rig.device.synchronize();
  CHECK(rig.device.verify(a, kSize, 43));
  CHECK(rig.device.violations() == 0);  // no unmap under a kernel still reading the host copy
  rig.device.destroy_event(later);
}

TEST_CASE("swap in: behind another thread's item on the same stream not queued yet, the stream is waited for whole",
          "[engine][swap][marks]") {
  MoveRig rig;
  const DevicePtr a = rig.add(45, 0);
  const DevicePtr c = rig.add(46, 1);
  const StreamId user = rig.stream();
  rig.out_and_landed(a);
  SwapBuffer& b = rig.buffers.at(a);

  // Another thread issues an item on `user` that may reach a (not queued: it has not called in
  // again), then this thread's item on `user` reaches a, is queued, and has run.
  std::thread([&] { rig.marks.user(b, user); }).join();
  rig.marks.user(b, user);
  REQUIRE(rig.device.access(user, a, kSize));
  rig.marks.queued();
  rig.device.synchronize();
  REQUIRE(rig.device.access(user, c, kSize));  // later work on the stream, still running

  // The other thread's item may be queued after this one's mark: no mark tells.
  CHECK(rig.in.ahead(a, b) == swapper::Arrival::skipped);
  CHECK_FALSE(b.resident);
  REQUIRE(rig.in.now(a, b, rig.program));
  rig.device.synchronize();
  CHECK(rig.device.verify(a, kSize, 45));
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("swap in on demand: with no device memory, what copies out still hold is settled first", "[engine][swap]") {
  MoveRig rig(2 * kSize);  // room for two buffers
  const DevicePtr a = rig.add(31, 0);
  const DevicePtr c = rig.add(32, 1);
  rig.out_and_landed(a);
  const DevicePtr d = rig.add(33, 2);           // the device is full again
  REQUIRE(rig.out.send(c, rig.buffers.at(c)));  // its memory is held until its copy has run
  SwapBuffer& b = rig.buffers.at(a);
  rig.host_waited = false;
  REQUIRE(rig.in.now(a, b, rig.program));
  CHECK(b.resident);
  CHECK(rig.host_waited);
  CHECK_FALSE(rig.buffers.at(c).leaving);  // settled for it
  CHECK(rig.counters.swap_ins_on_demand == 1);
  CHECK(rig.counters.swap_ins_failed == 0);
  rig.device.synchronize();
  CHECK(rig.device.verify(a, kSize, 31));
  CHECK(rig.device.verify(c, kSize, 32));
  CHECK(rig.device.verify(d, kSize, 33));
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("settling until the bytes fit: the oldest copies out only, the newer ones left in flight", "[engine][swap]") {
  MoveRig rig;
  const DevicePtr first = rig.add(41, 0);
  const DevicePtr second = rig.add(42, 1);
  const DevicePtr third = rig.add(43, 2);
  const DevicePtr stays = rig.add(44, 3);
  // Four copies out, each queued after more of the program's work; a free queued between the
  // first and the second (reached once the second has run).
  const DevicePtr freed = rig.add(45, 4);
  for (const DevicePtr ptr : {first, second, third, stays}) {
    REQUIRE(rig.out.send(ptr, rig.buffers.at(ptr)));
    if (ptr == first) {
      bool ok = false;
      const EventId reached = rig.events.take(rig.device, ok);
      REQUIRE(ok);
      REQUIRE(rig.device.access(rig.program, freed, kSize));
      REQUIRE(rig.device.record_event(reached, rig.program) == kSuccess);
      rig.frees.add_after(rig.buffers.extract(freed), reached);
    } else if (ptr != stays) {
      REQUIRE(rig.device.access(rig.program, stays, kSize));
    }
  }
  REQUIRE(rig.mover->device_bytes() == 5 * kSize);
  REQUIRE(rig.mover->leaving_bytes() == 4 * kSize);

  // One buffer's bytes must fit in a budget of five: the oldest copy is waited for, no other.
  const std::uint64_t stall = rig.waits.stall_ns();
  rig.host_waited = false;
  rig.frees.settle_until(4 * kSize);
  CHECK(rig.mover->device_bytes() == 4 * kSize);  // within the budget, and no further
  CHECK(rig.host_waited);
  CHECK(rig.waits.stall_ns() >= stall);
  CHECK_FALSE(rig.buffers.at(first).leaving);
  CHECK(rig.device.verify(first, kSize, 41));  // through its address, from the host copy
  for (const DevicePtr ptr : {second, third, stays}) {
    const SwapBuffer& b = rig.buffers.at(ptr);
    CHECK(b.leaving);
    CHECK_FALSE(rig.device.event_completed(b.left));  // still in flight on the GPU
  }
  CHECK(rig.mover->leaving_bytes() == 3 * kSize);
  CHECK_FALSE(rig.frees.empty());  // the free is queued after the first copy: not reached yet

  // Two buffers' more: the second copy too, and the free queued before it (reached, not waited
  // for).
  rig.frees.settle_until(2 * kSize);
  CHECK(rig.mover->device_bytes() == 2 * kSize);
  CHECK_FALSE(rig.buffers.at(second).leaving);
  CHECK(rig.frees.empty());
  CHECK(rig.buffers.at(third).leaving);
  CHECK(rig.buffers.at(stays).leaving);
  CHECK_FALSE(rig.device.event_completed(rig.buffers.at(stays).left));

  // Already within the limit: nothing is waited for.
  rig.host_waited = false;
  rig.frees.settle_until(2 * kSize);
  CHECK_FALSE(rig.host_waited);
  CHECK(rig.buffers.at(third).leaving);

  // No device bytes at all: every copy out.
  rig.frees.settle_until(0);
  CHECK(rig.mover->device_bytes() == 0);
  CHECK(rig.mover->leaving_bytes() == 0);
  for (const auto& [ptr, seed] : {std::pair{third, 43u}, std::pair{stays, 44u}}) {
    CHECK_FALSE(rig.buffers.at(ptr).leaving);
    CHECK(rig.device.verify(ptr, kSize, seed));
  }
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("swap frees: carried out once the GPU has reached them", "[engine][swap]") {
  MoveRig rig;
  const DevicePtr resident = rig.add(3);
  const DevicePtr out = rig.add(4, 1);
  rig.out_and_landed(out);
  const std::uint64_t held = rig.mover->device_bytes();
  REQUIRE(held == kSize);

  // Freed on the program's stream while its kernel may still run: not before the GPU gets there.
  bool ok = false;
  const EventId reached = rig.events.take(rig.device, ok);
  REQUIRE(ok);
  REQUIRE(rig.device.record_event(reached, rig.program) == kSuccess);
  rig.frees.add_after(rig.buffers.extract(resident), reached);
  CHECK(rig.frees.device_bytes() == kSize);
  rig.frees.collect(false);
  CHECK_FALSE(rig.frees.empty());
  CHECK(rig.frees.device_bytes() == kSize);
  // Out, with no copy back under way: nothing to wait for; its host bytes go.
  rig.frees.add_unordered(rig.buffers.extract(out));
  CHECK(rig.frees.device_bytes() == kSize);  // only the resident one's
  rig.frees.collect(false);
  CHECK(rig.counters.host_bytes_now == 0);
  CHECK_FALSE(rig.frees.empty());  // the resident one still waits

  const std::size_t spare = rig.events.spare.size();
  rig.device.synchronize();
  rig.frees.collect(false);
  CHECK(rig.frees.empty());
  CHECK(rig.frees.device_bytes() == 0);
  CHECK(rig.events.spare.size() == spare + 1);  // its event is given back
  rig.frees.settle(true);
  CHECK(rig.mover->device_bytes() == 0);
  CHECK(rig.device.violations() == 0);
}

// A buffer brought back while its copy out is still under way keeps its device memory (no copy
// back), which that copy still reads: the free waits for the copy, even once the GPU has reached
// the free on the program's stream (the copy runs on the swap's side stream).
TEST_CASE("swap frees: one brought back while its copy out ran is released only after that copy", "[engine][swap]") {
  MoveRig rig;
  const DevicePtr ptr = rig.add(6);
  SwapBuffer& b = rig.buffers.at(ptr);
  REQUIRE(rig.out.send(ptr, b));
  REQUIRE(b.leaving);
  REQUIRE(rig.mover->move_in(ptr, b, rig.program, detail::CopyWatch::none()));
  CHECK(b.resident);
  CHECK_FALSE(b.leaving);
  CHECK(rig.mover->copy_out_reads(ptr, b));
  CHECK(rig.device.verify(ptr, kSize, 6));

  bool ok = false;
  const EventId reached = rig.events.take(rig.device, ok);
  REQUIRE(ok);
  REQUIRE(rig.device.record_event(reached, rig.program) == kSuccess);
  rig.frees.add_after(rig.buffers.extract(ptr), reached);
  REQUIRE(rig.device.synchronize_event(reached) == kSuccess);  // the program's stream, not the side stream
  const std::uint64_t stalled = rig.waits.stall_ns();
  rig.frees.collect(false);
  CHECK(rig.frees.empty());
  CHECK(rig.waits.stall_ns() > stalled);  // it waited for the copy out
  CHECK(rig.device.violations() == 0);    // no unmap under that copy
  rig.frees.settle(true);
  CHECK(rig.mover->device_bytes() == 0);
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("swap schedule applier: each trigger once an iteration, skipping what may not move", "[engine][swap]") {
  MoveRig rig;
  const DevicePtr a = rig.add(21, 0);
  const DevicePtr c = rig.add(22, 1);
  // A 10-item iteration: buffer 0 out after item 1, back at item 7; buffer 1 out after item 3,
  // back at item 8.
  const swapper::Schedule planned{"ours", {test::swap_one_ahead(0, 1, 8), test::swap_one_ahead(1, 3, 9)}};
  const detail::SwapSchedule schedule(planned, {BufferName{Birth::current, 0}, BufferName{Birth::current, 1}}, 10,
                                      {kSize, kSize}, 0);
  detail::InFlightItems in_flight;
  detail::ScheduleApplier applier(rig.out, rig.in, rig.names, rig.buffers, in_flight, rig.counters, false,
                                  ~std::uint64_t{0});
  SwapBuffer& ba = rig.buffers.at(a);
  SwapBuffer& bc = rig.buffers.at(c);

  applier.outs(schedule, 1);
  CHECK(rig.counters.swap_outs == 0);  // nothing due
  applier.outs(schedule, 2);
  CHECK_FALSE(ba.resident);
  CHECK(ba.held_out);
  CHECK(rig.counters.swap_outs_scheduled == 1);
  // Once an item: brought back by hand, the same item's trigger does not send it out again...
  rig.frees.settle(true);
  REQUIRE(rig.in.now(a, ba, rig.program));
  applier.outs(schedule, 2);
  CHECK(ba.resident);
  CHECK(rig.counters.swap_outs_scheduled == 1);
  // ...until the next iteration.
  applier.new_iteration();
  applier.outs(schedule, 2);
  CHECK_FALSE(ba.resident);
  CHECK(rig.counters.swap_outs_scheduled == 2);

  // A buffer a work item still being issued touches stays.
  in_flight.begin(rig.program).bases.push_back(c);
  applier.outs(schedule, 4);
  CHECK(bc.resident);
  CHECK(rig.counters.swap_outs_scheduled == 2);
  in_flight.queued();

  // The copy in at item 7: no room, not brought back (but the rule may now); then with room, on
  // the swap-in stream after the program's stream reached the item.
  rig.frees.settle(true);
  std::uint64_t asked_lead = 0;
  applier.apply(schedule, 7, rig.program, [&](const SwapBuffer& b, std::uint64_t lead) {
    CHECK(&b == &ba);
    asked_lead = lead;
    return false;
  });
  CHECK(asked_lead == schedule.lead(0));
  CHECK_FALSE(ba.resident);
  CHECK_FALSE(ba.held_out);
  ba.held_out = true;
  applier.apply(schedule, 7, rig.program, [](const SwapBuffer&, std::uint64_t) { return true; });
  CHECK(ba.resident);
  CHECK_FALSE(ba.held_out);
  CHECK(ba.scheduled_in == 1);  // 1 + its swap
  CHECK(ba.arrival_pending);
  CHECK(rig.counters.swap_ins_scheduled == 1);
  rig.use_after_arrival(a, ba, 21);

  // Past the host limit: no copy out.
  detail::ScheduleApplier limited(rig.out, rig.in, rig.names, rig.buffers, in_flight, rig.counters, false, MiB);
  limited.outs(schedule, 2);
  CHECK(ba.resident);
  CHECK(rig.counters.swap_outs_scheduled == 2);
}
