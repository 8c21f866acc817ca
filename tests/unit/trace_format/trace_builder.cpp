// Test helpers: see trace_builder.hpp.
#include "trace_builder.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>
#include <unistd.h>

namespace memtool::trace::test {

namespace {

std::string header_text(const EventHeader& h) {
  return fmt::format("seq={} t={} thread={}", h.seq, h.time_ns, h.thread.value());
}

}  // namespace

std::string describe(const AllocEvent& e) {
  return fmt::format("alloc {} addr={:#x} size={} kind={} stream={:#x} stack={}", header_text(e.header), e.address,
                     e.size, to_string(e.kind), e.stream.value(), e.stack.value());
}
std::string describe(const FreeEvent& e) {
  return fmt::format("free {} addr={:#x} kind={} stream={:#x}", header_text(e.header), e.address, to_string(e.kind),
                     e.stream.value());
}
std::string describe(const LaunchEvent& e) {
  std::string touched;
  for (const std::uint64_t a : e.touched) touched += fmt::format(" {:#x}", a);
  return fmt::format("launch {} kernel={} stream={:#x} touched=[{} ]", header_text(e.header), e.kernel.value(),
                     e.stream.value(), touched);
}
std::string describe(const GraphLaunchEvent& e) {
  std::string touched;
  for (const std::uint64_t a : e.touched) touched += fmt::format(" {:#x}", a);
  return fmt::format("graph_launch {} exec={:#x} stream={:#x} touched=[{} ] nodes_read={}", header_text(e.header),
                     e.graph_exec, e.stream.value(), touched, e.nodes_read);
}
std::string describe(const CopyEvent& e) {
  return fmt::format("copy {} dst={:#x} src={:#x} bytes={} kind={} stream={:#x} async={}", header_text(e.header), e.dst,
                     e.src, e.bytes, to_string(e.kind), e.stream.value(), e.async);
}
std::string describe(const MemsetEvent& e) {
  return fmt::format("memset {} dst={:#x} bytes={} stream={:#x} async={}", header_text(e.header), e.dst, e.bytes,
                     e.stream.value(), e.async);
}
std::string describe(const SyncEvent& e) {
  return fmt::format("sync {} kind={} stream={:#x}", header_text(e.header), to_string(e.kind), e.stream.value());
}
std::string describe(const IterationMarkEvent& e) {
  return fmt::format("iteration_mark {} index={}", header_text(e.header), e.index);
}
std::string describe(const StreamCreateEvent& e) {
  return fmt::format("stream_create {} stream={:#x} flags={} priority={}", header_text(e.header), e.stream.value(),
                     e.flags, e.priority);
}
std::string describe_stack(StackId id, std::span<const StackFrame> frames) {
  std::string s = fmt::format("stack {} [", id.value());
  for (const StackFrame& f : frames) {
    s += fmt::format(" {:#x}/{}/{}/{}", f.ip, f.function.value(), f.file.value(), f.line);
  }
  return s + " ]";
}
std::string describe(const ModuleMapping& m) {
  return fmt::format("module {:#x}-{:#x} off={:#x} path={}", m.start, m.end, m.file_offset, m.path.value());
}

void RecordingVisitor::on_metadata(std::string_view key, std::string_view value) {
  lines.push_back(fmt::format("metadata {}={}", key, value));
}
void RecordingVisitor::on_string(StringId id, std::string_view text) {
  lines.push_back(fmt::format("string {}={}", id.value(), text));
}
void RecordingVisitor::on_stack(StackId id, std::span<const StackFrame> frames) {
  lines.push_back(describe_stack(id, frames));
}
void RecordingVisitor::on_module(const ModuleMapping& module) { lines.push_back(describe(module)); }

TempPath::TempPath(std::string_view stem) {
  static int counter = 0;
  const char* dir = std::getenv("TMPDIR");
  path_ = fmt::format("{}/memtool-{}-{}-{}.trace", dir != nullptr ? dir : "/tmp", stem, ::getpid(), counter++);
}
TempPath::~TempPath() { std::remove(path_.c_str()); }

std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) out[i] = static_cast<std::byte>(chars[i]);
  return out;
}

void write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<std::string> write_sample_trace(TraceWriter& w, const std::function<void()>& after_record) {
  std::vector<std::string> expect;
  auto step = [&] {
    if (after_record) after_record();
  };
  auto add = [&](const auto& event) {
    w.write(event);
    expect.push_back(describe(event));
    step();
  };
  w.write_metadata("pid", "4242");
  expect.emplace_back("metadata pid=4242");
  step();
  const StringId gemm = w.intern("ampere_sgemm_128x64_nn");
  expect.push_back(fmt::format("string {}=ampere_sgemm_128x64_nn", gemm.value()));
  step();
  const StringId file = w.intern("train.py");
  expect.push_back(fmt::format("string {}=train.py", file.value()));
  step();
  const StackFrame frames[] = {{0x7f0000001234, gemm, file, 12}, {0x7f0000000100, {}, {}, 0}};
  const StackId stack = w.intern_stack(frames);
  expect.push_back(describe_stack(stack, frames));
  step();
  const ModuleMapping module{0x7f0000000000, 0x7f0000100000, 0x1000, file};
  w.write_module(module);
  expect.push_back(describe(module));
  step();

  const StreamHandle s1{0x55550000a000};
  add(StreamCreateEvent{{1, 1000, ThreadId{77}}, s1, 1, -2});
  add(AllocEvent{{2, 1010, ThreadId{77}}, 0x7f1200000000, 4096, MemoryKind::device, s1, stack});
  add(AllocEvent{{3, 1020, ThreadId{78}}, 0x7f1200200000, 1 << 20, MemoryKind::async, s1, {}});
  const std::uint64_t touched[] = {0x7f1200200000, 0x7f1200000000};
  add(LaunchEvent{{4, 1030, ThreadId{77}}, gemm, s1, touched});
  add(CopyEvent{{5, 1040, ThreadId{77}}, 0x7f1200000000, 0x5555aaaa0000, 4096, CopyKind::h2d, true, s1});
  add(MemsetEvent{{6, 1050, ThreadId{77}}, 0x7f1200200000, 64, false, s1});
  add(GraphLaunchEvent{{7, 1060, ThreadId{77}}, 0x5555bbbb0000, StreamHandle{0}, {}, false});
  add(SyncEvent{{8, 1070, ThreadId{77}}, SyncKind::stream, s1});
  add(IterationMarkEvent{{9, 1080, ThreadId{77}}, 0});
  add(FreeEvent{{10, 1090, ThreadId{77}}, 0x7f1200200000, MemoryKind::async, s1});
  add(FreeEvent{{11, 1100, ThreadId{78}}, 0x7f1200000000, MemoryKind::device, s1});
  return expect;
}

ByteBuilder& ByteBuilder::header(std::string_view line) { return raw(line); }
ByteBuilder& ByteBuilder::u8(std::uint8_t v) {
  bytes.push_back(std::byte{v});
  return *this;
}
ByteBuilder& ByteBuilder::varint(std::uint64_t v) {
  while (v >= 0x80) {
    u8(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  return u8(static_cast<std::uint8_t>(v));
}
ByteBuilder& ByteBuilder::raw(std::string_view s) {
  for (const char c : s) u8(static_cast<std::uint8_t>(c));
  return *this;
}
ByteBuilder& ByteBuilder::record(std::uint8_t tag, const ByteBuilder& payload) {
  u8(tag).varint(payload.size());
  bytes.insert(bytes.end(), payload.bytes.begin(), payload.bytes.end());
  return *this;
}

}  // namespace memtool::trace::test
