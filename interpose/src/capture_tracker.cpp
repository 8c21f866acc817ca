// CaptureTracker: captures under way, markers, internal calls (see capture_tracker.hpp).
#include "memtool/interpose/capture_tracker.hpp"

#include <algorithm>

#include "memtool/interpose/per_thread_streams.hpp"

namespace memtool::interpose {
namespace {

// How deep the calling thread is in InternalCalls: only the outermost takes the gate and
// exchanges the capture mode (a nested shared lock could wait behind a BeginCapture that waits
// for the outer one).
thread_local int t_internal_depth = 0;

// The calling thread's name for a recorded stream (its own per-thread stream is the handle 2).
CUstream as_stream(std::uint64_t stream) { return stream_handle(stream); }

// The thread's capture mode exchanged for RELAXED while the tracker records a marker itself.
class RelaxedMode {
 public:
  explicit RelaxedMode(const CaptureFunctions& f) : f_(f) {
    if (f_.exchange_capture_mode != nullptr) exchanged_ = f_.exchange_capture_mode(&mode_) == CUDA_SUCCESS;
  }
  ~RelaxedMode() {
    if (exchanged_) (void)f_.exchange_capture_mode(&mode_);
  }
  RelaxedMode(const RelaxedMode&) = delete;
  RelaxedMode& operator=(const RelaxedMode&) = delete;

 private:
  const CaptureFunctions& f_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool exchanged_ = false;
};

}  // namespace

CaptureTracker::CaptureTracker(const CaptureFunctions& functions) : f_(functions) {}

CaptureTracker::~CaptureTracker() {
  // Markers are left to the driver: the tracker lives as long as the process (its events may
  // outlive the context), and tests destroy their fakes' events with the fakes.
}

StreamCapture CaptureTracker::stream_state(std::uint64_t stream) const noexcept {
  if (!any() || f_.stream_is_capturing == nullptr) return StreamCapture::none;
  if (is_foreign_per_thread_stream(stream)) {
    // Another thread's per-thread stream cannot be asked about from here; memtool reaches it
    // only through the legacy stream (a blocking stream, it is ordered with that one), which is
    // usable exactly when no blocking stream captures, that per-thread stream included.
    return stream_state(0) == StreamCapture::none ? StreamCapture::none : StreamCapture::unusable;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  // cuStreamIsCapturing is legal in every mode and on every stream; on the legacy stream beside
  // a capturing blocking stream it says CUDA_ERROR_STREAM_CAPTURE_IMPLICIT without invalidating
  // anything (cuda.h): memtool must then keep off that stream too.
  if (f_.stream_is_capturing(as_stream(stream), &status) != CUDA_SUCCESS) return StreamCapture::unusable;
  return status == CU_STREAM_CAPTURE_STATUS_NONE ? StreamCapture::none : StreamCapture::capturing;
}

std::optional<CUevent> CaptureTracker::marker(std::uint64_t stream) const noexcept {
  // Another thread's marker may predate work that thread issued since: it orders nothing here.
  if (is_foreign_per_thread_stream(stream)) return std::nullopt;
  std::lock_guard lock(mutex_);
  const auto it = markers_.find(stream);
  if (it == markers_.end()) return std::nullopt;
  return it->second;
}

void CaptureTracker::lock_exclusive() noexcept {
  // A thread of the program inside one of memtool's internal calls holds the gate shared until
  // its driver call returns (an enqueue, or a wait for work the GPU finishes on its own).
  gate_.lock();
}

// Records the marker of `stream` (the gate is held exclusively: the stream cannot start
// capturing meanwhile). A stream that is capturing or unusable already keeps the marker it has:
// no work can have been issued to it since (captured work aside), so that marker still means
// "after everything it will run before its capture ends". A marker that cannot be recorded is
// dropped: memtool then refuses to guess for that stream.
void CaptureTracker::record_marker_locked(std::uint64_t stream) noexcept {
  // Captures begin and waits are issued on the calling thread's streams; another thread's
  // per-thread stream never gets a marker (it could not be recorded on it from here).
  if (is_foreign_per_thread_stream(stream)) return;
  if (stream_state(stream) != StreamCapture::none) return;
  const RelaxedMode relaxed(f_);
  std::lock_guard lock(mutex_);
  auto it = markers_.find(stream);
  if (it == markers_.end()) {
    CUevent event = nullptr;
    if (f_.event_create == nullptr || f_.event_create(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return;
    it = markers_.emplace(stream, event).first;
  }
  if (f_.event_record == nullptr || f_.event_record(it->second, as_stream(stream)) != CUDA_SUCCESS) {
    if (f_.event_destroy != nullptr) (void)f_.event_destroy(it->second);
    markers_.erase(it);
  }
}

void CaptureTracker::before_begin(std::uint64_t stream) noexcept {
  lock_exclusive();
  underway_.fetch_add(1, std::memory_order_acq_rel);
  record_marker_locked(stream);
  // A blocking stream's capture makes the legacy stream unusable until it ends: mark it too,
  // unless it is unusable already (another blocking capture runs; its marker still holds).
  unsigned int flags = CU_STREAM_NON_BLOCKING;
  if (f_.stream_get_flags != nullptr && f_.stream_get_flags(as_stream(stream), &flags) == CUDA_SUCCESS &&
      (flags & CU_STREAM_NON_BLOCKING) == 0 && stream != 0) {
    record_marker_locked(0);
  }
}

void CaptureTracker::after_begin(std::uint64_t stream, bool began) noexcept {
  if (began) {
    begun_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    origins_.push_back(stream);
  } else {
    underway_.fetch_sub(1, std::memory_order_acq_rel);
  }
  gate_.unlock();
}

void CaptureTracker::after_end(std::uint64_t stream) noexcept {
  if (!any()) return;
  // cuStreamEndCapture on a forked stream, or on a global capture's other thread, fails and
  // leaves the capture running: it is over only once the driver says the stream is not capturing.
  if (stream_state(stream) != StreamCapture::none) return;
  std::lock_guard lock(mutex_);
  const auto it = std::find(origins_.begin(), origins_.end(), stream);
  if (it == origins_.end()) return;  // begun before memtool saw it, or ended already
  origins_.erase(it);
  underway_.fetch_sub(1, std::memory_order_acq_rel);
}

void CaptureTracker::before_wait(std::uint64_t stream) noexcept {
  lock_exclusive();
  record_marker_locked(stream);
}

void CaptureTracker::after_wait() noexcept { gate_.unlock(); }

CaptureTracker::InternalCall::InternalCall(CaptureTracker* tracker) noexcept {
  if (t_internal_depth++ > 0 || tracker == nullptr) return;
  tracker->gate_.lock_shared();
  tracker_ = tracker;
  if (!tracker->any() || tracker->f_.exchange_capture_mode == nullptr) return;
  saved_mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  relaxed_ = tracker->f_.exchange_capture_mode(&saved_mode_) == CUDA_SUCCESS;
}

CaptureTracker::InternalCall::~InternalCall() {
  --t_internal_depth;
  if (tracker_ == nullptr) return;
  if (relaxed_) (void)tracker_->f_.exchange_capture_mode(&saved_mode_);
  tracker_->gate_.unlock_shared();
}

}  // namespace memtool::interpose
