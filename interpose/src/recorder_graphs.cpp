// The recorder's part in stream capture and CUDA graphs (issue 32; see recorder.hpp): captured
// work, graph memory, and the executable graphs' nodes read at instantiation and update.
#include <exception>

#include "memtool/interpose/log.hpp"
#include "memtool/interpose/recorder.hpp"

namespace memtool::interpose {
namespace {

// Fail-open around a step, as the rest of the recorder does.
template <class Step>
void guarded(Recorder& recorder, const char* what, Step step) noexcept {
  try {
    step();
  } catch (const std::exception& e) {
    recorder.disable(e.what());
  } catch (...) {
    recorder.disable(what);
  }
}

}  // namespace

void Recorder::set_graph_queries(const GraphQueries& queries) noexcept {
  std::call_once(graph_queries_once_, [&] { graph_queries_ = queries; });
}

void Recorder::ensure_graph_queries() {
  std::call_once(graph_queries_once_, [&] {
    if (resolver_ == nullptr) return;
    auto get = [&](auto& field, const char* name) {
      field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(resolver_(name));
    };
    get(graph_queries_.get_nodes, "cuGraphGetNodes");
    get(graph_queries_.node_get_type, "cuGraphNodeGetType");
    get(graph_queries_.kernel_node_get_params, "cuGraphKernelNodeGetParams_v2");
    get(graph_queries_.memcpy_node_get_params, "cuGraphMemcpyNodeGetParams");
    get(graph_queries_.memset_node_get_params, "cuGraphMemsetNodeGetParams");
    get(graph_queries_.child_graph_node_get_graph, "cuGraphChildGraphNodeGetGraph");
    get(graph_queries_.mem_alloc_node_get_params, "cuGraphMemAllocNodeGetParams");
    get(graph_queries_.device_get_graph_mem_attribute, "cuDeviceGetGraphMemAttribute");
    get(graph_queries_.ctx_get_device, "cuCtxGetDevice");
  });
}

KernelWords Recorder::graph_kernel_words() {
  return [this](CUfunction function, void** kernel_params, void** extra, std::vector<std::uint64_t>& words) {
    if (function == nullptr) return false;
    const KernelInfo* kernel = kernel_info(function);
    return kernel_words(*kernel, kernel_params, extra, words);
  };
}

void Recorder::on_capture_begin(std::uint64_t stream, int mode) noexcept {
  if (!active()) return;
  guarded(*this, "recording a capture", [&] {
    std::lock_guard lock(emit_mutex_);
    note_locked(trace::GraphNoteKind::capture_begin, static_cast<std::uint64_t>(mode), 0, stream);
  });
}

void Recorder::on_capture_end(std::uint64_t stream, int result) noexcept {
  if (!active()) return;
  guarded(*this, "recording a capture", [&] {
    std::lock_guard lock(emit_mutex_);
    note_locked(trace::GraphNoteKind::capture_end, static_cast<std::uint64_t>(result), 0, stream);
  });
}

void Recorder::on_captured_work(std::uint8_t kind, std::uint64_t stream) noexcept {
  if (!active()) return;
  guarded(*this, "recording captured work", [&] {
    std::lock_guard lock(emit_mutex_);
    ++captured_work_;
    note_locked(trace::GraphNoteKind::captured_work, kind, 0, stream);
  });
}

void Recorder::on_graph_alloc(std::uint64_t address, std::uint64_t size, std::uint64_t stream) noexcept {
  guarded(*this, "recording graph memory", [&] {
    graphs_.add_graph_memory(address, size);
    std::lock_guard lock(emit_mutex_);
    ++graph_allocations_;
    note_locked(trace::GraphNoteKind::graph_alloc, address, size, stream);
  });
}

bool Recorder::on_graph_free(std::uint64_t address, std::uint64_t stream, bool in_capture) noexcept {
  bool graph_memory = false;
  guarded(*this, "recording a free of graph memory", [&] {
    graph_memory = graphs_.is_graph_memory(address);
    if (!graph_memory) return;
    std::lock_guard lock(emit_mutex_);
    ++graph_frees_;
    note_locked(trace::GraphNoteKind::graph_free, address, in_capture ? 1 : 0, stream);
  });
  return graph_memory;
}

void Recorder::on_graph_exec(std::uint64_t graph_exec, CUgraph graph) noexcept {
  guarded(*this, "reading a graph's nodes", [&] {
    ensure_graph_queries();
    ScannedGraph scanned;
    {
      const CaptureTracker::InternalCall internal(captures_);
      scanned = scan_graph(graph_queries_, graph, graph_kernel_words());
    }
    if (scanned.opaque) {
      MEMTOOL_LOG_ONCE(LogLevel::warn, "{}: launches of that graph count as touching every buffer", scanned.opaque_why);
    }
    std::uint64_t graph_bytes = 0;
    for (const GraphAllocation& a : scanned.allocations) graph_bytes += a.size;
    graphs_.set_exec(graph_exec, std::move(scanned));
    std::lock_guard lock(emit_mutex_);
    note_locked(trace::GraphNoteKind::exec_created, graph_exec, graph_bytes, 0);
  });
}

void Recorder::on_graph_exec_kernel(std::uint64_t graph_exec, CUgraphNode node, CUfunction function,
                                    void** kernel_params, void** extra) noexcept {
  guarded(*this, "reading a kernel node's parameters", [&] {
    ScannedNode scanned;
    {
      const CaptureTracker::InternalCall internal(captures_);
      scanned = scan_kernel_params(node, function, kernel_params, extra, graph_kernel_words());
    }
    graphs_.set_node(graph_exec, std::move(scanned));
  });
}

void Recorder::on_graph_exec_memcpy(std::uint64_t graph_exec, CUgraphNode node, const CUDA_MEMCPY3D& copy) noexcept {
  guarded(*this, "reading a memcpy node's parameters",
          [&] { graphs_.set_node(graph_exec, scan_memcpy_params(node, copy)); });
}

void Recorder::on_graph_exec_memset(std::uint64_t graph_exec, CUgraphNode node, CUdeviceptr dst) noexcept {
  guarded(*this, "reading a memset node's parameters",
          [&] { graphs_.set_node(graph_exec, scan_memset_params(node, dst)); });
}

void Recorder::on_graph_exec_child(std::uint64_t graph_exec, CUgraphNode node, CUgraph child) noexcept {
  guarded(*this, "reading a child graph", [&] {
    ensure_graph_queries();
    std::vector<GraphAllocation> allocations;
    ScannedNode scanned;
    {
      const CaptureTracker::InternalCall internal(captures_);
      scanned = scan_child_graph(graph_queries_, node, child, graph_kernel_words(), &allocations);
    }
    graphs_.set_node(graph_exec, std::move(scanned), allocations);
  });
}

void Recorder::on_graph_exec_opaque_node(std::uint64_t graph_exec, CUgraphNode node) noexcept {
  guarded(*this, "marking a graph node opaque", [&] {
    ScannedNode scanned;
    scanned.node = node;
    scanned.opaque = true;
    graphs_.set_node(graph_exec, std::move(scanned));
  });
}

void Recorder::on_graph_exec_destroy(std::uint64_t graph_exec) noexcept {
  guarded(*this, "forgetting an executable graph", [&] {
    graphs_.erase_exec(graph_exec);
    std::lock_guard lock(emit_mutex_);
    note_locked(trace::GraphNoteKind::exec_destroyed, graph_exec, 0, 0);
  });
}

bool Recorder::on_graph_upload(std::uint64_t graph_exec) noexcept {
  bool first = false;
  guarded(*this, "recording a graph upload", [&] { first = graphs_.upload(graph_exec); });
  return first;
}

std::uint64_t Recorder::graph_memory_bytes(bool refresh) noexcept {
  std::uint64_t pending = 0;
  guarded(*this, "counting graph memory", [&] {
    ensure_graph_queries();
    if (refresh && graph_queries_.device_get_graph_mem_attribute != nullptr &&
        graph_queries_.ctx_get_device != nullptr) {
      const CaptureTracker::InternalCall internal(captures_);
      CUdevice device = 0;
      cuuint64_t reserved = 0;
      if (graph_queries_.ctx_get_device(&device) == CUDA_SUCCESS &&
          graph_queries_.device_get_graph_mem_attribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) ==
              CUDA_SUCCESS) {
        graph_pool_reserved_.store(reserved, std::memory_order_relaxed);
      }
    }
    pending = graphs_.pending_graph_bytes();
  });
  return graph_pool_reserved_.load(std::memory_order_relaxed) + pending;
}

}  // namespace memtool::interpose
