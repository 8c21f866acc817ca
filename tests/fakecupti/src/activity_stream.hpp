// fakecupti's activity stream: records go into the client's buffers as CUPTI does it — a buffer
// asked for through the client's request callback when the current one is full (none given:
// the record is dropped and counted), full buffers handed back through the completion callback
// on fakecupti's own delivery thread, and everything handed back on cuptiActivityFlushAll.
// FAKECUPTI_CORRELATION_LAST=1 holds API-side records (external correlation, driver and runtime
// API records) back until the next flush, after the activity records: a client must join them
// in whatever order buffers come.
#pragma once

#include <cupti.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace fakecupti {

class ActivityStream {
 public:
  ActivityStream();  // starts the delivery thread; never destroyed (it lives as long as the process)
  ActivityStream(const ActivityStream&) = delete;
  ActivityStream& operator=(const ActivityStream&) = delete;

  void set_callbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete);
  [[nodiscard]] bool has_callbacks() const;

  // Appends one record (its bytes, a multiple of 8). `api_side`: held back under
  // FAKECUPTI_CORRELATION_LAST until the next flush.
  void append(const void* record, std::size_t bytes, bool api_side);
  // Hands back every buffer with records, on the calling thread.
  void flush_all();
  // Records dropped for want of a buffer since the last call.
  [[nodiscard]] std::size_t take_dropped();

  struct Totals {
    std::uint64_t records = 0;
    std::uint64_t dropped = 0;
    std::uint64_t buffers_delivered = 0;
    std::uint64_t buffers_requested = 0;
    std::uint64_t requests_refused = 0;
  };
  [[nodiscard]] Totals totals() const;
  void forget_after_fork();  // the child has no delivery thread and must not deliver

 private:
  struct Buffer {
    std::uint8_t* data = nullptr;
    std::size_t size = 0;
    std::size_t used = 0;
  };
  void append_locked(const void* record, std::size_t bytes, std::unique_lock<std::mutex>& lock);
  void deliver(Buffer buffer);
  void run_delivery();

  mutable std::mutex mutex_;
  std::condition_variable full_cv_;
  std::condition_variable delivered_cv_;
  std::size_t delivering_ = 0;  // buffers the delivery thread is handing back now
  CUpti_BuffersCallbackRequestFunc request_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete_ = nullptr;
  Buffer current_;
  std::deque<Buffer> full_;
  std::vector<std::vector<std::uint8_t>> held_api_;  // FAKECUPTI_CORRELATION_LAST
  const bool correlation_last_;
  std::size_t dropped_since_read_ = 0;
  Totals totals_;
  std::atomic<bool> forked_{false};
  std::thread delivery_;
};

}  // namespace fakecupti
