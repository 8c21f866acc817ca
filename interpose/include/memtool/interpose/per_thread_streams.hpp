// Per-thread default streams as memtool names them. The handle CU_STREAM_PER_THREAD (and the
// null stream of the _ptsz/_ptds entry points, which a program built with per-thread default
// streams calls) means a different stream on every thread, so memtool never records the handle
// itself: each thread's per-thread stream gets an id of its own, tagged in bits no CUstream has
// (a handle is a user-space address or one of cuda.h's small constants), assigned on the
// thread's first use and never reused. Translated back where memtool issues work on a stream
// (DriverDevice, CaptureTracker): the calling thread's id is the handle CU_STREAM_PER_THREAD;
// another thread's per-thread stream has no name on this thread (see driver_device.hpp).
#pragma once

#include <cstdint>

#include "memtool/interpose/cuda_api.hpp"

namespace memtool::interpose {

// The tag of a per-thread stream id (the top 16 bits); the low bits count threads from 1.
inline constexpr std::uint64_t kPerThreadStreamTag = 0xF7D5'0000'0000'0000ull;
inline constexpr std::uint64_t kPerThreadStreamTagMask = 0xFFFF'0000'0000'0000ull;

// The id of the calling thread's per-thread default stream.
[[nodiscard]] std::uint64_t own_per_thread_stream() noexcept;

// Whether `stream` (a recorded stream) is some thread's per-thread default stream.
[[nodiscard]] constexpr bool is_per_thread_stream(std::uint64_t stream) noexcept {
  return (stream & kPerThreadStreamTagMask) == kPerThreadStreamTag;
}

// Whether `stream` is a per-thread default stream of a thread other than the calling one.
[[nodiscard]] inline bool is_foreign_per_thread_stream(std::uint64_t stream) noexcept {
  return is_per_thread_stream(stream) && stream != own_per_thread_stream();
}

// The recorded stream of a call given `stream`: CU_STREAM_PER_THREAD, or the null stream of a
// per-thread entry point, is the calling thread's per-thread stream; any other handle is itself.
[[nodiscard]] inline std::uint64_t recorded_stream_of(CUstream stream, bool per_thread_entry) noexcept {
  if (stream == CU_STREAM_PER_THREAD || (stream == nullptr && per_thread_entry)) return own_per_thread_stream();
  return reinterpret_cast<std::uintptr_t>(stream);
}

// The handle the calling thread names a recorded stream with: its own per-thread stream is
// CU_STREAM_PER_THREAD, a real stream its handle. (Another thread's per-thread stream has none:
// callers decide; this returns CU_STREAM_LEGACY, the one stream every blocking stream, the
// per-thread ones included, is ordered with.)
[[nodiscard]] inline CUstream stream_handle(std::uint64_t stream) noexcept {
  if (!is_per_thread_stream(stream)) return reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(stream));
  return stream == own_per_thread_stream() ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
}

}  // namespace memtool::interpose
