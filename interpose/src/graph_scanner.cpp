// Reading a graph's nodes (see graph_scanner.hpp).
#include "memtool/interpose/graph_scanner.hpp"

namespace memtool::interpose {
namespace {

std::uint64_t u64(CUdeviceptr p) { return static_cast<std::uint64_t>(p); }
std::uint64_t u64(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The words a copy side may name a buffer by: its base pointer and its first byte.
void append_side(CUmemorytype type, CUdeviceptr device, const void* host, std::size_t x, std::size_t y,
                 std::size_t pitch, std::size_t z, std::size_t height, std::vector<std::uint64_t>& words) {
  std::uint64_t base = 0;
  if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) {
    base = u64(device);
  } else if (type == CU_MEMORYTYPE_HOST) {
    base = u64(host);
  } else {
    return;  // an array: no linear memory memtool tracks
  }
  words.push_back(base);
  words.push_back(base + x + (z * height + y) * pitch);
}

void mark_opaque(ScannedNode& node, ScannedGraph& graph, std::string why) {
  node.opaque = true;
  if (!graph.opaque) graph.opaque_why = std::move(why);
  graph.opaque = true;
}

// Scans `graph`'s nodes into `out`, each node's words into `node` when flattening a child
// graph (node != null), or one ScannedNode per node (node == null).
void scan_into(const GraphQueries& q, CUgraph graph, const KernelWords& kernel_words, int depth, ScannedGraph& out,
               ScannedNode* flatten_into) {
  auto fail = [&](std::string why) {
    ScannedNode failed;
    mark_opaque(flatten_into != nullptr ? *flatten_into : failed, out, std::move(why));
    if (flatten_into == nullptr) out.nodes.push_back(std::move(failed));
  };
  if (depth > kMaxGraphDepth) return fail("child graphs nested too deep");
  size_t count = 0;
  if (q.get_nodes(graph, nullptr, &count) != CUDA_SUCCESS) return fail("cuGraphGetNodes failed");
  std::vector<CUgraphNode> nodes(count);
  if (count != 0 && q.get_nodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return fail("cuGraphGetNodes failed");
  nodes.resize(count);
  for (CUgraphNode handle : nodes) {
    ScannedNode own;
    own.node = handle;
    ScannedNode& node = flatten_into != nullptr ? *flatten_into : own;
    CUgraphNodeType type{};
    if (q.node_get_type(handle, &type) != CUDA_SUCCESS) {
      mark_opaque(node, out, "cuGraphNodeGetType failed");
    } else {
      switch (type) {
        case CU_GRAPH_NODE_TYPE_KERNEL: {
          CUDA_KERNEL_NODE_PARAMS params{};
          if (q.kernel_node_get_params(handle, &params) != CUDA_SUCCESS) {
            mark_opaque(node, out, "a kernel node's parameters cannot be read");
            break;
          }
          CUfunction function = params.func != nullptr ? params.func : reinterpret_cast<CUfunction>(params.kern);
          if (!kernel_words(function, params.kernelParams, params.extra, node.words)) {
            mark_opaque(node, out, "a kernel node's parameter layout is unknown");
          }
          break;
        }
        case CU_GRAPH_NODE_TYPE_MEMCPY: {
          CUDA_MEMCPY3D copy{};
          if (q.memcpy_node_get_params(handle, &copy) != CUDA_SUCCESS) {
            mark_opaque(node, out, "a memcpy node's parameters cannot be read");
            break;
          }
          const ScannedNode sides = scan_memcpy_params(handle, copy);
          node.words.insert(node.words.end(), sides.words.begin(), sides.words.end());
          break;
        }
        case CU_GRAPH_NODE_TYPE_MEMSET: {
          CUDA_MEMSET_NODE_PARAMS set{};
          if (q.memset_node_get_params(handle, &set) != CUDA_SUCCESS) {
            mark_opaque(node, out, "a memset node's parameters cannot be read");
            break;
          }
          node.words.push_back(u64(set.dst));
          break;
        }
        case CU_GRAPH_NODE_TYPE_GRAPH: {
          CUgraph child = nullptr;
          if (q.child_graph_node_get_graph(handle, &child) != CUDA_SUCCESS || child == nullptr) {
            mark_opaque(node, out, "a child graph cannot be read");
            break;
          }
          scan_into(q, child, kernel_words, depth + 1, out, &node);
          break;
        }
        case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
          // Graph memory: the graph's for its life, never a buffer memtool moves or reuses.
          CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
          if (q.mem_alloc_node_get_params != nullptr && q.mem_alloc_node_get_params(handle, &alloc) == CUDA_SUCCESS) {
            out.allocations.push_back({u64(alloc.dptr), alloc.bytesize});
          }
          break;
        }
        // Host functions cannot reach device memory but through managed memory, which the
        // driver migrates on access; the others touch no memory.
        case CU_GRAPH_NODE_TYPE_HOST:
        case CU_GRAPH_NODE_TYPE_EMPTY:
        case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        case CU_GRAPH_NODE_TYPE_MEM_FREE:
          break;
        default:  // conditional, external semaphores, batch mem ops, anything newer
          mark_opaque(
              node, out,
              "a graph has a node of a type memtool cannot read (" + std::to_string(static_cast<int>(type)) + ")");
          break;
      }
    }
    if (flatten_into == nullptr) out.nodes.push_back(std::move(own));
  }
}

}  // namespace

ScannedGraph scan_graph(const GraphQueries& queries, CUgraph graph, const KernelWords& kernel_words) {
  ScannedGraph out;
  if (!queries.complete()) {
    out.opaque = true;
    out.opaque_why = "the driver lacks the graph query functions";
    return out;
  }
  scan_into(queries, graph, kernel_words, 0, out, nullptr);
  return out;
}

ScannedNode scan_kernel_params(CUgraphNode node, CUfunction function, void** kernel_params, void** extra,
                               const KernelWords& kernel_words) {
  ScannedNode out;
  out.node = node;
  out.opaque = !kernel_words(function, kernel_params, extra, out.words);
  return out;
}

ScannedNode scan_memcpy_params(CUgraphNode node, const CUDA_MEMCPY3D& copy) {
  ScannedNode out;
  out.node = node;
  append_side(copy.srcMemoryType, copy.srcDevice, copy.srcHost, copy.srcXInBytes, copy.srcY, copy.srcPitch, copy.srcZ,
              copy.srcHeight, out.words);
  append_side(copy.dstMemoryType, copy.dstDevice, copy.dstHost, copy.dstXInBytes, copy.dstY, copy.dstPitch, copy.dstZ,
              copy.dstHeight, out.words);
  return out;
}

ScannedNode scan_memset_params(CUgraphNode node, CUdeviceptr dst) {
  ScannedNode out;
  out.node = node;
  out.words.push_back(u64(dst));
  return out;
}

ScannedNode scan_child_graph(const GraphQueries& queries, CUgraphNode node, CUgraph child,
                             const KernelWords& kernel_words, std::vector<GraphAllocation>* allocations) {
  ScannedGraph scratch;
  ScannedNode out;
  out.node = node;
  if (!queries.complete()) {
    out.opaque = true;
    return out;
  }
  scan_into(queries, child, kernel_words, 1, scratch, &out);
  if (allocations != nullptr) {
    allocations->insert(allocations->end(), scratch.allocations.begin(), scratch.allocations.end());
  }
  return out;
}

}  // namespace memtool::interpose
