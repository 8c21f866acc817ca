// The window walk, the export clock, frames, sizes and lanes (see window_walk.hpp).
#include "window_walk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>

namespace memtool::trace::detail {

std::uint64_t walk_window(const TraceModel& model, EventWindow window, WindowVisitor& visitor,
                          const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  // Buffers live when the window opens, and buffers a reused address ended inside it (no free
  // event says so): both found in one pass over the buffer table.
  std::vector<std::pair<std::uint64_t, BufferId>> reuse_ends;
  std::vector<BufferId> open_at_start;
  const auto buffers = model.buffers();
  for (std::uint64_t id = 0; id < buffers.size(); ++id) {
    const BufferRecord& b = buffers[id];
    if (b.alloc_event < window.first && b.free_event >= window.first) open_at_start.emplace_back(id);
    if (b.ended_by_reuse && b.free_event >= window.first && b.free_event < window.end)
      reuse_ends.emplace_back(b.free_event, BufferId{id});
  }
  std::sort(reuse_ends.begin(), reuse_ends.end());

  std::uint64_t reported = 0;
  for (BufferId id : open_at_start) {
    visitor.buffer_begins(id, window.first, true);
    ++reported;
  }
  std::size_t next_reuse = 0;
  const std::uint64_t total = window.end - window.first;
  for (std::uint64_t e = window.first; e < window.end; ++e) {
    if (progress && ((e - window.first) & 0xffff) == 0) progress(e - window.first, total);
    visitor.before_event(e);
    const ModelEvent& event = model.event(e);
    while (next_reuse < reuse_ends.size() && reuse_ends[next_reuse].first == e) {
      visitor.buffer_ends(reuse_ends[next_reuse++].second, e, false);
    }
    if (event.buffer.valid()) {
      if (event.kind == EventKind::free) {
        visitor.buffer_ends(event.buffer, e, false);
      } else if (event.kind == EventKind::alloc) {
        visitor.buffer_begins(event.buffer, e, false);
        ++reported;
      }
    }
    visitor.after_event(e);
  }
  // Still live at the end, in id order: the ones from before the window, then the ones it made.
  for (BufferId id : open_at_start) {
    if (model.buffer(id).free_event >= window.end) visitor.buffer_ends(id, window.end, true);
  }
  const auto& events = model.events();
  for (std::uint64_t e = window.first; e < window.end; ++e) {
    const ModelEvent& event = events[e];
    if (event.kind == EventKind::alloc && event.buffer.valid() && model.buffer(event.buffer).free_event >= window.end)
      visitor.buffer_ends(event.buffer, window.end, true);
  }
  if (progress) progress(total, total);
  return reported;
}

ExportClock::ExportClock(const TraceModel& model, EventWindow window) : model_(model), window_(window) {
  if (window.end > window.first) {
    const std::uint64_t first_time = model.event(window.first).time_ns;
    synthetic_ = true;
    for (std::uint64_t e = window.first; e < window.end; ++e) {
      if (model.event(e).time_ns != first_time) {
        synthetic_ = false;
        break;
      }
    }
    origin_ = raw(window.first);
  }
  last_ = origin_;
}

std::uint64_t ExportClock::raw(std::uint64_t index) const {
  if (synthetic_) return (index - window_.first) * 1000;
  return model_.event(index).time_ns;
}

std::uint64_t ExportClock::at(std::uint64_t index) {
  if (index < window_.end) last_ = std::max(last_, raw(index));
  return last_;
}

std::vector<std::uint64_t> ExportClock::range(std::uint64_t first, std::uint64_t end) const {
  std::vector<std::uint64_t> times;
  times.reserve(end - first);
  std::uint64_t running = 0;
  for (std::uint64_t e = first; e < end; ++e) {
    running = std::max(running, raw(e));
    times.push_back(running);
  }
  return times;
}

FrameTable::FrameTable(const TraceModel& model, FrameResolver resolver)
    : model_(model), resolver_(resolver ? std::move(resolver) : default_frame_resolver(model)) {}

const std::vector<ExportFrame>& FrameTable::frames(StackId stack) {
  if (!stack.valid()) return empty_;
  auto [it, inserted] = cache_.try_emplace(stack.value());
  if (inserted) {
    for (const StackFrame& frame : model_.stack(stack)) it->second.push_back(resolver_(frame));
  }
  return it->second;
}

FrameResolver default_frame_resolver(const TraceModel& model) {
  return [&model](const StackFrame& frame) {
    ExportFrame out;
    out.filename = std::string(model.string(frame.file));
    out.line = frame.line;
    out.name = std::string(model.string(frame.function));
    if (out.name.empty() && out.filename.empty()) out.name = fmt::format("0x{:x}", frame.ip);
    return out;
  };
}

std::uint64_t driver_footprint(std::uint64_t size) {
  constexpr std::uint64_t kPage = std::uint64_t{2} << 20;
  if (size > (std::uint64_t{1} << 20)) return (size + kPage - 1) / kPage * kPage;
  return (size + 511) / 512 * 512;
}

IterationCursor::IterationCursor(const Iterations& iterations, EventWindow window) : iterations_(iterations) {
  while (next_ < iterations.spans.size() && iterations.spans[next_].end_event <= window.first) ++next_;
}

void IterationCursor::advance(std::uint64_t index, const std::function<void()>& end,
                              const std::function<void(std::size_t)>& begin) {
  const auto& spans = iterations_.spans;
  if (open_ && index == spans[current_].end_event) {
    end();
    open_ = false;
  }
  while (next_ < spans.size() && spans[next_].first_event <= index) {
    const std::size_t k = next_++;
    if (spans[k].end_event <= index) continue;
    if (open_) end();
    begin(k);
    open_ = true;
    current_ = k;
  }
}

std::optional<Activity> activity_of(const TraceModel& model, std::uint64_t index) {
  const ModelEvent& e = model.event(index);
  switch (e.kind) {
    case EventKind::launch: {
      const std::string_view name = model.string(StringId{e.detail});
      return Activity{name.empty() ? std::string("kernel") : std::string(name), std::nullopt, false};
    }
    case EventKind::graph_launch:
      return Activity{"graph launch", std::nullopt, false};
    case EventKind::copy:
      return Activity{fmt::format("copy {}", to_string(static_cast<CopyKind>(e.detail))), e.bytes, false};
    case EventKind::memset:
      return Activity{"memset", e.bytes, false};
    case EventKind::sync:
      return Activity{fmt::format("sync ({})", to_string(static_cast<SyncKind>(e.detail))), std::nullopt, false};
    case EventKind::iteration_mark:
      return Activity{"iteration mark", std::nullopt, true};
    default:
      return std::nullopt;
  }
}

std::uint32_t LaneSet::acquire() {
  if (free_.empty()) return count_++;
  std::pop_heap(free_.begin(), free_.end(), std::greater<>{});
  const std::uint32_t lane = free_.back();
  free_.pop_back();
  return lane;
}

void LaneSet::release(std::uint32_t lane) {
  free_.push_back(lane);
  std::push_heap(free_.begin(), free_.end(), std::greater<>{});
}

}  // namespace memtool::trace::detail
