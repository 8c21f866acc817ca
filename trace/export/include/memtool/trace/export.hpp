// Exports of a recorded run into the tools people already use: PyTorch's memory_viz (a pickled
// snapshot), Perfetto (native protobuf TrackEvent trace), Chrome's JSON trace format (older
// viewers) and a self-contained HTML report.
//
// Every export reads a TraceModel and its Iterations (the same ones `memtool report` computes)
// over a window of events — the whole run, or the iterations A..B — and streams its output to a
// ByteSink as it walks the window: the output is never held in memory, and the exporters' own
// state is bounded by the buffers live at one time (plus, for HTML, one iteration's plan and a
// bounded chart). What the planner computed (a pool plan and the baselines' reserved bytes) and,
// once swapper/ exists, a swap schedule are handed in as plain views: this library depends on
// neither and contains no CUDA.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/trace/event.hpp"
#include "memtool/trace/iterations.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::trace {

enum class ExportFormat : std::uint8_t { memory_viz, perfetto, chrome_json, html };

[[nodiscard]] std::string_view to_string(ExportFormat format);
// "memory-viz", "perfetto", "chrome-json", "html"; nullopt for anything else.
[[nodiscard]] std::optional<ExportFormat> parse_export_format(std::string_view name);

// Where the bytes go. FileSink writes through a large buffer and throws std::runtime_error
// naming the file when it cannot be opened or written.
class ByteSink {
 public:
  ByteSink() = default;
  ByteSink(const ByteSink&) = delete;
  ByteSink& operator=(const ByteSink&) = delete;
  virtual ~ByteSink() = default;
  virtual void write(std::string_view bytes) = 0;
  [[nodiscard]] std::uint64_t bytes_written() const { return written_; }

 protected:
  std::uint64_t written_ = 0;
};

class StringSink final : public ByteSink {
 public:
  void write(std::string_view bytes) override;
  [[nodiscard]] const std::string& str() const { return text_; }

 private:
  std::string text_;
};

class FileSink final : public ByteSink {
 public:
  explicit FileSink(std::string path);
  ~FileSink() override;
  void write(std::string_view bytes) override;
  void close();  // flushes; throws on a write error. The destructor closes without throwing.

 private:
  void flush();
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
};

// One frame of an allocation stack as the viewers show it.
struct ExportFrame {
  std::string filename;
  std::uint32_t line = 0;
  std::string name;
};
// Turns a recorded frame into text. The default keeps symbolic frames (importers) as they are and
// shows raw instruction pointers as hex; `memtool export` passes one that symbolises them.
using FrameResolver = std::function<ExportFrame(const StackFrame&)>;

// One iteration's pool plan, as the planner made it, and what today's allocators would reserve
// for the same buffers. Problem times are event indices relative to the iteration's first event
// (to_problem with TimeAxis::events).
struct PoolPlanView {
  struct Baseline {
    std::string name;
    std::uint64_t peak_reserved_bytes = 0;
  };
  std::size_t iteration = 0;  // index into Iterations::spans
  std::string algorithm;
  Problem problem;
  std::vector<std::uint64_t> offsets;  // one per problem buffer
  std::uint64_t pool_bytes = 0;
  std::uint64_t lower_bound_bytes = 0;
  std::vector<Baseline> baselines;
};

// A swap schedule: the extension point for swapper/ (which does not exist yet). Each transfer
// copies one buffer out to the host or back, between two events of the trace (absolute event
// indices). The Perfetto and HTML exports draw it when it is given.
struct SwapTransfer {
  BufferId buffer;
  std::uint64_t bytes = 0;
  bool to_host = true;  // false: swap-in
  std::uint64_t begin_event = 0;
  std::uint64_t end_event = 0;
};
struct SwapScheduleView {
  std::string name;  // e.g. the policy
  std::uint64_t budget_bytes = 0;
  std::vector<SwapTransfer> transfers;
};

struct ExportSource {
  const TraceModel& model;
  const Iterations& iterations;
  std::string name;  // the input file, shown in the output
};

struct ExportOptions {
  // The window: iterations first..last (inclusive, indices into Iterations::spans); both unset:
  // the whole trace. One unset side runs to that end of the list.
  std::optional<std::size_t> first_iteration;
  std::optional<std::size_t> last_iteration;
  FrameResolver frames;  // empty: the default resolver
  // Called now and then with (events written, events in the window).
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  const PoolPlanView* plan = nullptr;       // perfetto, html
  const SwapScheduleView* swaps = nullptr;  // perfetto, html
  int pickle_protocol = 4;                  // memory-viz: 2, 3 or 4 (the web viewer reads no 5)
  std::size_t rows = 20;                    // html: rows of the buffer table
  // perfetto: one rank of a job written into a file shared with the other ranks (concatenated
  // exports): its own track ids and packet sequence, its process track named and numbered by the
  // rank, its times shifted by time_shift_ns so that the ranks' step boundaries line up.
  struct RankPlacement {
    std::uint32_t rank = 0;
    std::uint64_t time_shift_ns = 0;
    std::optional<std::size_t> aligned_iteration;  // the iteration whose start lines up (nullopt: none found)
  };
  std::optional<RankPlacement> rank;
};

struct ExportStats {
  std::uint64_t first_event = 0;  // the window [first_event, end_event)
  std::uint64_t end_event = 0;
  std::uint64_t buffers = 0;          // buffer lifetimes written (live at some event of the window)
  std::uint64_t records = 0;          // trace entries / packets / JSON events written
  std::uint64_t overlapped_ends = 0;  // memory-viz: live buffers ended early because a new one overlapped them
  std::uint64_t bytes_written = 0;
};

// The window the options select. Throws std::invalid_argument when the iterations asked for do
// not exist (naming the range the input has).
struct EventWindow {
  std::uint64_t first = 0;
  std::uint64_t end = 0;
};
[[nodiscard]] EventWindow export_window(const ExportSource& source, const ExportOptions& options);

ExportStats export_memory_viz(const ExportSource& source, const ExportOptions& options, ByteSink& out);
ExportStats export_perfetto(const ExportSource& source, const ExportOptions& options, ByteSink& out);
ExportStats export_chrome_json(const ExportSource& source, const ExportOptions& options, ByteSink& out);
ExportStats export_html(const ExportSource& source, const ExportOptions& options, ByteSink& out);

// The memory_viz export of a whole run straight from the reader (load_events(path, stream)):
// the events are written as they are read; only the live buffers and the definitions are kept,
// so memory stays near the trace's own size. The same document export_memory_viz writes for a
// model (identical bytes when the trace's times advance). `make_resolver`, when set, makes the
// frame resolver from the definitions seen (they are complete before any event uses them).
class MemoryVizStream final : public EventVisitor {
 public:
  MemoryVizStream(ByteSink& out, int pickle_protocol,
                  const std::function<FrameResolver(const TraceModel& definitions)>& make_resolver = {});
  MemoryVizStream(const MemoryVizStream&) = delete;
  MemoryVizStream& operator=(const MemoryVizStream&) = delete;
  ~MemoryVizStream() override;

  void on_metadata(std::string_view key, std::string_view value) override;
  void on_string(StringId id, std::string_view text) override;
  void on_stack(StackId id, std::span<const StackFrame> frames) override;
  void on_module(const ModuleMapping& module) override;
  void on_alloc(const AllocEvent& event) override;
  void on_free(const FreeEvent& event) override;

  ExportStats finish();                               // closes the document (first_event/end_event stay 0)
  [[nodiscard]] std::uint64_t unknown_frees() const;  // frees of no live buffer's address

 private:
  void advance(std::uint64_t time_ns);
  struct State;
  std::unique_ptr<State> state_;
};

// One HTML page for a job's ranks: `overview` (the rank table, as text) and each rank's live bytes
// over its events from `aligned_iteration`'s start, every chart on the same event scale so the
// ranks' steps line up (a rank whose trace stops early ends early).
struct RankHtmlInput {
  std::uint32_t rank = 0;
  ExportSource source;
  std::size_t aligned_iteration = 0;  // index into source.iterations.spans (0 when there are none)
  std::string note;                   // e.g. "its trace stops without an end record"
};
ExportStats export_html_ranks(std::string_view title, std::string_view overview, std::span<const RankHtmlInput> ranks,
                              ByteSink& out);

// Dispatch by format.
ExportStats export_trace(ExportFormat format, const ExportSource& source, const ExportOptions& options, ByteSink& out);

}  // namespace memtool::trace
