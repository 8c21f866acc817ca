// Where the work that may read a buffer's host copy through its address ends, per stream: a copy
// back remaps the address (explicit mode), so that work must have run first (swap_in.hpp). An
// event recorded on the stream when the copy back is decided would also wait for every later item
// queued there, however unrelated: instead each work item that may reach or touch a buffer that is
// out gets one mark, an event recorded on its stream right after it (once the issuing thread calls
// in again: only then is the item queued), shared by every buffer it may reach, and each buffer
// keeps, per user stream, the mark of the last such item. A mark not recorded yet, or one a
// buffer's stream lost track of (another thread's item on the same stream still being issued),
// answers `unknown`: the caller then waits for the whole stream, as before. A mark retires once
// its event has completed, its event back to the spares; a buffer's mark no longer held is done.
// Not thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>

#include "host_waits.hpp"
#include "memtool/engine/device.hpp"
#include "spare_events.hpp"
#include "swap_mover.hpp"

namespace memtool::engine::detail {

class UserMarks {
 public:
  // Marks held at once, recorded or not: past it, new users get none (their stream is waited for
  // whole), so a device whose events never complete cannot grow the table without bound.
  static constexpr std::size_t kMaxMarks = 4096;

  UserMarks(Device& device, SpareEvents& events) : device_(device), events_(events) {}
  UserMarks(const UserMarks&) = delete;
  UserMarks& operator=(const UserMarks&) = delete;

  // The calling thread's work item, about to be queued on `stream`, may reach or touch `b`: its
  // stream joins b's users, and where b is not on the device, b keeps the item's mark for it.
  void user(SwapBuffer& b, StreamId stream) {
    if (std::find(b.streams.begin(), b.streams.end(), stream) == b.streams.end()) b.streams.push_back(stream);
    if (b.resident) return;  // its users are forgotten when it leaves (forget)
    const std::uint64_t mark = mark_of_item(stream);
    const auto slot = std::find_if(b.user_marks.begin(), b.user_marks.end(),
                                   [&](const SwapBuffer::UserMark& m) { return m.stream == stream; });
    if (slot == b.user_marks.end()) {
      b.user_marks.push_back(SwapBuffer::UserMark{stream, mark});
      return;
    }
    // A later item on the same stream runs after the earlier one, unless the earlier one is
    // another thread's, not queued yet: it may be queued after this item's mark. Lost track of
    // once, the stream is waited for whole until b's users are forgotten.
    if (slot->mark == kUnknown) return;
    const auto held = marks_.find(slot->mark);
    const bool earlier_unqueued = held != marks_.end() && held->second.state == State::issuing &&
                                  held->second.thread != std::this_thread::get_id();
    slot->mark = earlier_unqueued ? kUnknown : mark;
  }

  // The calling thread's last work item is queued by now (its calls are sequential): its mark is
  // recorded after it. Marks whose event has completed retire.
  void queued() {
    const auto it = issuing_.find(std::this_thread::get_id());
    if (it != issuing_.end()) {
      const std::uint64_t id = it->second;
      Mark& m = marks_.at(id);
      issuing_.erase(it);
      bool ok = false;
      m.event = events_.take(device_, ok);
      if (ok && device_.record_event(m.event, m.stream) == kSuccess) {
        m.state = State::recorded;
        recorded_[m.stream].push_back(id);
      } else {
        if (ok) events_.give(m.event);
        m.state = State::failed;  // never retires: its buffers wait for the stream (kMaxMarks)
      }
    }
    retire();
  }

  enum class Reach : std::uint8_t { done, not_yet, unknown };
  // Whether the work b's users queued on `stream` while it was out has run; with `wait`, waited
  // for where it has not (a stall: `waited` set). `unknown`: no mark tells.
  Reach reached(const SwapBuffer& b, StreamId stream, bool wait, HostWaits& host_waits, bool& waited) {
    const auto slot = std::find_if(b.user_marks.begin(), b.user_marks.end(),
                                   [&](const SwapBuffer::UserMark& m) { return m.stream == stream; });
    if (slot == b.user_marks.end() || slot->mark == kUnknown) return Reach::unknown;
    const auto it = marks_.find(slot->mark);
    if (it == marks_.end()) return Reach::done;  // retired: its event had completed
    const Mark& m = it->second;
    // The calling thread's item still being issued: no wait covers it yet, and it will be queued
    // after a copy back decided now, unordered with one on another stream. Not without a wait;
    // on demand the copy runs on the item's own stream, before it.
    if (m.state == State::issuing && m.thread == std::this_thread::get_id() && !wait) return Reach::not_yet;
    if (m.state != State::recorded) return Reach::unknown;
    if (device_.event_completed(m.event)) return Reach::done;
    if (!wait) return Reach::not_yet;
    waited = true;
    return host_waits.wait(m.event) ? Reach::done : Reach::not_yet;
  }

  // b's users are forgotten: it left, or came back once they had run.
  static void forget(SwapBuffer& b) {
    b.streams.clear();
    b.user_marks.clear();
  }

  // Every recorded mark's event back to the spares (teardown, before they are destroyed).
  void release() {
    for (const auto& [id, m] : marks_) {
      if (m.state == State::recorded) events_.give(m.event);
    }
    marks_.clear();
    issuing_.clear();
    recorded_.clear();
  }

  [[nodiscard]] std::size_t held() const { return marks_.size(); }

 private:
  static constexpr std::uint64_t kUnknown = 0;
  enum class State : std::uint8_t { issuing, recorded, failed };
  struct Mark {
    StreamId stream = 0;
    EventId event = 0;
    State state = State::issuing;
    std::thread::id thread;
  };

  // The calling thread's item on `stream`: its mark, made at its first buffer; kUnknown where
  // there is none to be had.
  std::uint64_t mark_of_item(StreamId stream) {
    const std::thread::id self = std::this_thread::get_id();
    const auto it = issuing_.find(self);
    if (it != issuing_.end()) return marks_.at(it->second).stream == stream ? it->second : kUnknown;
    if (marks_.size() >= kMaxMarks) return kUnknown;
    const std::uint64_t id = next_++;
    marks_.emplace(id, Mark{stream, 0, State::issuing, self});
    issuing_.emplace(self, id);
    return id;
  }

  // Events on one stream complete in order: per stream, the oldest recorded marks that have
  // completed retire, up to the first that has not (one query per stream that holds marks).
  void retire() {
    for (auto& [stream, ids] : recorded_) {
      while (!ids.empty()) {
        const auto it = marks_.find(ids.front());
        if (!device_.event_completed(it->second.event)) break;
        events_.give(it->second.event);
        marks_.erase(it);
        ids.pop_front();
      }
    }
  }

  Device& device_;
  SpareEvents& events_;
  std::map<std::uint64_t, Mark> marks_;                         // by id, oldest first
  std::unordered_map<std::thread::id, std::uint64_t> issuing_;  // per thread: its item's mark
  std::map<StreamId, std::deque<std::uint64_t>> recorded_;      // per stream: recorded marks, oldest first
  std::uint64_t next_ = 1;
};

}  // namespace memtool::engine::detail
