// The memory_viz document: a PyTorch memory snapshot (torch.cuda.memory._snapshot()) written as
// a pickle while the buffers' lifetimes arrive, by either front-end of memory_viz.cpp (a window of
// a loaded TraceModel, or events straight from the reader). Private to trace/export.
//
// memtool sees device allocations, not a caching allocator, so every buffer is its own segment
// holding one block of exactly its size: its lifetime in `device_traces[0]` is segment_alloc,
// alloc, then free_requested, free_completed, segment_free (PyTorch's order), and the buffers
// still live at the end are the `segments` (the state "when the snapshot was taken"). Buffers
// live before a window opens have no alloc entry: the viewers take a free without an alloc as
// memory allocated before the trace started, as they do for PyTorch's own snapshots.
//
// The viewers key blocks by address and require every block inside a segment, so no two live
// buffers may overlap: a new buffer that overlaps live ones (a lost free record) ends them where
// it starts, and is counted (ExportStats::overlapped_ends).
//
// The document streams: device_traces first, segments at the end (dict order is free).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "pickle_writer.hpp"
#include "window_walk.hpp"

namespace memtool::trace::detail {

struct VizBuffer {
  std::uint64_t id = 0;  // unique per buffer of the document
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  StackId stack;
};

class MemoryVizDocument {
 public:
  MemoryVizDocument(ByteSink& out, int pickle_protocol, FrameTable& frames);
  void set_time_ns(std::uint64_t ns) { time_us_ = ns / 1000; }
  // A buffer's lifetime begins (before_window: it was live when the window opened; no entry).
  void begin(const VizBuffer& buffer, bool before_window);
  // Buffer `id` at `address` ends (after_window: still live at the end; it becomes a segment).
  // Nothing when it was already ended by an overlapping buffer.
  void end(std::uint64_t id, std::uint64_t address, bool after_window);
  // The live buffer at `address` ends; false when there is none.
  bool end_at(std::uint64_t address);
  ExportStats finish();

 private:
  enum Key : std::size_t {
    kAction,
    kAddr,
    kSize,
    kStream,
    kTimeUs,
    kFrames,
    kFilename,
    kLine,
    kName,
    kDevice,
    kAddress,
    kTotalSize,
    kAllocatedSize,
    kActiveSize,
    kRequestedSize,
    kSegmentType,
    kSegmentPoolId,
    kIsExpandable,
    kBlocks,
    kState,
    kAlloc,
    kFreeRequested,
    kFreeCompleted,
    kSegmentAlloc,
    kSegmentFree,
    kActiveAllocated,
    kLarge,
    kSmall,
    kKeyCount
  };
  static constexpr std::array<std::string_view, kKeyCount> kKeyText{"action",
                                                                    "addr",
                                                                    "size",
                                                                    "stream",
                                                                    "time_us",
                                                                    "frames",
                                                                    "filename",
                                                                    "line",
                                                                    "name",
                                                                    "device",
                                                                    "address",
                                                                    "total_size",
                                                                    "allocated_size",
                                                                    "active_size",
                                                                    "requested_size",
                                                                    "segment_type",
                                                                    "segment_pool_id",
                                                                    "is_expandable",
                                                                    "blocks",
                                                                    "state",
                                                                    "alloc",
                                                                    "free_requested",
                                                                    "free_completed",
                                                                    "segment_alloc",
                                                                    "segment_free",
                                                                    "active_allocated",
                                                                    "large",
                                                                    "small"};

  void end_overlapping(const VizBuffer& b, bool silently);
  void write_free(const VizBuffer& b);
  void key_text(std::string_view text);
  void key(Key k) { key_text(kKeyText[k]); }
  void frames(StackId stack);
  void entry(Key action, const VizBuffer& b, StackId stack);
  void segment(const VizBuffer& b);

  PickleWriter pickle_;
  FrameTable& frames_;
  std::map<std::uint64_t, VizBuffer> live_;  // live buffers by address (the final segments)
  std::unordered_set<std::uint64_t> ended_early_;
  std::unordered_map<std::string, std::uint32_t> memo_;           // key and action strings
  std::unordered_map<std::uint32_t, std::uint32_t> frame_lists_;  // stack id → memo index
  std::uint64_t time_us_ = 0;
  std::uint64_t records_ = 0;
  std::uint64_t overlapped_ = 0;
};

}  // namespace memtool::trace::detail
