// TraceModel: buffer ids, address reuse, interior pointers, anomalies, touches, strings, and
// the signature builder's tokens agreeing with the offline ones.
#include <catch2/catch.hpp>

#include <vector>

#include "memtool/trace/iterations.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/signature.hpp"

using namespace memtool::trace;

namespace {

AllocEvent alloc(std::uint64_t address, std::uint64_t size) {
  AllocEvent e;
  e.address = address;
  e.size = size;
  return e;
}
FreeEvent release(std::uint64_t address) {
  FreeEvent e;
  e.address = address;
  return e;
}
LaunchEvent launch(std::uint32_t kernel, const std::vector<std::uint64_t>& touched) {
  LaunchEvent e;
  e.kernel = StringId{kernel};
  e.touched = touched;
  return e;
}

}  // namespace

TEST_CASE("model gives every allocation a new buffer id", "[model]") {
  TraceModel m;
  m.on_alloc(alloc(0x1000, 256));  // event 0, buffer 0
  m.on_free(release(0x1000));      // event 1
  m.on_alloc(alloc(0x1000, 512));  // event 2, buffer 1: same address, new buffer
  REQUIRE(m.buffer_count() == 2);
  CHECK(m.buffer(BufferId{0}).alloc_event == 0);
  CHECK(m.buffer(BufferId{0}).free_event == 1);
  CHECK(m.buffer(BufferId{1}).alloc_event == 2);
  CHECK_FALSE(m.buffer(BufferId{1}).freed());
  CHECK(m.event(1).buffer == BufferId{0});
  CHECK(m.event(1).bytes == 256);  // a free carries the freed buffer's size
  CHECK(m.event(2).bytes == 512);
  CHECK(m.stats().allocs == 2);
  CHECK(m.stats().frees == 1);
}

TEST_CASE("model counts anomalies without failing", "[model]") {
  TraceModel m;
  m.on_free(release(0xdead));      // unknown address
  m.on_alloc(alloc(0x2000, 64));   // buffer 0
  m.on_alloc(alloc(0x2000, 128));  // over a live address: buffer 0 ends here
  m.on_free(release(0x2010));      // interior pointer: not a valid free
  CHECK(m.stats().unknown_frees == 2);
  CHECK_FALSE(m.event(0).buffer.valid());
  CHECK(m.stats().reused_live_addresses == 1);
  CHECK(m.buffer(BufferId{0}).free_event == 2);
  CHECK(m.buffer(BufferId{0}).ended_by_reuse);
  CHECK(m.live_buffer_at(0x2000) == BufferId{1});
}

TEST_CASE("model resolves base and interior pointers of launches", "[model]") {
  TraceModel m;
  m.on_string(StringId{3}, "gemm");
  m.on_alloc(alloc(0x1000, 0x100));  // buffer 0: [0x1000, 0x1100)
  m.on_alloc(alloc(0x1100, 0x10));   // buffer 1: [0x1100, 0x1110)
  m.on_alloc(alloc(0x5000, 0));      // buffer 2: zero-sized, only its base matches
  m.on_launch(launch(3, {0x1000, 0x10ff, 0x1108, 0x5000, 0x5001, 0x1110, 0x10}));
  const auto touched = m.touched(3);
  REQUIRE(touched.size() == 4);
  CHECK(touched[0] == BufferId{0});
  CHECK(touched[1] == BufferId{0});
  CHECK(touched[2] == BufferId{1});
  CHECK(touched[3] == BufferId{2});
  CHECK(m.stats().unresolved_touches == 3);
  CHECK(m.event(3).detail == 3);
  CHECK(m.string(StringId{3}) == "gemm");
  CHECK(m.string(StringId{4}).empty());
  CHECK(m.touched(0).empty());
  // Freed buffers are no longer found.
  m.on_free(release(0x1000));
  m.on_launch(launch(3, {0x1000}));
  CHECK(m.touched(5).empty());
}

TEST_CASE("model resolves copies and memsets; keeps marks and kinds", "[model]") {
  TraceModel m;
  m.on_alloc(alloc(0x1000, 64));
  CopyEvent c;
  c.dst = 0x1008;
  c.src = 0x7fff0000;  // pageable host memory: not a buffer, not an anomaly
  c.bytes = 32;
  c.kind = CopyKind::h2d;
  m.on_copy(c);
  MemsetEvent s;
  s.dst = 0x1000;
  s.bytes = 64;
  m.on_memset(s);
  IterationMarkEvent mark;
  mark.index = 5;
  m.on_iteration_mark(mark);
  SyncEvent sync;
  m.on_sync(sync);
  CHECK(m.touched(1).size() == 1);
  CHECK(m.touched(2).size() == 1);
  CHECK(m.stats().unresolved_touches == 0);
  REQUIRE(m.marks().size() == 1);
  CHECK(m.marks()[0] == 3);
  CHECK(m.event(3).kind == EventKind::iteration_mark);
  CHECK(m.event(3).detail == 5);
  CHECK(m.event(4).kind == EventKind::sync);
  CHECK(m.event_count() == 5);
}

TEST_CASE("online signature builder and offline tokens agree", "[model][signature]") {
  TraceModel m;
  SignatureBuilder online;
  std::vector<std::uint64_t> expected;
  const auto a = [&](std::uint64_t address, std::uint64_t size) {
    const AllocEvent e = alloc(address, size);
    m.on_alloc(e);
    expected.push_back(online.on_alloc(e));
  };
  const auto f = [&](std::uint64_t address) {
    const FreeEvent e = release(address);
    m.on_free(e);
    expected.push_back(online.on_free(e));
  };
  a(0x1000, 100);
  a(0x2000, 200);
  f(0x1000);
  const std::vector<std::uint64_t> touched{0x2000};
  const LaunchEvent k = launch(1, touched);
  m.on_launch(k);
  expected.push_back(online.on_launch(k));
  f(0x2000);
  f(0x3000);  // unknown
  SyncEvent sync;
  m.on_sync(sync);  // no token
  std::vector<std::uint64_t> token_events;
  CHECK(signature_tokens(m, {}, &token_events) == expected);
  CHECK(token_events == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5});
  CHECK(online.live_buffers() == 0);
  // Frees of equal sizes give equal tokens; different kinds never collide.
  CHECK(SignatureBuilder::free_token(100) == expected[2]);
  CHECK(SignatureBuilder::alloc_token(100, MemoryKind::device) != SignatureBuilder::free_token(100));
  CHECK(SignatureBuilder::alloc_token(100, MemoryKind::device) !=
        SignatureBuilder::alloc_token(100, MemoryKind::managed));
  CHECK(expected[5] == SignatureBuilder::unknown_free_token());
  // Copies are optional.
  SignatureOptions no_copies;
  no_copies.include_copies = false;
  CopyEvent c;
  CHECK_FALSE(SignatureBuilder(no_copies).on_copy(c));
  CHECK(SignatureBuilder().on_copy(c));
}
