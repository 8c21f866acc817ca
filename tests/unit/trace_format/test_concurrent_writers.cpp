// Many threads, one writer: 8 threads write interleaved events (and intern names at the same
// time) through a small buffer that flushes often; every record must arrive intact and each
// thread's records in the order that thread wrote them. Once with the writer's own lock, once
// opened with caller_serialises and the callers' lock around each call (as the recorder does).
#include <catch2/catch.hpp>

#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {

constexpr std::uint32_t kThreads = 8;
constexpr std::uint64_t kStepsPerThread = 3000;  // 3 events each

// Everything an event carries is derived from (thread, step), so the reader can check it.
std::uint64_t address_of(std::uint32_t thread, std::uint64_t step) {
  return 0x7f0000000000ULL + (std::uint64_t{thread} << 32) + step * 0x1000;
}

class PerThreadChecker : public EventVisitor {
 public:
  std::map<std::uint32_t, std::uint64_t> next_step;  // thread → next expected step
  std::map<std::uint32_t, StringId> kernel_of;       // thread → its kernel name id
  std::map<std::uint32_t, std::string> names;        // string id → text
  std::uint64_t bad = 0;

  void on_string(StringId id, std::string_view text) override { names[id.value()] = text; }
  void on_alloc(const AllocEvent& e) override {
    const std::uint32_t t = e.header.thread.value();
    const std::uint64_t step = e.header.seq;
    if (step != next_step[t] || e.address != address_of(t, step) || e.size != step + t || e.stream.value() != t ||
        e.header.time_ns != step * 3) {
      ++bad;
    }
  }
  void on_launch(const LaunchEvent& e) override {
    const std::uint32_t t = e.header.thread.value();
    const std::uint64_t step = e.header.seq;
    const auto it = names.find(e.kernel.value());
    if (step != next_step[t] || it == names.end() || it->second != fmt::format("kernel_{}", t) ||
        e.touched.size() != 2 || e.touched[0] != address_of(t, step) || e.touched[1] != address_of(t, step / 2) ||
        e.stream.value() != t) {
      ++bad;
    }
  }
  void on_free(const FreeEvent& e) override {
    const std::uint32_t t = e.header.thread.value();
    const std::uint64_t step = e.header.seq;
    if (step != next_step[t] || e.address != address_of(t, step) || e.stream.value() != t) ++bad;
    next_step[t] = step + 1;
  }
};

}  // namespace

TEST_CASE("8 threads write concurrently and every record arrives intact", "[trace_format]") {
  const bool caller_serialises = GENERATE(false, true);
  INFO("caller_serialises " << caller_serialises);
  TempPath path("threads");
  std::string error;
  TraceWriter::Options options{4096};
  options.caller_serialises = caller_serialises;
  auto w = TraceWriter::open(path.str(), options, &error);
  REQUIRE(w != nullptr);

  std::mutex callers;
  auto serialise = [&] { return caller_serialises ? std::unique_lock(callers) : std::unique_lock<std::mutex>(); };
  std::vector<std::thread> threads;
  for (std::uint32_t t = 1; t <= kThreads; ++t) {
    threads.emplace_back([&w, &serialise, t] {
      const ThreadId tid{t};
      const StreamHandle stream{t};
      for (std::uint64_t step = 0; step < kStepsPerThread; ++step) {
        // Interned on every launch: the first call defines it, racing with other threads.
        StringId kernel;
        {
          const auto lock = serialise();
          kernel = w->intern(fmt::format("kernel_{}", t));
        }
        const std::uint64_t a = address_of(t, step);
        const std::uint64_t touched[] = {a, address_of(t, step / 2)};
        {
          const auto lock = serialise();
          w->write(AllocEvent{{step, step * 3, tid}, a, step + t, MemoryKind::device, stream, {}});
        }
        {
          const auto lock = serialise();
          w->write(LaunchEvent{{step, step * 3, tid}, kernel, stream, touched});
        }
        {
          const auto lock = serialise();
          w->write(FreeEvent{{step, step * 3, tid}, a, MemoryKind::device, stream});
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(w->close());

  PerThreadChecker check;
  const TraceReadResult r = read_trace(path.str(), check);
  CHECK(r.clean_end);
  CHECK(r.events == kThreads * kStepsPerThread * 3);
  CHECK(check.bad == 0);
  CHECK(check.names.size() == kThreads);  // each name defined exactly once
  REQUIRE(check.next_step.size() == kThreads);
  for (const auto& [thread, next] : check.next_step) {
    INFO("thread " << thread);
    CHECK(next == kStepsPerThread);
  }
}
