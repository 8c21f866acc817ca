// Entry points: streams, events, host callbacks and their synchronisation. Each stream call
// comes twice, as the driver exports it: the legacy form, where a NULL stream is the legacy
// default stream, and the _ptsz form, where it is the calling thread's per-thread stream.
#include "capture.hpp"
#include "driver.hpp"
#include "graph.hpp"
#include "ipc_event.hpp"
#include "memory.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <algorithm>
#include <chrono>

using namespace fakecuda;

namespace {

constexpr int kPriorityLeast = 0;
constexpr int kPriorityGreatest = -5;

CUresult stream_of(CUstream h, bool per_thread, std::shared_ptr<Stream>& s) {
  FC_TRY(check_init());
  return resolve_stream(h, per_thread, s);
}

// Every stream entry point: resolve the stream (NULL per the legacy or _ptsz rule), then `body`
// on it, with exceptions turned into CUresults.
template <class F>
CUresult with_stream(CUstream h, bool per_thread, F&& body) {
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(stream_of(h, per_thread, s));
    return body(s);
  });
}

// cuStreamWaitEvent / cuEventRecord: the stream and the event they name.
template <class F>
CUresult with_stream_and_event(CUstream h, CUevent e, bool per_thread, F&& body) {
  return with_stream(h, per_thread, [&](const std::shared_ptr<Stream>& s) {
    std::shared_ptr<Event> event;
    FC_TRY(find_event(e, event));
    return body(s, *event);
  });
}

CUresult stream_synchronize(CUstream h, bool per_thread) {
  return with_stream(h, per_thread, [](const std::shared_ptr<Stream>& s) {
    FC_TRY(capture_check_stream_sync(s));
    count(stats().synchronizations);
    return synchronize_stream(s);
  });
}

CUresult stream_query(CUstream h, bool per_thread) {
  return with_stream(h, per_thread, [](const std::shared_ptr<Stream>& s) {
    FC_TRY(capture_check_stream_sync(s));
    return query_stream(s);
  });
}

CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags, bool per_thread) {
  if (flags != CU_EVENT_WAIT_DEFAULT && flags != CU_EVENT_WAIT_EXTERNAL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_stream_and_event(h, e, per_thread, [flags](const std::shared_ptr<Stream>& s, Event& event) {
    bool handled = false;  // a wait in a capture, or one that forks a capture into this stream
    FC_TRY(capture_wait_event(s, event, flags, handled));
    if (handled) {
      return CUDA_SUCCESS;
    }
    std::shared_ptr<EventRecord> record;
    std::shared_ptr<IpcEventPage> shared;
    {
      std::lock_guard<std::mutex> lock(event.mutex);
      record = event.last;
      shared = event.ipc;
    }
    if (shared) {
      shared->make_stream_wait(s);  // records of either process count
      return CUDA_SUCCESS;
    }
    if (!record) {
      return CUDA_SUCCESS;  // an event never recorded is complete: nothing to wait for
    }
    enqueue(s, [] {}, {Dependency{record->stream, record->seq}});
    return CUDA_SUCCESS;
  });
}

CUresult event_record(CUevent e, CUstream h, unsigned flags, bool per_thread) {
  if (flags != CU_EVENT_RECORD_DEFAULT && flags != CU_EVENT_RECORD_EXTERNAL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_stream_and_event(h, e, per_thread, [flags](const std::shared_ptr<Stream>& s, Event& event) {
    if (event.context != nullptr && event.context->device != s->context->device) {
      // "cudaEventRecord() will fail if the input event and input stream are associated to
      // different devices" (CUDA Programming Guide, stream and event behavior).
      return CUDA_ERROR_INVALID_HANDLE;
    }
    bool handled = false;  // recorded in a capture: the event stands for captured nodes
    FC_TRY(capture_event_record(s, event, flags, handled));
    if (handled) {
      return CUDA_SUCCESS;
    }
    auto record = std::make_shared<EventRecord>();
    record->stream = s;
    // The event's latest record is replaced under its lock so a concurrent cuStreamWaitEvent
    // sees either the old record or the new one with its sequence number set.
    std::lock_guard<std::mutex> lock(event.mutex);
    record->seq = enqueue(s, [record] {
      record->time = std::chrono::steady_clock::now();
      record->done.store(true, std::memory_order_release);
    });
    event.last = std::move(record);
    event.captured.reset();
    if (event.ipc) {
      event.ipc->record(s);
    }
    count(stats().event_records);
    return CUDA_SUCCESS;
  });
}

CUresult host_func(CUstream h, CUhostFn fn, void* user_data, bool per_thread) {
  if (fn == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_stream(h, per_thread, [&](const std::shared_ptr<Stream>& s) {
    if (captures_exist()) {  // a capturing stream records a host node instead
      bool captured = false;
      FC_TRY(capture_work(
          s,
          [&](NodeParams& node) {
            return host_node_params(node, CUDA_HOST_NODE_PARAMS{fn, user_data});
          },
          captured));
      if (captured) {
        return CUDA_SUCCESS;
      }
    }
    count(stats().host_functions);
    enqueue(s, [fn, user_data] { fn(user_data); });
    return CUDA_SUCCESS;
  });
}

CUresult add_callback(CUstream h, CUstreamCallback cb, void* user_data, unsigned flags, bool per_thread) {
  if (cb == nullptr || flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_stream(h, per_thread, [&](const std::shared_ptr<Stream>& s) {
    FC_TRY(capture_refuse(s));  // "not supported with cuStreamBeginCapture ... unlike cuLaunchHostFunc"
    count(stats().host_functions);
    Context* ctx = s->context;
    enqueue(s, [cb, user_data, h, ctx] { cb(h, sticky_error(ctx), user_data); });
    return CUDA_SUCCESS;
  });
}

// The stream getters: check the out-pointer, then read one field of the resolved stream.
template <class T, class Read>
CUresult read_stream(CUstream h, T* out, bool per_thread, Read read) {
  if (out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_stream(h, per_thread, [&](const std::shared_ptr<Stream>& s) {
    *out = read(*s);
    return CUDA_SUCCESS;
  });
}

CUresult get_priority(CUstream h, int* priority, bool per_thread) {
  return read_stream(h, priority, per_thread, [](const Stream& s) { return s.priority; });
}

CUresult get_flags(CUstream h, unsigned* flags, bool per_thread) {
  return read_stream(h, flags, per_thread, [](const Stream& s) { return s.flags; });
}

CUresult get_id(CUstream h, unsigned long long* id, bool per_thread) {
  return read_stream(h, id, per_thread, [](const Stream& s) { return s.id; });
}

CUresult get_ctx(CUstream h, CUcontext* ctx, bool per_thread) {
  return read_stream(h, ctx, per_thread, [](const Stream& s) { return reinterpret_cast<CUcontext>(s.context); });
}

}  // namespace

// ---- streams ---------------------------------------------------------------------------

FAKECUDA_API CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (phStream == nullptr || (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Out-of-range priorities are clamped, as the driver does.
  priority = std::clamp(priority, kPriorityGreatest, kPriorityLeast);
  return guarded([&] { return create_stream(*ctx, flags, priority, *phStream); });
}

FAKECUDA_API CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return cuStreamCreateWithPriority(phStream, Flags, kPriorityLeast);
}

FAKECUDA_API CUresult cuStreamDestroy_v2(CUstream hStream) {
  FC_TRY(check_init());
  return guarded([&] {
    if (captures_exist() && hStream != nullptr && hStream != CU_STREAM_LEGACY && hStream != CU_STREAM_PER_THREAD) {
      std::shared_ptr<Stream> s;
      if (resolve_stream(hStream, false, s) == CUDA_SUCCESS) {
        FC_TRY(capture_check_stream_destroy(s));
      }
    }
    return destroy_stream(hStream);
  });
}

FAKECUDA_API CUresult cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }

FAKECUDA_API CUresult cuStreamSynchronize(CUstream hStream) { return stream_synchronize(hStream, false); }
FAKECUDA_API CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return stream_synchronize(hStream, true); }
FAKECUDA_API CUresult cuStreamQuery(CUstream hStream) { return stream_query(hStream, false); }
FAKECUDA_API CUresult cuStreamQuery_ptsz(CUstream hStream) { return stream_query(hStream, true); }
FAKECUDA_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return stream_wait_event(hStream, hEvent, Flags, false);
}
FAKECUDA_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return stream_wait_event(hStream, hEvent, Flags, true);
}
FAKECUDA_API CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  return get_priority(hStream, priority, false);
}
FAKECUDA_API CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority) {
  return get_priority(hStream, priority, true);
}
FAKECUDA_API CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  return get_flags(hStream, flags, false);
}
FAKECUDA_API CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags) {
  return get_flags(hStream, flags, true);
}
FAKECUDA_API CUresult cuStreamGetId(CUstream hStream, unsigned long long* streamId) {
  return get_id(hStream, streamId, false);
}
FAKECUDA_API CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId) {
  return get_id(hStream, streamId, true);
}
FAKECUDA_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) { return get_ctx(hStream, pctx, false); }
FAKECUDA_API CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) { return get_ctx(hStream, pctx, true); }
FAKECUDA_API CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData,
                                          unsigned int flags) {
  return add_callback(hStream, callback, userData, flags, false);
}
FAKECUDA_API CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void* userData,
                                               unsigned int flags) {
  return add_callback(hStream, callback, userData, flags, true);
}
FAKECUDA_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  return host_func(hStream, fn, userData, false);
}
FAKECUDA_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData) {
  return host_func(hStream, fn, userData, true);
}

// ---- events ----------------------------------------------------------------------------

FAKECUDA_API CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (phEvent == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return create_event(*ctx, Flags, *phEvent); });
}

FAKECUDA_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return event_record(hEvent, hStream, 0, false);
}
FAKECUDA_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return event_record(hEvent, hStream, 0, true);
}
FAKECUDA_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return event_record(hEvent, hStream, flags, false);
}
FAKECUDA_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return event_record(hEvent, hStream, flags, true);
}

FAKECUDA_API CUresult cuEventQuery(CUevent hEvent) {
  FC_TRY(check_init());
  return guarded([&] {
    std::shared_ptr<Event> event;
    FC_TRY(find_event(hEvent, event));
    FC_TRY(capture_check_event(*event, true));
    std::lock_guard<std::mutex> lock(event->mutex);
    if (event->ipc ? !event->ipc->complete_now() : event->last && !event->last->done.load(std::memory_order_acquire)) {
      return CUDA_ERROR_NOT_READY;
    }
    return sticky_error(event->context);
  });
}

FAKECUDA_API CUresult cuEventSynchronize(CUevent hEvent) {
  FC_TRY(check_init());
  return guarded([&] {
    std::shared_ptr<Event> event;
    FC_TRY(find_event(hEvent, event));
    FC_TRY(capture_check_event(*event, true));
    std::shared_ptr<EventRecord> record;
    std::shared_ptr<IpcEventPage> shared;
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      record = event->last;
      shared = event->ipc;
    }
    count(stats().synchronizations);
    if (shared) {
      shared->wait_for_issued();
    } else if (record) {
      record->stream->wait_for(record->seq);
    }
    if (event->context != nullptr) {
      memory().release_pools_to_threshold(event->context->device);  // a synchronisation point for the pools
    }
    return sticky_error(event->context);
  });
}

FAKECUDA_API CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  FC_TRY(check_init());
  if (pMilliseconds == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    std::shared_ptr<Event> start;
    std::shared_ptr<Event> end;
    FC_TRY(find_event(hStart, start));
    FC_TRY(find_event(hEnd, end));
    if (((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    if (start->context != nullptr && end->context != nullptr && start->context->device != end->context->device) {
      return CUDA_ERROR_INVALID_HANDLE;  // events of two devices have no common clock to compare
    }
    FC_TRY(capture_check_event(*start, false));
    FC_TRY(capture_check_event(*end, false));
    std::shared_ptr<EventRecord> a;
    std::shared_ptr<EventRecord> b;
    {
      std::lock_guard<std::mutex> lock(start->mutex);
      a = start->last;
    }
    {
      std::lock_guard<std::mutex> lock(end->mutex);
      b = end->last;
    }
    if (!a || !b) {
      return CUDA_ERROR_INVALID_HANDLE;  // never recorded
    }
    if (!a->done.load(std::memory_order_acquire) || !b->done.load(std::memory_order_acquire)) {
      return CUDA_ERROR_NOT_READY;
    }
    *pMilliseconds = std::chrono::duration<float, std::milli>(b->time - a->time).count();
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

FAKECUDA_API CUresult cuEventDestroy_v2(CUevent hEvent) {
  FC_TRY(check_init());
  return guarded([&] { return destroy_event(hEvent); });
}

FAKECUDA_API CUresult cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }
