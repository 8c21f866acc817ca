// Input sniffing and the event-loading dispatcher (see memtool/trace/input.hpp).
#include "memtool/trace/input.hpp"

#include <span>

#include "file_bytes.hpp"
#include "utf8.hpp"
#include "memtool/trace/input_error.hpp"

namespace memtool::trace {
namespace {

// Passes everything on and counts the events (definitions and metadata are not events).
class CountingVisitor final : public EventVisitor {
 public:
  explicit CountingVisitor(EventVisitor& inner) : inner_(inner) {}

  void on_metadata(std::string_view key, std::string_view value) override { inner_.on_metadata(key, value); }
  void on_string(StringId id, std::string_view text) override { inner_.on_string(id, text); }
  void on_stack(StackId id, std::span<const StackFrame> frames) override { inner_.on_stack(id, frames); }
  void on_module(const ModuleMapping& module) override { inner_.on_module(module); }

  // Every kind of events.def; notes are not events.
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  void on_##name(const Type& event) override {             \
    if constexpr (EventTraits<Type>::is_event) ++events;   \
    inner_.on_##name(event);                               \
  }
#include "memtool/trace/events.def"
  void on_gpu_time(const GpuTimeRecord& record) override { inner_.on_gpu_time(record); }  // not an event

  std::uint64_t events = 0;

 private:
  EventVisitor& inner_;
};

constexpr std::size_t kSniffBytes = MappedFile::kHeadBytes;
// The pickle protocols a PyTorch snapshot can be written with (pickle.dump's PROTO argument).
constexpr unsigned kFirstPickleProtocol = 2;
constexpr unsigned kLastPickleProtocol = 5;
// A UTF-8 sequence is at most this long, so a head cut by kSniffBytes loses at most this many.
constexpr std::size_t kMaxUtf8Sequence = 4;

// True when `head` can start a JSON text: no control character but whitespace (RFC 8259 allows
// none outside strings, and strings must escape them), and UTF-8 but for a sequence cut at its end.
bool json_head(std::string_view head) {
  for (const char c : head) {
    if (static_cast<unsigned char>(c) < 0x20 && c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  }
  // Drop the one sequence the head's end may have cut: its continuation bytes and its lead byte.
  std::size_t end = head.size();
  std::size_t continuations = 0;
  while (end > 0 && continuations + 1 < kMaxUtf8Sequence &&
         (static_cast<unsigned char>(head[end - 1]) & 0xC0) == 0x80) {
    --end;
    ++continuations;
  }
  if (end > 0 && static_cast<unsigned char>(head[end - 1]) >= 0xC0) {
    --end;  // the cut sequence's lead byte
  } else {
    end = head.size();  // nothing was cut
  }
  return detail::is_valid_utf8(head.substr(0, end));
}

}  // namespace

std::string_view to_string(InputKind kind) {
  switch (kind) {
    case InputKind::unknown:
      return "unknown";
    case InputKind::trace:
      return "memtool trace";
    case InputKind::snapshot_pickle:
      return "PyTorch memory snapshot (pickle)";
    case InputKind::snapshot_json:
      return "PyTorch memory snapshot (JSON)";
    case InputKind::problem_csv:
      return "planner problem (CSV)";
  }
  return "unknown";
}

InputKind sniff_input_bytes(std::string_view head) {
  if (is_trace_bytes(std::as_bytes(std::span<const char>(head.data(), head.size())))) return InputKind::trace;
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80) {
    const auto protocol = static_cast<unsigned char>(head[1]);
    if (protocol >= kFirstPickleProtocol && protocol <= kLastPickleProtocol) return InputKind::snapshot_pickle;
    return InputKind::unknown;
  }
  if (head.starts_with("id,")) return InputKind::problem_csv;
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && head[first] == '{' && json_head(head)) return InputKind::snapshot_json;
  return InputKind::unknown;
}

void throw_unrecognised_input(const std::string& path) {
  throw InputError(path, 0,
                   "unrecognised input: expected a memtool trace, a PyTorch memory snapshot (pickle starting "
                   "with byte 0x80, or a JSON object) or a planner CSV (header 'id,lower,upper,size')");
}

MappedFile::HeadCheck require_known_input(const std::string& path) {
  return [path](std::string_view head) {
    if (sniff_input_bytes(head) == InputKind::unknown) throw_unrecognised_input(path);
  };
}

InputKind sniff_input(const std::string& path) {
  return sniff_input_bytes(detail::read_file_head(path, kSniffBytes));  // throws when unreadable
}

InputKind sniff_input(const MappedFile& input) { return sniff_input_bytes(input.text().substr(0, kSniffBytes)); }

LoadSummary load_events(const std::string& path, EventVisitor& visitor, const LoadOptions& options) {
  const MappedFile input(path, require_known_input(path));  // one read: sniffing and parsing share it
  return load_events(input, path, visitor, options);
}

LoadSummary load_events(const MappedFile& input, const std::string& path, EventVisitor& visitor,
                        const LoadOptions& options) {
  LoadSummary summary;
  summary.kind = sniff_input(input);
  CountingVisitor counter(visitor);
  switch (summary.kind) {
    case InputKind::trace: {
      summary.trace = read_trace_bytes(input.bytes(), path, counter, options.trace);
      summary.truncated = summary.trace->truncated;
      break;
    }
    case InputKind::snapshot_pickle:
    case InputKind::snapshot_json: {
      SnapshotImportOptions snapshot_options = options.snapshot;
      if (!snapshot_options.progress) snapshot_options.progress = options.trace.progress;
      summary.snapshot = summary.kind == InputKind::snapshot_pickle
                             ? import_snapshot_pickle(input.text(), path, counter, snapshot_options)
                             : import_snapshot_json(input.text(), path, counter, snapshot_options);
      break;
    }
    case InputKind::problem_csv:
      throw InputError(path, 0,
                       "this is a planner problem (CSV), which holds no events: expected a memtool trace or a "
                       "PyTorch memory snapshot (pickle or JSON)");
    case InputKind::unknown:
      throw_unrecognised_input(path);
  }
  summary.events = counter.events;
  return summary;
}

}  // namespace memtool::trace
