// Streams and events. Each stream is a FIFO of operations executed by its own worker thread, so
// work really runs asynchronously to the host thread that issued it and a missing synchronisation
// shows up as wrong data. Ordering across streams follows the driver: events, cuStreamWaitEvent,
// and the legacy default stream, which waits for prior work of every blocking stream of its
// context and is waited for by work issued to them afterwards.
#pragma once

#include "cuda_abi.hpp"
#include "driver.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fakecuda {

enum class StreamRole : std::uint8_t { user, legacy, per_thread };

class Stream;
class IpcEventPage;

// "Run only after `stream` completed operation number `seq`."
struct Dependency {
  std::shared_ptr<Stream> stream;
  std::uint64_t seq = 0;
};

class Stream {
 public:
  Stream(Context* ctx, StreamRole role, unsigned flags, int priority, std::uint64_t id);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Context* const context;
  const StreamRole role;
  const unsigned flags;
  const int priority;
  const std::uint64_t id;

  // Synchronises with the legacy default stream (everything but CU_STREAM_NON_BLOCKING streams).
  bool blocking() const { return role != StreamRole::user || (flags & CU_STREAM_NON_BLOCKING) == 0; }
  std::uint64_t submitted() const { return submitted_.load(std::memory_order_acquire); }
  std::uint64_t completed() const { return completed_.load(std::memory_order_acquire); }
  void wait_for(std::uint64_t seq);
  bool on_worker_thread() const { return std::this_thread::get_id() == worker_.get_id(); }

  // Called with the context's submit_mutex held.
  std::uint64_t push(std::vector<Dependency> deps, std::function<void()> run);
  void stop_and_join();

  // Legacy-stream bookkeeping, guarded by the context's submit_mutex.
  std::uint64_t legacy_seen = 0;                          // last legacy op this stream waited for
  std::unordered_map<const Stream*, std::uint64_t> seen;  // legacy stream: per stream, likewise

 private:
  struct Op {
    std::vector<Dependency> deps;
    std::function<void()> run;
    std::uint64_t seq = 0;
  };
  void work();

  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Op> queue_;
  std::atomic<std::uint64_t> submitted_{0};
  std::atomic<std::uint64_t> completed_{0};
  int waiters_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

struct EventRecord {
  std::shared_ptr<Stream> stream;
  std::uint64_t seq = 0;
  std::atomic<bool> done{false};
  std::chrono::steady_clock::time_point time;  // written before done, read after
};

struct CapturedRecord;  // capture.hpp

struct Event {
  unsigned flags = 0;
  Context* context = nullptr;
  std::mutex mutex;
  std::shared_ptr<EventRecord> last;         // the most recent cuEventRecord; null before the first
  std::shared_ptr<CapturedRecord> captured;  // non-null: last recorded in a stream capture (capture.cpp)
  std::shared_ptr<IpcEventPage> ipc;         // interprocess events: the counters both processes share (mutex)
};

// The stream a handle names: NULL means the legacy stream, or the calling thread's per-thread
// stream for the _ptsz/_ptds entry points. CUDA_ERROR_INVALID_HANDLE for unknown handles.
CUresult resolve_stream(CUstream handle, bool per_thread, std::shared_ptr<Stream>& out);
CUstream handle_of(const Stream& s);

// Appends work to a stream; returns its sequence number.
std::uint64_t enqueue(const std::shared_ptr<Stream>& s, std::function<void()> run,
                      std::vector<Dependency> extra_deps = {});

CUresult create_stream(Context& ctx, unsigned flags, int priority, CUstream& out);
CUresult destroy_stream(CUstream handle);
CUresult synchronize_stream(const std::shared_ptr<Stream>& s);
CUresult query_stream(const std::shared_ptr<Stream>& s);
CUresult synchronize_context(Context& ctx);
void synchronize_device();
void destroy_context_streams(Context& ctx);

// A worker found the device in a state a GPU would fault on; reported by later calls.
void set_sticky_error(Context* ctx, CUresult error) noexcept;
CUresult sticky_error(Context* ctx) noexcept;

CUresult create_event(Context& ctx, unsigned flags, CUevent& out);
CUresult find_event(CUevent handle, std::shared_ptr<Event>& out);
CUresult destroy_event(CUevent handle);

}  // namespace fakecuda
