// Test helpers for trace format v1: a visitor that records what it was told as canonical
// text lines (so two traces compare as two vectors of strings), temporary files, a sample
// trace with every record type, and a byte builder that hand-crafts (corrupt) traces from
// the layout in docs/trace-format.md — independently of the writer's code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/trace/event.hpp"
#include "memtool/trace/reader.hpp"
#include "memtool/trace/writer.hpp"

namespace memtool::trace::test {

std::string describe(const AllocEvent& e);
std::string describe(const FreeEvent& e);
std::string describe(const LaunchEvent& e);
std::string describe(const GraphLaunchEvent& e);
std::string describe(const CopyEvent& e);
std::string describe(const MemsetEvent& e);
std::string describe(const SyncEvent& e);
std::string describe(const IterationMarkEvent& e);
std::string describe(const StreamCreateEvent& e);
std::string describe_stack(StackId id, std::span<const StackFrame> frames);
std::string describe(const ModuleMapping& m);

class RecordingVisitor : public EventVisitor {
 public:
  std::vector<std::string> lines;

  void on_metadata(std::string_view key, std::string_view value) override;
  void on_string(StringId id, std::string_view text) override;
  void on_stack(StackId id, std::span<const StackFrame> frames) override;
  void on_module(const ModuleMapping& module) override;
  void on_alloc(const AllocEvent& e) override { lines.push_back(describe(e)); }
  void on_free(const FreeEvent& e) override { lines.push_back(describe(e)); }
  void on_launch(const LaunchEvent& e) override { lines.push_back(describe(e)); }
  void on_graph_launch(const GraphLaunchEvent& e) override { lines.push_back(describe(e)); }
  void on_copy(const CopyEvent& e) override { lines.push_back(describe(e)); }
  void on_memset(const MemsetEvent& e) override { lines.push_back(describe(e)); }
  void on_sync(const SyncEvent& e) override { lines.push_back(describe(e)); }
  void on_iteration_mark(const IterationMarkEvent& e) override { lines.push_back(describe(e)); }
  void on_stream_create(const StreamCreateEvent& e) override { lines.push_back(describe(e)); }
};

// A file name under the temp directory, removed when the object dies.
class TempPath {
 public:
  explicit TempPath(std::string_view stem);
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  ~TempPath();
  [[nodiscard]] const std::string& str() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::byte> read_bytes(const std::string& path);
void write_bytes(const std::string& path, std::span<const std::byte> bytes);

// Writes a small trace holding every record type and returns the lines a RecordingVisitor
// must see when reading it back. `after_record` runs after each record (e.g. a flush, to learn
// where records end).
std::vector<std::string> write_sample_trace(TraceWriter& writer, const std::function<void()>& after_record = {});

// Hand-made traces.
class ByteBuilder {
 public:
  ByteBuilder& header(std::string_view line = "MEMTOOL-TRACE 1\n");
  ByteBuilder& u8(std::uint8_t v);
  ByteBuilder& varint(std::uint64_t v);
  ByteBuilder& raw(std::string_view s);
  // A record: tag, varint length of `payload`, payload.
  ByteBuilder& record(std::uint8_t tag, const ByteBuilder& payload);
  [[nodiscard]] std::size_t size() const { return bytes.size(); }
  std::vector<std::byte> bytes;
};

}  // namespace memtool::trace::test
