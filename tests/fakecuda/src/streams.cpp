// Stream workers, the legacy default stream's implicit ordering, synchronisation and events.
#include "streams.hpp"

#include "memory.hpp"
#include "stats.hpp"

#include <algorithm>

namespace fakecuda {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<const Stream*, std::shared_ptr<Stream>> streams;
  std::unordered_map<const Event*, std::shared_ptr<Event>> events;
  std::atomic<std::uint64_t> next_stream_id{16};
};

Registry& registry() {
  static auto* r = new Registry;  // leaked: workers may outlive static destruction
  return *r;
}

// The calling thread's per-thread default streams, one per context. When the thread exits its
// streams finish their work and go away, as the driver's do, so short-lived threads do not leave
// worker threads behind.
struct PerThreadStreams {
  std::vector<std::pair<Context*, std::shared_ptr<Stream>>> streams;
  ~PerThreadStreams() {
    if (is_forked_child()) {
      return;  // the workers belong to the parent process; there is nothing here to join
    }
    for (auto& [ctx, s] : streams) {
      if (ctx->alive.load()) {
        std::lock_guard<std::mutex> lock(ctx->submit_mutex);
        ctx->streams.erase(std::remove(ctx->streams.begin(), ctx->streams.end(), s), ctx->streams.end());
        if (ctx->legacy) {
          ctx->legacy->seen.erase(s.get());
        }
      }
      s->stop_and_join();
    }
  }
};
thread_local PerThreadStreams tls_per_thread_streams;

std::shared_ptr<Stream> legacy_stream(Context& ctx) {
  std::lock_guard<std::mutex> lock(ctx.submit_mutex);
  if (!ctx.legacy) {
    ctx.legacy = std::make_shared<Stream>(&ctx, StreamRole::legacy, 0, 0, 1);
  }
  return ctx.legacy;
}

std::shared_ptr<Stream> per_thread_stream(Context& ctx) {
  for (const auto& [c, s] : tls_per_thread_streams.streams) {
    if (c == &ctx) {
      return s;
    }
  }
  auto s = std::make_shared<Stream>(&ctx, StreamRole::per_thread, 0, 0, registry().next_stream_id++);
  {
    std::lock_guard<std::mutex> lock(ctx.submit_mutex);
    ctx.streams.push_back(s);
  }
  tls_per_thread_streams.streams.emplace_back(&ctx, s);
  return s;
}

}  // namespace

// ---- Stream ---------------------------------------------------------------------------

Stream::Stream(Context* ctx, StreamRole r, unsigned f, int p, std::uint64_t stream_id)
    : context(ctx), role(r), flags(f), priority(p), id(stream_id), worker_([this] { work(); }) {}

Stream::~Stream() { stop_and_join(); }

void Stream::stop_and_join() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  if (worker_.joinable()) {
    if (on_worker_thread()) {
      worker_.detach();  // destroyed from its own callback: let it finish on its own
    } else {
      worker_.join();
    }
  }
}

std::uint64_t Stream::push(std::vector<Dependency> deps, std::function<void()> run) {
  const std::uint64_t seq = submitted_.load(std::memory_order_relaxed) + 1;
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    was_empty = queue_.empty();
    queue_.push_back(Op{std::move(deps), std::move(run), seq});
    submitted_.store(seq, std::memory_order_release);
  }
  if (was_empty) {
    work_cv_.notify_one();
  }
  return seq;
}

void Stream::wait_for(std::uint64_t seq) {
  if (completed() >= seq) {
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiters_;
  done_cv_.wait(lock, [&] { return completed_.load(std::memory_order_acquire) >= seq; });
  --waiters_;
}

void Stream::work() {
  for (;;) {
    Op op;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) {
        return;  // stopping, and everything issued has run
      }
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    for (const Dependency& d : op.deps) {
      d.stream->wait_for(d.seq);
    }
    op.deps.clear();
    try {
      op.run();
    } catch (...) {
      set_sticky_error(context, CUDA_ERROR_LAUNCH_FAILED);
    }
    op.run = nullptr;  // release captures before reporting completion
    std::lock_guard<std::mutex> lock(mutex_);
    completed_.store(op.seq, std::memory_order_release);
    if (waiters_ > 0) {
      done_cv_.notify_all();
    }
  }
}

// ---- handles --------------------------------------------------------------------------

CUresult resolve_stream(CUstream handle, bool per_thread, std::shared_ptr<Stream>& out) {
  if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    Context* ctx = nullptr;
    FC_TRY(current_context(ctx));
    const bool want_per_thread = handle == CU_STREAM_PER_THREAD || (handle == nullptr && per_thread);
    out = want_per_thread ? per_thread_stream(*ctx) : legacy_stream(*ctx);
    return CUDA_SUCCESS;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.streams.find(reinterpret_cast<const Stream*>(handle));
  if (it == r.streams.end()) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  out = it->second;
  return CUDA_SUCCESS;
}

CUstream handle_of(const Stream& s) {
  switch (s.role) {
    case StreamRole::legacy:
      return CU_STREAM_LEGACY;
    case StreamRole::per_thread:
      return CU_STREAM_PER_THREAD;
    case StreamRole::user:
      break;
  }
  return reinterpret_cast<CUstream>(const_cast<Stream*>(&s));
}

std::uint64_t enqueue(const std::shared_ptr<Stream>& s, std::function<void()> run, std::vector<Dependency> deps) {
  Context& ctx = *s->context;
  std::lock_guard<std::mutex> lock(ctx.submit_mutex);
  if (s->role == StreamRole::legacy) {
    for (const auto& other : ctx.streams) {
      if (!other->blocking()) {
        continue;
      }
      const std::uint64_t sub = other->submitted();
      std::uint64_t& seen = s->seen[other.get()];
      if (sub > seen) {
        if (other->completed() < sub) {
          deps.push_back({other, sub});
        }
        seen = sub;
      }
    }
  } else if (s->blocking() && ctx.legacy) {
    const std::uint64_t sub = ctx.legacy->submitted();
    if (sub > s->legacy_seen) {
      if (ctx.legacy->completed() < sub) {
        deps.push_back({ctx.legacy, sub});
      }
      s->legacy_seen = sub;
    }
  }
  return s->push(std::move(deps), std::move(run));
}

CUresult create_stream(Context& ctx, unsigned flags, int priority, CUstream& out) {
  Registry& r = registry();
  auto s = std::make_shared<Stream>(&ctx, StreamRole::user, flags, priority, r.next_stream_id++);
  {
    std::lock_guard<std::mutex> lock(ctx.submit_mutex);
    ctx.streams.push_back(s);
  }
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.streams.emplace(s.get(), s);
  }
  count(stats().stream_creates);
  out = handle_of(*s);
  return CUDA_SUCCESS;
}

CUresult destroy_stream(CUstream handle) {
  if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  std::shared_ptr<Stream> s;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.streams.find(reinterpret_cast<const Stream*>(handle));
    if (it == r.streams.end()) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    s = std::move(it->second);
    r.streams.erase(it);
  }
  Context& ctx = *s->context;
  {
    std::lock_guard<std::mutex> lock(ctx.submit_mutex);
    ctx.streams.erase(std::remove(ctx.streams.begin(), ctx.streams.end(), s), ctx.streams.end());
    if (ctx.legacy) {
      ctx.legacy->seen.erase(s.get());
    }
  }
  // Work already issued still runs to completion, as on the driver.
  s->stop_and_join();
  return CUDA_SUCCESS;
}

// ---- synchronisation ------------------------------------------------------------------

void set_sticky_error(Context* ctx, CUresult error) noexcept {
  if (ctx != nullptr) {
    int expected = CUDA_SUCCESS;
    ctx->sticky_error.compare_exchange_strong(expected, static_cast<int>(error));
  }
}

CUresult sticky_error(Context* ctx) noexcept {
  return ctx == nullptr ? CUDA_SUCCESS : static_cast<CUresult>(ctx->sticky_error.load());
}

CUresult synchronize_stream(const std::shared_ptr<Stream>& s) {
  std::uint64_t target = s->submitted();
  if (s->role == StreamRole::legacy) {
    // Synchronising the NULL stream includes the blocking streams' earlier work: a marker op
    // picks up exactly those dependencies.
    target = enqueue(s, [] {});
  }
  s->wait_for(target);
  memory().release_pools_to_threshold(s->context->device);  // a synchronisation point for the pools
  return sticky_error(s->context);
}

CUresult query_stream(const std::shared_ptr<Stream>& s) {
  FC_TRY(sticky_error(s->context));
  return s->completed() >= s->submitted() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult synchronize_context(Context& ctx) {
  std::vector<Dependency> targets;
  {
    std::lock_guard<std::mutex> lock(ctx.submit_mutex);
    if (ctx.legacy) {
      targets.push_back({ctx.legacy, ctx.legacy->submitted()});
    }
    for (const auto& s : ctx.streams) {
      targets.push_back({s, s->submitted()});
    }
  }
  for (const Dependency& d : targets) {
    d.stream->wait_for(d.seq);
  }
  memory().release_pools_to_threshold(ctx.device);  // a synchronisation point for the pools
  return sticky_error(&ctx);
}

void synchronize_device() {
  for (Context* ctx : live_contexts()) {
    synchronize_context(*ctx);
  }
}

void destroy_context_streams(Context& ctx) {
  std::vector<std::shared_ptr<Stream>> doomed;
  {
    std::lock_guard<std::mutex> lock(ctx.submit_mutex);
    doomed.swap(ctx.streams);
    if (ctx.legacy) {
      doomed.push_back(std::move(ctx.legacy));
    }
  }
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& s : doomed) {
      r.streams.erase(s.get());
    }
  }
  for (const auto& s : doomed) {
    s->stop_and_join();
  }
}

// ---- events ---------------------------------------------------------------------------

CUresult create_event(Context& ctx, unsigned flags, CUevent& out) {
  constexpr unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if ((flags & ~known) != 0 || ((flags & CU_EVENT_INTERPROCESS) != 0 && (flags & CU_EVENT_DISABLE_TIMING) == 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto e = std::make_shared<Event>();
  e->flags = flags;
  e->context = &ctx;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.events.emplace(e.get(), e);
  out = reinterpret_cast<CUevent>(e.get());
  return CUDA_SUCCESS;
}

CUresult find_event(CUevent handle, std::shared_ptr<Event>& out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.events.find(reinterpret_cast<const Event*>(handle));
  if (it == r.events.end()) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  out = it->second;
  return CUDA_SUCCESS;
}

CUresult destroy_event(CUevent handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.events.erase(reinterpret_cast<const Event*>(handle)) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace fakecuda
