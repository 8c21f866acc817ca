// Helpers shared by the importer tests: a visitor that logs every callback as text (so two
// imports can be compared exactly), fixture paths, and a small builder for hand-made pickles.
#pragma once

#include <fmt/format.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/trace/event.hpp"

namespace memtool::trace::testing {

inline std::string fixture(std::string_view relative) {
  return std::string(MEMTOOL_FIXTURES_DIR) + "/" + std::string(relative);
}

inline std::string source_path(std::string_view relative) {
  return std::string(MEMTOOL_SOURCE_DIR) + "/" + std::string(relative);
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("test fixture missing: " + path);
  std::string bytes(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

// A scratch file removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& stem)
      : path_(std::filesystem::temp_directory_path() / fmt::format("memtool-import-{}-{}", ::getpid(), stem)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  [[nodiscard]] std::string path() const { return path_.string(); }
  void write(std::string_view bytes) const {
    std::ofstream out(path_, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  std::filesystem::path path_;
};

inline std::string show_id(std::uint64_t value, bool valid) { return valid ? fmt::format("{}", value) : "-"; }

// Logs every callback in delivery order, one line each.
class RecordingVisitor : public EventVisitor {
 public:
  void on_metadata(std::string_view key, std::string_view value) override {
    log.push_back(fmt::format("meta {}={}", key, value));
  }
  void on_string(StringId id, std::string_view text) override {
    strings.emplace_back(text);
    log.push_back(fmt::format("string {} {}", id.value(), text));
  }
  void on_stack(StackId id, std::span<const StackFrame> frames) override {
    std::string line = fmt::format("stack {}", id.value());
    for (const StackFrame& frame : frames) {
      line += fmt::format(" [{} {} {} {}]", frame.ip, show_id(frame.function.value(), frame.function.valid()),
                          show_id(frame.file.value(), frame.file.valid()), frame.line);
    }
    stacks.emplace_back(frames.begin(), frames.end());
    log.push_back(line);
  }
  void on_alloc(const AllocEvent& event) override {
    allocs.push_back(event);
    log.push_back(fmt::format("alloc seq={} t={} thread={} addr={:#x} size={} kind={} stream={} stack={}",
                              event.header.seq, event.header.time_ns, event.header.thread.value(), event.address,
                              event.size, to_string(event.kind), event.stream.value(),
                              show_id(event.stack.value(), event.stack.valid())));
  }
  void on_free(const FreeEvent& event) override {
    frees.push_back(event);
    log.push_back(fmt::format("free seq={} t={} thread={} addr={:#x} kind={} stream={}", event.header.seq,
                              event.header.time_ns, event.header.thread.value(), event.address, to_string(event.kind),
                              event.stream.value()));
  }
  void on_launch(const LaunchEvent& /*event*/) override { log.emplace_back("launch"); }
  void on_copy(const CopyEvent& /*event*/) override { log.emplace_back("copy"); }
  void on_memset(const MemsetEvent& /*event*/) override { log.emplace_back("memset"); }
  void on_sync(const SyncEvent& /*event*/) override { log.emplace_back("sync"); }
  void on_iteration_mark(const IterationMarkEvent& /*event*/) override { log.emplace_back("mark"); }
  void on_stream_create(const StreamCreateEvent& /*event*/) override { log.emplace_back("stream"); }
  void on_graph_launch(const GraphLaunchEvent& /*event*/) override { log.emplace_back("graph"); }

  std::vector<std::string> log;
  std::vector<std::string> strings;
  std::vector<std::vector<StackFrame>> stacks;
  std::vector<AllocEvent> allocs;
  std::vector<FreeEvent> frees;
};

// Assembles pickles byte by byte, for opcodes and shapes Python's pickler would not produce.
class PickleBuilder {
 public:
  PickleBuilder& op(std::uint8_t code) {
    bytes_.push_back(static_cast<char>(code));
    return *this;
  }
  PickleBuilder& op(char code) {
    bytes_.push_back(code);
    return *this;
  }
  PickleBuilder& le(std::uint64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) bytes_.push_back(static_cast<char>((value >> (8 * i)) & 0xFFU));
    return *this;
  }
  PickleBuilder& raw(std::string_view data) {
    bytes_.append(data);
    return *this;
  }
  PickleBuilder& proto(int protocol) { return op(std::uint8_t{0x80}).le(static_cast<std::uint64_t>(protocol), 1); }
  PickleBuilder& text(std::string_view value) {  // BINUNICODE
    return op('X').le(value.size(), 4).raw(value);
  }
  PickleBuilder& short_text(std::string_view value) {  // SHORT_BINUNICODE
    return op(std::uint8_t{0x8c}).le(value.size(), 1).raw(value);
  }
  PickleBuilder& int1(std::uint8_t value) { return op('K').le(value, 1); }
  PickleBuilder& int4(std::int32_t value) { return op('J').le(static_cast<std::uint32_t>(value), 4); }
  PickleBuilder& stop() { return op('.'); }
  [[nodiscard]] const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

}  // namespace memtool::trace::testing
