// CaptureTracker: which of the program's streams capture into a CUDA graph, and what keeps
// memtool's own driver calls out of every capture (issue 32; DESIGN.md §9).
//  - The BeginCapture hooks count the captures under way, EndCapture ends them. While none runs,
//    every question is one relaxed load.
//  - While captures run, stream_state() asks the driver (cuStreamIsCapturing, never hooked):
//    capture spreads to other streams through event waits, and only the driver knows where.
//  - InternalCall: every driver call memtool makes for itself (DriverDevice, the recorder's
//    queries) runs inside one. While captures run it exchanges the thread's capture mode to
//    RELAXED (cuThreadExchangeStreamCaptureMode, never hooked) and restores it after, so a
//    potentially unsafe call of memtool's never invalidates a program's global-mode capture. It
//    also holds the tracker's gate shared: a stream starts capturing (BeginCapture, or a wait on
//    a captured event that joins it to a capture) only with the gate held exclusively, so what
//    memtool found of a stream holds for the rest of its call.
//  - Markers: an event recorded on a stream just before it may start capturing. While the
//    stream captures, "after the work issued to it so far" is "after its marker": work issued
//    during the capture is recorded into the graph, not run.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "memtool/interpose/cuda_api.hpp"

namespace memtool::interpose {

// The driver functions the tracker calls (never hooked ones: the real driver's). Unit tests
// pass fakes.
struct CaptureFunctions {
  CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*exchange_capture_mode)(CUstreamCaptureMode*) = nullptr;
  CUresult (*stream_get_flags)(CUstream, unsigned int*) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned int) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;

  [[nodiscard]] bool complete() const {
    return stream_is_capturing != nullptr && exchange_capture_mode != nullptr && event_create != nullptr &&
           event_record != nullptr;
  }
};

// What memtool may do with a stream now.
enum class StreamCapture : std::uint8_t {
  none,       // not capturing: use it as it is
  capturing,  // in a capture sequence (active or invalidated): never touch it
  unusable,   // the driver refuses to say (the legacy stream beside a capturing blocking one)
};

class CaptureTracker {
 public:
  explicit CaptureTracker(const CaptureFunctions& functions);
  ~CaptureTracker();
  CaptureTracker(const CaptureTracker&) = delete;
  CaptureTracker& operator=(const CaptureTracker&) = delete;

  // Whether captures may be under way (the hot path's only question).
  [[nodiscard]] bool any() const noexcept { return underway_.load(std::memory_order_acquire) != 0; }
  // How `stream` (a recorded stream handle: 0 legacy, CU_STREAM_PER_THREAD the calling
  // thread's) stands; none whenever no capture runs.
  [[nodiscard]] StreamCapture stream_state(std::uint64_t stream) const noexcept;
  // The marker recorded on `stream` before it started capturing, if any.
  [[nodiscard]] std::optional<CUevent> marker(std::uint64_t stream) const noexcept;

  // --- the capture hooks ---
  // Around cuStreamBeginCapture* on `stream`: before the real call (the gate is then held
  // exclusively until after_begin), and after it with its result.
  void before_begin(std::uint64_t stream) noexcept;
  void after_begin(std::uint64_t stream, bool began) noexcept;
  // After cuStreamEndCapture on `stream`, whatever it returned: a capture begun there that is
  // no longer under way is over.
  void after_end(std::uint64_t stream) noexcept;
  // Around cuStreamWaitEvent while captures run: the wait may join `stream` to a capture, so
  // it gets a marker first (gate held exclusively until after_wait).
  void before_wait(std::uint64_t stream) noexcept;
  void after_wait() noexcept;

  [[nodiscard]] std::uint64_t captures_begun() const noexcept { return begun_.load(std::memory_order_relaxed); }

  // RAII around each driver call memtool makes for itself (see the file comment). Nested ones
  // on one thread do nothing; `tracker` may be null (no capture tracking).
  class InternalCall {
   public:
    explicit InternalCall(CaptureTracker* tracker) noexcept;
    ~InternalCall();
    InternalCall(const InternalCall&) = delete;
    InternalCall& operator=(const InternalCall&) = delete;

   private:
    CaptureTracker* tracker_ = nullptr;  // null: nothing to undo
    bool relaxed_ = false;
    CUstreamCaptureMode saved_mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
  };

 private:
  void record_marker_locked(std::uint64_t stream) noexcept;  // gate held exclusively
  void lock_exclusive() noexcept;

  CaptureFunctions f_;
  std::atomic<int> underway_{0};  // captures begun (or beginning) and not ended
  std::atomic<std::uint64_t> begun_{0};
  mutable std::shared_mutex gate_;
  mutable std::mutex mutex_;            // origins_ and markers_
  std::vector<std::uint64_t> origins_;  // streams whose capture we saw begin
  std::unordered_map<std::uint64_t, CUevent> markers_;
};

}  // namespace memtool::interpose
