// MemoryVizDocument (see memory_viz_document.hpp).
#include "memory_viz_document.hpp"

#include <algorithm>
#include <iterator>

namespace memtool::trace::detail {

MemoryVizDocument::MemoryVizDocument(ByteSink& out, int pickle_protocol, FrameTable& frames)
    : pickle_(out, pickle_protocol), frames_(frames) {
  pickle_.begin_dict();
  key_text("device_traces");
  pickle_.begin_list();  // one device
  pickle_.begin_list();  // its trace
}

void MemoryVizDocument::begin(const VizBuffer& b, bool before_window) {
  end_overlapping(b, before_window);
  live_.emplace(b.address, b);
  if (before_window) return;
  entry(kSegmentAlloc, b, b.stack);
  entry(kAlloc, b, b.stack);
}

void MemoryVizDocument::end(std::uint64_t id, std::uint64_t address, bool after_window) {
  if (ended_early_.erase(id) != 0 || after_window) return;
  const auto it = live_.find(address);
  if (it == live_.end() || it->second.id != id) return;
  write_free(it->second);
  live_.erase(it);
}

bool MemoryVizDocument::end_at(std::uint64_t address) {
  const auto it = live_.find(address);
  if (it == live_.end()) return false;
  write_free(it->second);
  live_.erase(it);
  return true;
}

ExportStats MemoryVizDocument::finish() {
  pickle_.end_list();
  pickle_.end_list();
  key_text("segments");
  pickle_.begin_list();
  for (const auto& [address, buffer] : live_) segment(buffer);
  pickle_.end_list();
  pickle_.end_dict();
  pickle_.finish();
  ExportStats stats;
  stats.records = records_;
  stats.overlapped_ends = overlapped_;
  return stats;
}

// A new buffer overlapping live ones (same base included) ends them here.
void MemoryVizDocument::end_overlapping(const VizBuffer& b, bool silently) {
  const std::uint64_t end = b.address + std::max<std::uint64_t>(b.size, 1);
  auto it = live_.upper_bound(b.address);
  if (it != live_.begin()) {
    auto previous = std::prev(it);
    if (previous->second.address + std::max<std::uint64_t>(previous->second.size, 1) > b.address) it = previous;
  }
  while (it != live_.end() && it->first < end) {
    if (!silently) write_free(it->second);
    ended_early_.insert(it->second.id);
    ++overlapped_;
    it = live_.erase(it);
  }
}

void MemoryVizDocument::write_free(const VizBuffer& b) {
  entry(kFreeRequested, b, StackId{});
  entry(kFreeCompleted, b, StackId{});
  entry(kSegmentFree, b, StackId{});
}

void MemoryVizDocument::key_text(std::string_view text) {
  auto [it, inserted] = memo_.try_emplace(std::string(text), 0);
  if (inserted) {
    it->second = pickle_.text_memoized(text);
  } else {
    pickle_.get(it->second);
  }
}

void MemoryVizDocument::frames(StackId stack) {
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

void MemoryVizDocument::entry(Key action, const VizBuffer& b, StackId stack) {
  pickle_.begin_dict();
  key(kAction);
  key(action);
  key(kAddr);
  pickle_.integer(b.address);
  key(kSize);
  pickle_.integer(b.size);
  key(kStream);
  pickle_.integer(b.stream);
  key(kTimeUs);
  pickle_.integer(time_us_);
  key(kFrames);
  frames(stack);
  pickle_.end_dict();
  ++records_;
}

void MemoryVizDocument::segment(const VizBuffer& b) {
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
  pickle_.integer(b.stream);
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

}  // namespace memtool::trace::detail
