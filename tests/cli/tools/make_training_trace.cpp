// Writes a synthetic training trace of any size, for the large-trace export test (tests/cli) and
// the export benchmark (bench/export_memory.sh):
// 64 persistent weights, then ITERATIONS iterations each allocating BUFFERS activations of
// varied sizes on two streams, a kernel launch touching each, and frees in reverse order, with
// an iteration mark per iteration. About 3 x BUFFERS events per iteration.
//   make_training_trace OUT.trace ITERATIONS BUFFERS
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "memtool/trace/writer.hpp"

int main(int argc, char** argv) {
  using namespace memtool::trace;
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_training_trace OUT.trace ITERATIONS BUFFERS\n");
    return 2;
  }
  const std::uint64_t iterations = std::strtoull(argv[2], nullptr, 10);
  const std::uint64_t buffers = std::strtoull(argv[3], nullptr, 10);
  std::string error;
  auto w = TraceWriter::open(argv[1], &error);
  if (!w) {
    std::fprintf(stderr, "make_training_trace: %s\n", error.c_str());
    return 1;
  }
  std::vector<StringId> kernels;
  for (int k = 0; k < 32; ++k) kernels.push_back(w->intern("kernel_" + std::to_string(k)));
  std::uint64_t seq = 0;
  std::uint64_t time = 1'000'000;
  const auto header = [&] {
    ++seq;
    time += 800;
    return EventHeader{seq, time, ThreadId{1}};
  };
  constexpr std::uint64_t kWeights = 0x7f0000000000, kActivations = 0x7f4000000000;
  for (std::uint64_t i = 0; i < 64; ++i) {
    w->write(AllocEvent{
        header(), kWeights + i * (std::uint64_t{8} << 20), (i % 7 + 1) << 20, MemoryKind::device, StreamHandle{0}, {}});
  }
  std::vector<std::uint64_t> live;
  for (std::uint64_t it = 0; it < iterations; ++it) {
    w->write(IterationMarkEvent{header(), it});
    for (std::uint64_t b = 0; b < buffers; ++b) {
      const std::uint64_t address = kActivations + b * (std::uint64_t{4} << 20);
      const StreamHandle stream{b % 3 == 0 ? 0x5555000000ULL : 0};
      w->write(AllocEvent{header(), address, 4096 + (b * 7919 % 4096) * 512, MemoryKind::device, stream, {}});
      const std::uint64_t touched[] = {address, kWeights + (b % 64) * (std::uint64_t{8} << 20)};
      w->write(LaunchEvent{header(), kernels[b % kernels.size()], stream, touched});
      live.push_back(address);
    }
    while (!live.empty()) {
      w->write(FreeEvent{header(), live.back(), MemoryKind::device, StreamHandle{0}});
      live.pop_back();
    }
  }
  return w->close() ? 0 : 1;
}
