// export_memory_viz: the window as a PyTorch memory snapshot (torch.cuda.memory._snapshot()),
// pickled, for pytorch.org/memory_viz and torch.cuda._memory_viz.
//
// memtool sees device allocations, not a caching allocator, so every buffer is its own segment
// holding one block of exactly its size: its lifetime in `device_traces[0]` is segment_alloc,
// alloc, then free_requested, free_completed, segment_free (PyTorch's order), and the buffers
// still live at the window's end are the `segments` (the state "when the snapshot was taken").
// Buffers live when the window opens have no alloc entry: the viewers take a free without an
// alloc as memory allocated before the trace started, as they do for PyTorch's own snapshots.
//
// The viewers key blocks by address and require every block inside a segment, so no two live
// buffers may overlap: a trace that has them (a lost free record) ends the older buffer where the
// newer one starts, and counts it (ExportStats::overlapped_ends).
//
// The document streams: device_traces first, segments after the walk (dict order is free).
#include <fmt/format.h>

#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "pickle_writer.hpp"
#include "window_walk.hpp"

namespace memtool::trace {
namespace {

using detail::PickleWriter;

enum Key : std::size_t {
  kAction, kAddr, kSize, kStream, kTimeUs, kFrames, kFilename, kLine, kName, kDevice, kAddress, kTotalSize,
  kAllocatedSize, kActiveSize, kRequestedSize, kSegmentType, kSegmentPoolId, kIsExpandable, kBlocks, kState,
  kAlloc, kFreeRequested, kFreeCompleted, kSegmentAlloc, kSegmentFree, kActiveAllocated, kLarge, kSmall,
  kKeyCount
};
constexpr std::array<std::string_view, kKeyCount> kKeyText{
    "action", "addr", "size", "stream", "time_us", "frames", "filename", "line", "name", "device", "address",
    "total_size", "allocated_size", "active_size", "requested_size", "segment_type", "segment_pool_id",
    "is_expandable", "blocks", "state", "alloc", "free_requested", "free_completed", "segment_alloc",
    "segment_free", "active_allocated", "large", "small"};

class MemoryVizWriter final : public detail::WindowVisitor {
 public:
  MemoryVizWriter(const ExportSource& source, const ExportOptions& options, EventWindow window, ByteSink& out)
      : model_(source.model), clock_(source.model, window), frames_(source.model, options.frames),
        pickle_(out, options.pickle_protocol) {}

  void begin() {
    pickle_.begin_dict();
    key_text("device_traces");
    pickle_.begin_list();  // one device
    pickle_.begin_list();  // its trace
  }

  void before_event(std::uint64_t index) override { time_us_ = clock_.at(index) / 1000; }

  void buffer_begins(BufferId id, std::uint64_t /*event*/, bool before_window) override {
    const BufferRecord& b = model_.buffer(id);
    end_overlapping(b, before_window);
    live_.emplace(b.address, id);
    if (before_window) return;
    entry(kSegmentAlloc, b, b.stack);
    entry(kAlloc, b, b.stack);
  }

  void buffer_ends(BufferId id, std::uint64_t /*event*/, bool after_window) override {
    if (ended_early_.erase(id.value()) != 0 || after_window) return;
    const BufferRecord& b = model_.buffer(id);
    write_free(b);
    live_.erase(b.address);
  }

  ExportStats finish(std::uint64_t buffers) {
    pickle_.end_list();
    pickle_.end_list();
    key_text("segments");
    pickle_.begin_list();
    for (const auto& [address, id] : live_) segment(model_.buffer(id));
    pickle_.end_list();
    pickle_.end_dict();
    pickle_.finish();
    ExportStats stats;
    stats.buffers = buffers;
    stats.records = records_;
    stats.overlapped_ends = overlapped_;
    return stats;
  }

 private:
  // A new buffer overlapping live ones (same base included) ends them here.
  void end_overlapping(const BufferRecord& b, bool silently) {
    const std::uint64_t end = b.address + std::max<std::uint64_t>(b.size, 1);
    auto it = live_.upper_bound(b.address);
    if (it != live_.begin()) {
      auto previous = std::prev(it);
      const BufferRecord& p = model_.buffer(previous->second);
      if (p.address + std::max<std::uint64_t>(p.size, 1) > b.address) it = previous;
    }
    while (it != live_.end() && it->first < end) {
      const BufferRecord& victim = model_.buffer(it->second);
      if (!silently) write_free(victim);
      ended_early_.insert(it->second.value());
      ++overlapped_;
      it = live_.erase(it);
    }
  }

  void write_free(const BufferRecord& b) {
    entry(kFreeRequested, b, StackId{});
    entry(kFreeCompleted, b, StackId{});
    entry(kSegmentFree, b, StackId{});
  }

  void key_text(std::string_view text) {
    auto [it, inserted] = memo_.try_emplace(std::string(text), 0);
    if (inserted) {
      it->second = pickle_.text_memoized(text);
    } else {
      pickle_.get(it->second);
    }
  }
  void key(Key k) { key_text(kKeyText[k]); }

  void frames(StackId stack) {
    if (auto it = frame_lists_.find(stack.value()); it != frame_lists_.end()) {
      pickle_.get(it->second);
      return;
    }
    pickle_.begin_list();
    for (const ExportFrame& frame : frames_.frames(stack)) {
      pickle_.begin_dict();
      key(kFilename);
      pickle_.text(detail::utf8_clean(frame.filename));
      key(kLine);
      pickle_.integer(frame.line);
      key(kName);
      pickle_.text(detail::utf8_clean(frame.name));
      pickle_.end_dict();
    }
    frame_lists_.emplace(stack.value(), pickle_.end_list_memoized());
  }

  void entry(Key action, const BufferRecord& b, StackId stack) {
    pickle_.begin_dict();
    key(kAction);
    key(action);
    key(kAddr);
    pickle_.integer(b.address);
    key(kSize);
    pickle_.integer(b.size);
    key(kStream);
    pickle_.integer(b.stream.value());
    key(kTimeUs);
    pickle_.integer(time_us_);
    key(kFrames);
    frames(stack);
    pickle_.end_dict();
    ++records_;
  }

  void segment(const BufferRecord& b) {
    pickle_.begin_dict();
    key(kDevice);
    pickle_.integer(0);
    key(kAddress);
    pickle_.integer(b.address);
    for (Key k : {kTotalSize, kAllocatedSize, kActiveSize, kRequestedSize}) {
      key(k);
      pickle_.integer(b.size);
    }
    key(kStream);
    pickle_.integer(b.stream.value());
    key(kSegmentType);
    key(b.size > (std::uint64_t{1} << 20) ? kLarge : kSmall);
    key(kSegmentPoolId);
    pickle_.begin_tuple();
    pickle_.integer(0);
    pickle_.integer(0);
    pickle_.end_tuple();
    key(kIsExpandable);
    pickle_.boolean(false);
    key(kFrames);
    frames(b.stack);
    key(kBlocks);
    pickle_.begin_list();
    pickle_.begin_dict();
    key(kAddress);
    pickle_.integer(b.address);
    key(kSize);
    pickle_.integer(b.size);
    key(kRequestedSize);
    pickle_.integer(b.size);
    key(kState);
    key(kActiveAllocated);
    key(kFrames);
    frames(b.stack);
    pickle_.end_dict();
    pickle_.end_list();
    pickle_.end_dict();
  }

  const TraceModel& model_;
  detail::ExportClock clock_;
  detail::FrameTable frames_;
  PickleWriter pickle_;
  std::map<std::uint64_t, BufferId> live_;  // live buffers by address (the final segments)
  std::unordered_set<std::uint64_t> ended_early_;
  std::unordered_map<std::string, std::uint32_t> memo_;           // key and action strings
  std::unordered_map<std::uint32_t, std::uint32_t> frame_lists_;  // stack id → memo index
  std::uint64_t time_us_ = 0;
  std::uint64_t records_ = 0;
  std::uint64_t overlapped_ = 0;
};

}  // namespace

ExportStats export_memory_viz(const ExportSource& source, const ExportOptions& options, ByteSink& out) {
  const EventWindow window = export_window(source, options);
  MemoryVizWriter writer(source, options, window, out);
  writer.begin();
  return detail::walk_and_finish(writer, source.model, window, options, out);
}

}  // namespace memtool::trace
