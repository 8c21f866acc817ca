// The identity of per-thread default streams (per_thread_streams.hpp): each thread's per-thread
// stream is recorded under an id of its own, the same for the handle CU_STREAM_PER_THREAD and a
// per-thread entry point's null stream, distinct across threads and from every real handle, and
// named back as the handle 2 only on its own thread.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "memtool/interpose/handlers.hpp"
#include "memtool/interpose/per_thread_streams.hpp"

using namespace memtool::interpose;

namespace {
std::uint64_t handle_value(CUstream s) { return reinterpret_cast<std::uintptr_t>(s); }
}  // namespace

TEST_CASE("a thread's per-thread stream has one id, tagged, never a handle's value", "[interpose][per_thread]") {
  const std::uint64_t own = own_per_thread_stream();
  CHECK(own == own_per_thread_stream());
  CHECK(is_per_thread_stream(own));
  CHECK_FALSE(is_foreign_per_thread_stream(own));
  CHECK(own != handle_value(CU_STREAM_PER_THREAD));
  CHECK(own != handle_value(CU_STREAM_LEGACY));
  CHECK(own != 0);
  // Handles are user-space addresses or cuda.h's small constants: none carries the tag.
  int on_stack = 0;
  CHECK_FALSE(is_per_thread_stream(reinterpret_cast<std::uintptr_t>(&on_stack)));
  CHECK_FALSE(is_per_thread_stream(handle_value(CU_STREAM_PER_THREAD)));
  CHECK_FALSE(is_per_thread_stream(0x00007FFF'FFFF'F000ull));

  // The handle 2 through any entry point, and a per-thread entry point's null stream.
  CHECK(recorded_stream(CU_STREAM_PER_THREAD, Variant::plain) == own);
  CHECK(recorded_stream(CU_STREAM_PER_THREAD, Variant::ptsz) == own);
  CHECK(recorded_stream(nullptr, Variant::ptsz) == own);
  CHECK(recorded_stream(nullptr, Variant::ptds) == own);
  // The plain null stream and CU_STREAM_LEGACY are the legacy stream; a real stream is itself.
  CHECK(recorded_stream(nullptr, Variant::plain) == 0);
  CHECK(recorded_stream(CU_STREAM_LEGACY, Variant::ptsz) == handle_value(CU_STREAM_LEGACY));
  const auto real = reinterpret_cast<CUstream>(0x5510);
  CHECK(recorded_stream(real, Variant::ptsz) == 0x5510);

  // Named back: the handle 2 on its own thread; a real stream as it is.
  CHECK(stream_handle(own) == CU_STREAM_PER_THREAD);
  CHECK(stream_handle(0x5510) == real);
  CHECK(stream_handle(0) == nullptr);
}

TEST_CASE("every thread's per-thread stream is a stream of its own", "[interpose][per_thread]") {
  constexpr int kThreads = 8;
  std::vector<std::uint64_t> ids(kThreads);
  std::vector<std::uint64_t> nulls(kThreads);
  std::vector<int> named_own(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ids[t] = recorded_stream(CU_STREAM_PER_THREAD, Variant::plain);
      nulls[t] = recorded_stream(nullptr, Variant::ptds);
      named_own[t] = stream_handle(ids[t]) == CU_STREAM_PER_THREAD ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  const std::set<std::uint64_t> distinct(ids.begin(), ids.end());
  CHECK(distinct.size() == kThreads);
  CHECK(distinct.count(own_per_thread_stream()) == 0);
  for (int t = 0; t < kThreads; ++t) {
    CHECK(nulls[t] == ids[t]);
    CHECK(named_own[t] == 1);
    CHECK(is_per_thread_stream(ids[t]));
    // From this thread, another thread's per-thread stream has no name but the legacy stream.
    CHECK(is_foreign_per_thread_stream(ids[t]));
    CHECK(stream_handle(ids[t]) == CU_STREAM_LEGACY);
  }
}
