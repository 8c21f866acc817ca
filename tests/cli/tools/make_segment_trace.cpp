// Writes a memtool trace of what a program behind a caching allocator shows the driver: a few
// large cuMemAlloc calls in whole 2 MiB units (PyTorch's 2 MiB and 20 MiB segments), launches
// in between, one segment freed; or, with `arena`, the one allocation of most of the device a BFC
// allocator (JAX, TensorFlow) makes. `memtool report` must warn about both (tests/cli).
//   make_segment_trace OUT.trace [arena]
#include <cstdio>
#include <string>
#include <vector>

#include "memtool/trace/writer.hpp"

int main(int argc, char** argv) {
  using namespace memtool::trace;
  const bool arena = argc == 3 && std::string(argv[2]) == "arena";
  if (argc != 2 && !arena) {
    std::fprintf(stderr, "usage: make_segment_trace OUT.trace [arena]\n");
    return 2;
  }
  std::string error;
  auto writer = TraceWriter::open(argv[1], &error);
  if (!writer) {
    std::fprintf(stderr, "make_segment_trace: %s\n", error.c_str());
    return 1;
  }
  const StringId kernel = writer->intern("vectorized_elementwise_kernel");
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  const std::vector<std::uint64_t> sizes =
      arena ? std::vector<std::uint64_t>{60 * 1024 * kMiB}
            : std::vector<std::uint64_t>{2 * kMiB, 20 * kMiB, 20 * kMiB, 42 * kMiB, 2 * kMiB};
  std::uint64_t seq = 0;
  std::uint64_t address = 0x7f0000000000;
  const auto header = [&] {
    ++seq;
    return EventHeader{seq, 1000 * seq, ThreadId{1}};
  };
  for (std::uint64_t size : sizes) {
    writer->write(AllocEvent{header(), address, size, MemoryKind::device, StreamHandle{0}, StackId{}});
    const std::uint64_t touched[] = {address};
    writer->write(LaunchEvent{header(), kernel, StreamHandle{0}, touched});
    address += size;
  }
  // PyTorch keeps its segments to the end; empty_cache() would free one.
  writer->write(FreeEvent{header(), 0x7f0000000000, MemoryKind::device, StreamHandle{0}});
  return writer->close() ? 0 : 1;
}
