// Writes a trace of N one-byte device buffers, allocated one after another and never freed
// (issue 39, item 3: what a command's memory grows with). Usage: many_buffers_trace PATH N
#include <cstdio>
#include <cstdlib>
#include <string>

#include "memtool/trace/writer.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: many_buffers_trace PATH N\n");
    return 2;
  }
  const unsigned long long count = std::strtoull(argv[2], nullptr, 10);
  std::string error;
  auto writer = memtool::trace::TraceWriter::open(argv[1], &error);
  if (!writer) {
    std::fprintf(stderr, "many_buffers_trace: %s\n", error.c_str());
    return 1;
  }
  constexpr std::uint64_t kBase = 0x7f0000000000;
  constexpr std::uint64_t kStride = 512;  // the driver's alignment
  for (std::uint64_t i = 0; i < count; ++i) {
    writer->write(memtool::trace::AllocEvent{{i, 1000 * i, memtool::trace::ThreadId{1}},
                                             kBase + kStride * i,
                                             1,
                                             memtool::trace::MemoryKind::device,
                                             memtool::trace::StreamHandle{0},
                                             {}});
  }
  return writer->close() ? 0 : 1;
}
