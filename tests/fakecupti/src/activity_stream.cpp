// ActivityStream (see activity_stream.hpp).
#include "activity_stream.hpp"

#include <cstdlib>
#include <cstring>

namespace fakecupti {

ActivityStream::ActivityStream()
    : correlation_last_(std::getenv("FAKECUPTI_CORRELATION_LAST") != nullptr &&
                        std::strcmp(std::getenv("FAKECUPTI_CORRELATION_LAST"), "1") == 0),
      delivery_([this] { run_delivery(); }) {}

void ActivityStream::set_callbacks(CUpti_BuffersCallbackRequestFunc request,
                                   CUpti_BuffersCallbackCompleteFunc complete) {
  std::lock_guard lock(mutex_);
  request_ = request;
  complete_ = complete;
}

bool ActivityStream::has_callbacks() const {
  std::lock_guard lock(mutex_);
  return request_ != nullptr && complete_ != nullptr;
}

void ActivityStream::append_locked(const void* record, std::size_t bytes, std::unique_lock<std::mutex>& lock) {
  (void)lock;
  if (request_ == nullptr) return;
  if (current_.data == nullptr || current_.size - current_.used < bytes) {
    if (current_.data != nullptr) {
      full_.push_back(current_);  // the delivery thread hands it back
      current_ = Buffer{};
      full_cv_.notify_one();
    }
    std::uint8_t* data = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    ++totals_.buffers_requested;
    request_(&data, &size, &max_records);  // the client's callback must not call CUPTI
    if (data == nullptr || size < bytes) {
      ++totals_.requests_refused;
      ++totals_.dropped;
      ++dropped_since_read_;
      if (data != nullptr) full_.push_back(Buffer{data, size, 0});  // too small: hand it back empty
      return;
    }
    current_ = Buffer{data, size, 0};
  }
  std::memcpy(current_.data + current_.used, record, bytes);
  current_.used += bytes;
  ++totals_.records;
}

void ActivityStream::append(const void* record, std::size_t bytes, bool api_side) {
  if (forked_.load(std::memory_order_relaxed)) return;
  std::unique_lock lock(mutex_);
  if (api_side && correlation_last_) {
    const auto* p = static_cast<const std::uint8_t*>(record);
    held_api_.emplace_back(p, p + bytes);
    return;
  }
  append_locked(record, bytes, lock);
}

void ActivityStream::deliver(Buffer buffer) {
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  {
    std::lock_guard lock(mutex_);
    complete = complete_;
    ++totals_.buffers_delivered;
  }
  if (complete != nullptr) complete(nullptr, 0, buffer.data, buffer.size, buffer.used);
}

void ActivityStream::flush_all() {
  for (int round = 0; round < 2; ++round) {  // the activity records, then what was held back
    std::deque<Buffer> ready;
    if (forked_.load(std::memory_order_relaxed)) return;
    {
      std::unique_lock lock(mutex_);
      if (round == 1) {
        if (held_api_.empty()) break;
        std::vector<std::vector<std::uint8_t>> held;
        held.swap(held_api_);
        for (const auto& record : held) append_locked(record.data(), record.size(), lock);
      }
      if (current_.data != nullptr && current_.used != 0) {
        full_.push_back(current_);
        current_ = Buffer{};
      }
      ready.swap(full_);
    }
    for (const Buffer& buffer : ready) deliver(buffer);
  }
  // As CUPTI's: on return, every buffer completed before the call has been handed back.
  std::unique_lock lock(mutex_);
  delivered_cv_.wait(lock, [&] { return delivering_ == 0; });
}

std::size_t ActivityStream::take_dropped() {
  if (forked_.load(std::memory_order_relaxed)) return 0;
  std::lock_guard lock(mutex_);
  const std::size_t n = dropped_since_read_;
  dropped_since_read_ = 0;
  return n;
}

ActivityStream::Totals ActivityStream::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

void ActivityStream::forget_after_fork() {
  // Only this thread exists in the child; the mutex may be held by a thread that does not.
  forked_.store(true, std::memory_order_relaxed);
}

void ActivityStream::run_delivery() {
  std::unique_lock lock(mutex_);
  for (;;) {
    full_cv_.wait(lock, [&] { return !full_.empty(); });
    const Buffer buffer = full_.front();
    full_.pop_front();
    ++delivering_;
    lock.unlock();
    deliver(buffer);
    lock.lock();
    --delivering_;
    delivered_cv_.notify_all();
  }
}

}  // namespace fakecupti
