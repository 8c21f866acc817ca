// What every exporter shares: the walk over a window of events that says when each buffer's
// lifetime begins and ends, a monotonic clock over the window, frames as text, and sizes as
// text. Private to trace/export.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memtool/trace/export.hpp"
#include "text.hpp"

namespace memtool::trace::detail {

// Lifetimes as the window sees them. At each event index e: before_event(e); then the buffers
// that end at e (the freed one; a buffer whose address a new allocation reused); then the one
// that begins at e; then after_event(e). Buffers live when the window starts begin first, with
// before_window = true (event = window.first); buffers still live at its end end last, with
// after_window = true (event = window.end). Both in buffer-id order.
class WindowVisitor {
 public:
  WindowVisitor() = default;
  WindowVisitor(const WindowVisitor&) = delete;
  WindowVisitor& operator=(const WindowVisitor&) = delete;
  virtual ~WindowVisitor() = default;
  virtual void before_event(std::uint64_t /*index*/) {}
  virtual void buffer_begins(BufferId /*id*/, std::uint64_t /*event*/, bool /*before_window*/) {}
  virtual void buffer_ends(BufferId /*id*/, std::uint64_t /*event*/, bool /*after_window*/) {}
  virtual void after_event(std::uint64_t /*index*/) {}
};

// Walks `window`, reporting progress every 64 Ki events. Returns the buffers it reported.
std::uint64_t walk_window(const TraceModel& model, EventWindow window, WindowVisitor& visitor,
                          const std::function<void(std::uint64_t, std::uint64_t)>& progress);

// Walks `writer` (a WindowVisitor whose finish(buffers) returns the ExportStats) over the
// window, and fills in the window and the bytes written.
template <class Writer>
ExportStats walk_and_finish(Writer& writer, const TraceModel& model, EventWindow window, const ExportOptions& options,
                            const ByteSink& out) {
  const std::uint64_t buffers = walk_window(model, window, writer, options.progress);
  ExportStats stats = writer.finish(buffers);
  stats.first_event = window.first;
  stats.end_event = window.end;
  stats.bytes_written = out.bytes_written();
  return stats;
}

// Host time in ns of each event, made non-decreasing (threads' clocks can disagree by a little).
// When the window's times do not advance at all (an old snapshot without time_us), each event
// is one microsecond after the previous, so viewers still show an ordered picture.
class ExportClock {
 public:
  ExportClock(const TraceModel& model, EventWindow window);
  // The time of event `index` (index >= the previous call's, within [first, end]; `end` gives
  // the time of the last event).
  std::uint64_t at(std::uint64_t index);
  // Times of the events [first, end) of any range inside the window, clamped the same way
  // (for pictures of one iteration drawn after the walk).
  [[nodiscard]] std::vector<std::uint64_t> range(std::uint64_t first, std::uint64_t end) const;
  [[nodiscard]] std::uint64_t origin() const { return origin_; }  // time of the first event
  [[nodiscard]] bool synthetic() const { return synthetic_; }

 private:
  [[nodiscard]] std::uint64_t raw(std::uint64_t index) const;
  const TraceModel& model_;
  EventWindow window_;
  bool synthetic_ = false;
  std::uint64_t origin_ = 0;
  std::uint64_t last_ = 0;
};

// The stack's frames as the viewers show them, resolved once per stack id.
class FrameTable {
 public:
  FrameTable(const TraceModel& model, FrameResolver resolver);
  [[nodiscard]] const std::vector<ExportFrame>& frames(StackId stack);

 private:
  const TraceModel& model_;
  FrameResolver resolver_;
  std::unordered_map<std::uint32_t, std::vector<ExportFrame>> cache_;
  std::vector<ExportFrame> empty_;
};

// The default resolver: symbolic frames as they are, raw IPs as "0x…".
[[nodiscard]] FrameResolver default_frame_resolver(const TraceModel& model);

// Device memory a buffer holds from the driver, as planner/'s cudaMalloc baseline models it:
// over 1 MiB in whole 2 MiB pages, smaller requests rounded to 512 B.
[[nodiscard]] std::uint64_t driver_footprint(std::uint64_t size);

// Which iteration is open as the walk goes: at each event, close the one that ended there and
// open the ones that begin (a span can only begin at or after the previous one's end).
class IterationCursor {
 public:
  IterationCursor(const Iterations& iterations, EventWindow window);
  void advance(std::uint64_t index, const std::function<void()>& end, const std::function<void(std::size_t)>& begin);
  [[nodiscard]] bool open() const { return open_; }

 private:
  const Iterations& iterations_;
  std::size_t next_ = 0;
  std::size_t current_ = 0;
  bool open_ = false;
};

// What an event other than an allocation or free did, as the timelines label it: a kernel's
// name, "copy h2d", "memset", "sync (stream)", "graph launch", "iteration mark".
struct Activity {
  std::string name;
  std::optional<std::uint64_t> bytes;  // copies and memsets
  bool mark = false;                   // an iteration mark (drawn on the iterations track)
};
[[nodiscard]] std::optional<Activity> activity_of(const TraceModel& model, std::uint64_t index);

// Assigns overlapping lifetimes to lanes so that each lane holds properly nested (here:
// disjoint) slices, the lowest free lane first: Perfetto wants nesting on one track.
class LaneSet {
 public:
  std::uint32_t acquire();
  void release(std::uint32_t lane);
  [[nodiscard]] std::uint32_t lanes() const { return count_; }

 private:
  std::vector<std::uint32_t> free_;  // min-heap
  std::uint32_t count_ = 0;
};

}  // namespace memtool::trace::detail
