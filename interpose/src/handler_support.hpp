// What the handler files share (handlers.cpp, handlers_access.cpp): whether work on a stream is
// captured rather than run, and telling the strategies what a piece of work touches before the
// real call queues it.
#pragma once

#include <chrono>
#include <cstdint>

#include "memtool/interpose/handlers.hpp"

namespace memtool::interpose::detail {

// What GraphNoteKind::captured_work says was captured.
inline constexpr std::uint8_t kCapturedLaunch = 0;
inline constexpr std::uint8_t kCapturedCopy = 1;
inline constexpr std::uint8_t kCapturedMemset = 2;
inline constexpr std::uint8_t kCapturedGraphLaunch = 3;

template <class F>
std::uint64_t stream_of(const Call<F>& call, CUstream stream) {
  return recorded_stream(stream, call.variant);
}

// Whether work issued to `stream` now is captured into a graph rather than run (or refused
// beside a capture: the legacy stream next to a capturing blocking stream). Such work goes
// straight to the driver: it touches nothing now, and no strategy may see it (issue 32). One
// relaxed load while no capture runs.
template <class F>
bool captured(const Call<F>& call, std::uint64_t stream) {
  const CaptureTracker* captures = call.recorder.captures();
  return captures != nullptr && captures->any() && captures->stream_state(stream) != StreamCapture::none;
}

// Work on `stream` is about to touch what the recorder found: the strategies order the stream
// after the memory's earlier users, before the real call queues the work. Work that touches no
// buffer is told only when it may reach some anyway (swap strategy: pointer tables).
template <class F>
void order(const Call<F>& call, const LaunchSeen& seen, std::uint64_t stream) {
  if (!call.runtimes.wants_accesses()) return;
  if (seen.touched.empty() && seen.reached.empty() && seen.escaped.empty() && !seen.reaches_all) return;
  engine::WorkItem item;
  item.stream = stream;
  item.touched = seen.touched;
  item.reached = seen.reached;
  item.escaped = seen.escaped;
  item.reaches_all = seen.reaches_all;
  item.kernel = seen.kernel;
  call.runtimes.before_item(item);
}

// A synchronisation call of the program's (`real`, the driver's), timed: the strategies hear how
// long the host waited in it (engine::Resource::on_host_sync), after it returned.
template <class F, class Real>
CUresult synchronise(const Call<F>& call, std::uint64_t stream, Real real) {
  if (!call.runtimes.wants_accesses()) return real();
  const auto start = std::chrono::steady_clock::now();
  const CUresult result = real();
  const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  call.runtimes.on_host_sync(stream, static_cast<std::uint64_t>(waited.count()));
  return result;
}

}  // namespace memtool::interpose::detail
