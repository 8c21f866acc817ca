// Node parameters by type: what cuGraphAdd*Node, cuGraph*NodeSetParams, cuGraphAddNode and
// stream capture check before a node exists (cuda.h's documentation of each call), and the views
// the Get*Params calls hand back. Kernel arguments are packed here, so a node keeps its own copy.
#include "graph.hpp"

#include "devices.hpp"
#include "driver.hpp"
#include "memory.hpp"
#include "modules.hpp"
#include "streams.hpp"
#include "work_ops.hpp"

#include <unordered_map>

namespace fakecuda {
namespace {

// Graph allocations by address, for free nodes (cuGraphAddMemFreeNode, cuMemFreeAsync in a
// capture). Expired entries are dropped as they are met.
std::unordered_map<CUdeviceptr, std::weak_ptr<GraphAllocation>>& allocations_by_address() {
  static auto* m = new std::unordered_map<CUdeviceptr, std::weak_ptr<GraphAllocation>>;
  return *m;
}

bool is_known_context(CUcontext ctx) { return ctx != nullptr && is_live_context(reinterpret_cast<Context*>(ctx)); }

}  // namespace

CUresult kernel_node_params(NodeParams& out, CUfunction func, CUkernel kern, CUcontext ctx,
                            const fakecuda_launch_dims& dims, std::vector<unsigned char> packed, bool via_extra,
                            bool cooperative) {
  out = NodeParams{};
  out.type = CU_GRAPH_NODE_TYPE_KERNEL;
  out.kernel.func = func;
  out.kernel.kern = kern;
  out.kernel.ctx = ctx;
  out.kernel.dims = dims;
  out.kernel.packed = std::move(packed);
  out.kernel.via_extra = via_extra;
  out.kernel.cooperative = cooperative;
  return CUDA_SUCCESS;
}

// CUDA_KERNEL_NODE_PARAMS (every generation): the function is `func`, or `kern` when func is
// NULL; the arguments are copied now (cuGraphAddKernelNode: "copied during this call").
CUresult kernel_node_params_from(NodeParams& out, CUfunction func, CUkernel kern, CUcontext ctx, unsigned grid_x,
                                 unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y, unsigned block_z,
                                 unsigned shared, void** kernel_params, void** extra) {
  const void* handle = func != nullptr ? static_cast<const void*>(func) : static_cast<const void*>(kern);
  Function* fn = nullptr;
  if (handle == nullptr || find_function(handle, fn) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (ctx != nullptr && func == nullptr && !is_known_context(ctx)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  const fakecuda_launch_dims dims{{grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, shared};
  if (check_launch(*fn, dims, false) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<unsigned char> packed;
  FC_TRY(pack_arguments(*fn, kernel_params, extra, packed));
  return kernel_node_params(out, func, func != nullptr ? nullptr : kern, func != nullptr ? nullptr : ctx, dims,
                            std::move(packed), extra != nullptr, false);
}

CUresult memcpy_node_params(NodeParams& out, const CUDA_MEMCPY3D& copy, CUcontext ctx) {
  if (!is_known_context(ctx)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_memcpy3d(copy));
  out = NodeParams{};
  out.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  out.copy = copy;
  out.ctx = ctx;
  return CUDA_SUCCESS;
}

CUresult memset_node_params(NodeParams& out, const CUDA_MEMSET_NODE_PARAMS& memset, CUcontext ctx) {
  if (!is_known_context(ctx)) {
    return CUDA_ERROR_INVALID_CONTEXT;  // documented for cuGraphAddMemsetNode
  }
  FC_TRY(check_memset_node(memset));
  out = NodeParams{};
  out.type = CU_GRAPH_NODE_TYPE_MEMSET;
  out.memset = memset;
  out.ctx = ctx;
  return CUDA_SUCCESS;
}

CUresult host_node_params(NodeParams& out, const CUDA_HOST_NODE_PARAMS& host) {
  if (host.fn == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out = NodeParams{};
  out.type = CU_GRAPH_NODE_TYPE_HOST;
  out.host = host;
  return CUDA_SUCCESS;
}

CUresult event_node_params(NodeParams& out, CUgraphNodeType type, CUevent event) {
  std::shared_ptr<Event> e;
  if (find_event(event, e) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out = NodeParams{};
  out.type = type;
  out.event = event;
  return CUDA_SUCCESS;
}

// CUDA_MEM_ALLOC_NODE_PARAMS: pinned device memory of this device, no IPC handle types, at most
// one access descriptor per device; the address is fixed now and written back by the caller.
CUresult alloc_node_params(NodeParams& out, const CUDA_MEM_ALLOC_NODE_PARAMS& alloc, Context* ctx) {
  const CUmemPoolProps& props = alloc.poolProps;
  if (props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED || props.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      check_device(props.location.id) != CUDA_SUCCESS || props.handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
      alloc.bytesize == 0 || alloc.accessDescCount > static_cast<std::size_t>(device_count()) ||
      (alloc.accessDescCount > 0 && alloc.accessDescs == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (std::size_t i = 0; i < alloc.accessDescCount; ++i) {
    const CUmemAccessDesc& a = alloc.accessDescs[i];
    if (a.location.type != CU_MEM_LOCATION_TYPE_DEVICE || check_device(a.location.id) != CUDA_SUCCESS ||
        a.flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  CUdeviceptr ptr = 0;
  FC_TRY(memory().graph_reserve(alloc.bytesize, ctx, ptr));
  auto allocation = std::make_shared<GraphAllocation>();
  allocation->ptr = ptr;
  allocation->bytes = alloc.bytesize;
  allocations_by_address()[ptr] = allocation;
  out = NodeParams{};
  out.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  out.allocation = std::move(allocation);
  out.pool_props = props;
  out.access.assign(alloc.accessDescs, alloc.accessDescs + alloc.accessDescCount);
  return CUDA_SUCCESS;
}

// cuMemAllocAsync / cuMemAllocFromPoolAsync in a capture: "The memory pool's properties are used
// to set the node's creation parameters" (the default pool: pinned memory of this device).
CUresult alloc_node_params_for_stream(NodeParams& out, std::size_t bytes, Context* ctx) {
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  alloc.poolProps.location.id = kDevice;
  alloc.bytesize = bytes;
  return alloc_node_params(out, alloc, ctx);
}

// cuGraphAddMemFreeNode: "an address that was not returned by an allocation node" or "an invalid
// address" is CUDA_ERROR_INVALID_VALUE.
CUresult free_node_params_locked(NodeParams& out, CUdeviceptr ptr) {
  auto& by_address = allocations_by_address();
  const auto it = by_address.find(ptr);
  std::shared_ptr<GraphAllocation> allocation = it == by_address.end() ? nullptr : it->second.lock();
  if (!allocation) {
    if (it != by_address.end()) {
      by_address.erase(it);
    }
    return CUDA_ERROR_INVALID_VALUE;
  }
  out = NodeParams{};
  out.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  out.allocation = std::move(allocation);
  return CUDA_SUCCESS;
}

// Rules that depend on the graph a node goes into (cuGraphAddMemAllocNode, cuGraphAddMemFreeNode,
// cuGraphChildGraphNodeGetGraph): no mem nodes in a child graph; an allocation is freed by one
// graph only, and once.
CUresult attach_params_locked(Graph& g, NodeParams& params) {
  switch (params.type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      if (g.owner != nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      params.allocation->owner_graph = g.id;
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEM_FREE: {
      GraphAllocation& a = *params.allocation;
      if (g.owner != nullptr || (a.freed_by_graph != 0 && graph_alive_locked(a.freed_by_graph))) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      a.freed_by_graph = g.id;
      return CUDA_SUCCESS;
    }
    default:
      return CUDA_SUCCESS;
  }
}

CUresult kernel_params_view_locked(Node& n, CUDA_KERNEL_NODE_PARAMS& out) {
  const KernelParams& k = n.params.kernel;
  Function* fn = nullptr;
  if (find_function(k.handle(), fn) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;  // its module was unloaded
  }
  out = CUDA_KERNEL_NODE_PARAMS{};
  out.func = k.func;
  out.kern = k.kern;
  out.ctx = k.ctx;
  out.gridDimX = k.dims.grid[0];
  out.gridDimY = k.dims.grid[1];
  out.gridDimZ = k.dims.grid[2];
  out.blockDimX = k.dims.block[0];
  out.blockDimY = k.dims.block[1];
  out.blockDimZ = k.dims.block[2];
  out.sharedMemBytes = k.dims.shared_bytes;
  // "The params will contain either kernelParams or extra, according to which of these was most
  // recently set on the node"; both point into the node's own copy of the arguments.
  unsigned char* base = n.params.kernel.packed.data();
  if (k.via_extra) {
    n.extra_size_view = n.params.kernel.packed.size();
    n.extra_view[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    n.extra_view[1] = base;
    n.extra_view[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    n.extra_view[3] = &n.extra_size_view;
    n.extra_view[4] = CU_LAUNCH_PARAM_END;
    out.extra = n.extra_view;
    return CUDA_SUCCESS;
  }
  n.kernel_params_view.resize(fn->desc->param_count);
  for (unsigned i = 0; i < fn->desc->param_count; ++i) {
    n.kernel_params_view[i] = base + fn->desc->param_offsets[i];
  }
  out.kernelParams = n.kernel_params_view.empty() ? nullptr : n.kernel_params_view.data();
  return CUDA_SUCCESS;
}

}  // namespace fakecuda
