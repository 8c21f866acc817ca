// export_memory_viz and MemoryVizStream: the two ways into a memory_viz document
// (memory_viz_document.hpp). export_memory_viz walks a window of a loaded TraceModel (any
// iterations); MemoryVizStream takes the reader's events as they come, for the whole run, and
// keeps only the live buffers and the definitions (strings, stacks, modules), so a huge trace
// exports in little more memory than its own mapped file.
#include "memory_viz_document.hpp"

namespace memtool::trace {
namespace {

detail::VizBuffer viz_buffer(BufferId id, const BufferRecord& b) {
  return {id.value(), b.address, b.size, b.stream.value(), b.stack};
}

class WindowAdapter final : public detail::WindowVisitor {
 public:
  WindowAdapter(const ExportSource& source, const ExportOptions& options, EventWindow window, ByteSink& out)
      : model_(source.model),
        clock_(source.model, window),
        frames_(source.model, options.frames),
        document_(out, options.pickle_protocol, frames_) {}

  void before_event(std::uint64_t index) override { document_.set_time_ns(clock_.at(index)); }
  void buffer_begins(BufferId id, std::uint64_t /*event*/, bool before_window) override {
    document_.begin(viz_buffer(id, model_.buffer(id)), before_window);
  }
  void buffer_ends(BufferId id, std::uint64_t /*event*/, bool after_window) override {
    document_.end(id.value(), model_.buffer(id).address, after_window);
  }
  ExportStats finish(std::uint64_t buffers) {
    ExportStats stats = document_.finish();
    stats.buffers = buffers;
    return stats;
  }

 private:
  const TraceModel& model_;
  detail::ExportClock clock_;
  detail::FrameTable frames_;
  detail::MemoryVizDocument document_;
};

}  // namespace

ExportStats export_memory_viz(const ExportSource& source, const ExportOptions& options, ByteSink& out) {
  const EventWindow window = export_window(source, options);
  WindowAdapter adapter(source, options, window, out);
  return detail::walk_and_finish(adapter, source.model, window, options, out);
}

struct MemoryVizStream::State {
  State(ByteSink& sink, int protocol, const std::function<FrameResolver(const TraceModel&)>& make_resolver)
      : out(sink),
        frames(definitions, make_resolver ? make_resolver(definitions) : FrameResolver{}),
        document(sink, protocol, frames) {}
  ByteSink& out;
  TraceModel definitions;  // strings, stacks, modules, metadata: never events
  detail::FrameTable frames;
  detail::MemoryVizDocument document;
  std::uint64_t next_id = 0;
  std::uint64_t last_time = 0;
  std::uint64_t unknown_frees = 0;
};

MemoryVizStream::MemoryVizStream(ByteSink& out, int pickle_protocol,
                                 const std::function<FrameResolver(const TraceModel&)>& make_resolver)
    : state_(std::make_unique<State>(out, pickle_protocol, make_resolver)) {}

MemoryVizStream::~MemoryVizStream() = default;

void MemoryVizStream::on_metadata(std::string_view key, std::string_view value) {
  state_->definitions.on_metadata(key, value);
}
void MemoryVizStream::on_string(StringId id, std::string_view text) { state_->definitions.on_string(id, text); }
void MemoryVizStream::on_stack(StackId id, std::span<const StackFrame> frames) {
  state_->definitions.on_stack(id, frames);
}
void MemoryVizStream::on_module(const ModuleMapping& module) { state_->definitions.on_module(module); }

void MemoryVizStream::on_alloc(const AllocEvent& event) {
  advance(event.header.time_ns);
  state_->document.begin({state_->next_id++, event.address, event.size, event.stream.value(), event.stack}, false);
}

void MemoryVizStream::on_free(const FreeEvent& event) {
  advance(event.header.time_ns);
  if (!state_->document.end_at(event.address)) ++state_->unknown_frees;
}

void MemoryVizStream::advance(std::uint64_t time_ns) {
  state_->last_time = std::max(state_->last_time, time_ns);  // as ExportClock: never backwards
  state_->document.set_time_ns(state_->last_time);
}

ExportStats MemoryVizStream::finish() {
  ExportStats stats = state_->document.finish();
  stats.buffers = state_->next_id;
  stats.bytes_written = state_->out.bytes_written();
  return stats;
}

std::uint64_t MemoryVizStream::unknown_frees() const { return state_->unknown_frees; }

}  // namespace memtool::trace
