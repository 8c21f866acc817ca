// Trace file I/O throughput (format v1): how fast threads can stream events into a trace
// (goal: >= 20 M events/s per thread) and how fast the reader walks one back (events/s, MB/s).
// The events are the mix the interposer produces in a training loop: alloc, launch touching
// two buffers, free, and now and then a copy. Files go to $TMPDIR (default /tmp).
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "memtool/trace/reader.hpp"
#include "memtool/trace/writer.hpp"

using namespace memtool::trace;

namespace {

std::string temp_trace(const char* stem) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/memtool-bench-" + stem + "-" + std::to_string(::getpid()) +
         ".trace";
}

// Writes one step of the loop (4 events: alloc, launch, free, and a copy every 4th step).
// Returns the number of events written.
int write_step(TraceWriter& w, StringId kernel, std::uint32_t thread, std::uint64_t step, std::uint64_t& seq,
               std::uint64_t& time) {
  const ThreadId tid{thread};
  const StreamHandle stream{0x5555000000ULL + thread};
  const std::uint64_t a = 0x7f3a00000000ULL + (step % 256) * 0x200000;
  const std::uint64_t touched[] = {a, a ^ 0x400000};
  w.write(AllocEvent{{++seq, time += 700, tid}, a, 1 << 20, MemoryKind::device, stream, {}});
  w.write(LaunchEvent{{++seq, time += 1100, tid}, kernel, stream, touched});
  w.write(FreeEvent{{++seq, time += 500, tid}, a, MemoryKind::device, stream});
  if (step % 4 != 0) return 3;
  w.write(CopyEvent{{++seq, time += 900, tid}, a, 0x55aa00000000ULL, 4096, CopyKind::h2d, true, stream});
  return 4;
}

std::unique_ptr<TraceWriter> g_writer;
std::string g_write_path;

void BM_TraceWrite(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_write_path = temp_trace("write");
    std::string error;
    g_writer = TraceWriter::open(g_write_path, &error);
    if (g_writer == nullptr) state.SkipWithError(error.c_str());
  }
  std::uint64_t seq = 0;
  std::uint64_t time = 0;
  std::uint64_t step = 0;
  std::int64_t events = 0;
  StringId kernel;
  for (auto _ : state) {
    if (!kernel.valid()) kernel = g_writer->intern("void at::native::elementwise_kernel<128, 2>");
    events += write_step(*g_writer, kernel, static_cast<std::uint32_t>(state.thread_index() + 1), step++, seq, time);
  }
  state.SetItemsProcessed(events);
  state.counters["events/s/thread"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kAvgThreads);
  if (state.thread_index() == 0) {
    g_writer->close();
    state.counters["bytes/event"] =
        static_cast<double>(g_writer->bytes_written()) / static_cast<double>(g_writer->records_written());
    g_writer.reset();
    std::remove(g_write_path.c_str());
  }
}
BENCHMARK(BM_TraceWrite)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

class CountingVisitor : public EventVisitor {
 public:
  std::uint64_t sum = 0;
  void on_alloc(const AllocEvent& e) override { sum += e.size; }
  void on_free(const FreeEvent& e) override { sum += e.address; }
  void on_launch(const LaunchEvent& e) override { sum += e.touched.size(); }
  void on_copy(const CopyEvent& e) override { sum += e.bytes; }
};

void BM_TraceRead(benchmark::State& state) {
  const std::string path = temp_trace("read");
  std::uint64_t file_events = 0;
  {
    std::string error;
    auto w = TraceWriter::open(path, &error);
    if (w == nullptr) {
      state.SkipWithError(error.c_str());
      return;
    }
    const StringId kernel = w->intern("void at::native::elementwise_kernel<128, 2>");
    std::uint64_t seq = 0;
    std::uint64_t time = 0;
    for (std::uint64_t step = 0; file_events < static_cast<std::uint64_t>(state.range(0)); ++step) {
      file_events += static_cast<std::uint64_t>(write_step(*w, kernel, 7, step, seq, time));
    }
    w->close();
  }
  std::uint64_t bytes = 0;
  std::uint64_t events = 0;
  for (auto _ : state) {
    CountingVisitor v;
    const TraceReadResult r = read_trace(path, v);
    benchmark::DoNotOptimize(v.sum);
    bytes += r.bytes_read;
    events += r.events;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  std::remove(path.c_str());
}
BENCHMARK(BM_TraceRead)->Arg(4'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
