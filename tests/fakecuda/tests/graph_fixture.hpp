// Helpers of the capture and graph tests: the graph test kernels (graph_kernels.cpp), device words,
// streams, graph handles, and guards that end a capture and restore the thread's capture mode
// whatever a test does — a capture left open would turn every later test's cuMemAlloc into
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
#pragma once

#include "fixture.hpp"

#include <dlfcn.h>

#include <cstring>

#include <vector>

namespace fakecuda_test {

// An exported entry point by its ABI name, as a resolver finds it: how the tests reach the older
// generations cuda.h renames (cuGraphAddNode is cuGraphAddNode_v2 to a program compiled today).
template <class Fn>
Fn driver_symbol(const char* name) {
  void* self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(self != nullptr);
  void* fn = dlsym(self, name);
  dlclose(self);
  REQUIRE(fn != nullptr);
  return reinterpret_cast<Fn>(fn);
}

struct GraphKernels {
  CUmodule module = nullptr;
  CUfunction affine = nullptr;  // affine_u32(unsigned* data, unsigned mul, unsigned add, unsigned n)
  CUfunction append = nullptr;  // append_id(unsigned* log, unsigned id)
  GraphKernels() {
    const std::string image = module_image(FAKECUDA_GRAPH_KERNELS);
    REQUIRE(cuModuleLoadData(&module, image.c_str()) == CUDA_SUCCESS);
    REQUIRE(cuModuleGetFunction(&affine, module, "affine_u32") == CUDA_SUCCESS);
    REQUIRE(cuModuleGetFunction(&append, module, "append_id") == CUDA_SUCCESS);
  }
  ~GraphKernels() { cuModuleUnload(module); }
  GraphKernels(const GraphKernels&) = delete;
  GraphKernels& operator=(const GraphKernels&) = delete;
};

// n device words set to `value` (the memset has finished when the constructor returns).
struct DeviceWords {
  CUdeviceptr ptr = 0;
  std::size_t n = 0;
  DeviceWords(std::size_t count, unsigned value) : n(count) {
    REQUIRE(cuMemAlloc(&ptr, n * sizeof(unsigned)) == CUDA_SUCCESS);
    REQUIRE(cuMemsetD32(ptr, value, n) == CUDA_SUCCESS);
    REQUIRE(cuCtxSynchronize() == CUDA_SUCCESS);
  }
  ~DeviceWords() { cuMemFree(ptr); }
  DeviceWords(const DeviceWords&) = delete;
  DeviceWords& operator=(const DeviceWords&) = delete;
  // The words now; synchronise the streams that wrote them first.
  std::vector<unsigned> read() const {
    std::vector<unsigned> out(n);
    REQUIRE(cuMemcpyDtoH(out.data(), ptr, n * sizeof(unsigned)) == CUDA_SUCCESS);
    return out;
  }
};

struct TestStream {
  CUstream stream = nullptr;
  explicit TestStream(unsigned flags = CU_STREAM_NON_BLOCKING) {
    REQUIRE(cuStreamCreate(&stream, flags) == CUDA_SUCCESS);
  }
  ~TestStream() { cuStreamDestroy(stream); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  operator CUstream() const { return stream; }
};

struct TestEvent {
  CUevent event = nullptr;
  explicit TestEvent(unsigned flags = CU_EVENT_DEFAULT) { REQUIRE(cuEventCreate(&event, flags) == CUDA_SUCCESS); }
  ~TestEvent() { cuEventDestroy(event); }
  TestEvent(const TestEvent&) = delete;
  TestEvent& operator=(const TestEvent&) = delete;
  operator CUevent() const { return event; }
};

// Ends a capture still open on `stream` when the scope ends.
struct CaptureGuard {
  CUstream stream;
  explicit CaptureGuard(CUstream s) : stream(s) {}
  ~CaptureGuard() {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE) {
      CUgraph g = nullptr;
      cuStreamEndCapture(stream, &g);
      if (g != nullptr) {
        cuGraphDestroy(g);
      }
    }
  }
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;
};

// Sets the calling thread's capture mode for the scope.
struct ModeGuard {
  CUstreamCaptureMode saved;
  explicit ModeGuard(CUstreamCaptureMode mode) : saved(mode) {
    REQUIRE(cuThreadExchangeStreamCaptureMode(&saved) == CUDA_SUCCESS);
  }
  ~ModeGuard() { cuThreadExchangeStreamCaptureMode(&saved); }
  ModeGuard(const ModeGuard&) = delete;
  ModeGuard& operator=(const ModeGuard&) = delete;
};

struct GraphHandle {
  CUgraph graph = nullptr;
  GraphHandle() = default;
  explicit GraphHandle(CUgraph g) : graph(g) {}
  ~GraphHandle() {
    if (graph != nullptr) {
      cuGraphDestroy(graph);
    }
  }
  GraphHandle(const GraphHandle&) = delete;
  GraphHandle& operator=(const GraphHandle&) = delete;
  static GraphHandle create() {
    CUgraph g = nullptr;
    REQUIRE(cuGraphCreate(&g, 0) == CUDA_SUCCESS);
    return GraphHandle(g);
  }
  GraphHandle(GraphHandle&& other) noexcept : graph(other.graph) { other.graph = nullptr; }
  GraphHandle& operator=(GraphHandle&& other) noexcept {
    if (this != &other) {
      if (graph != nullptr) {
        cuGraphDestroy(graph);
      }
      graph = other.graph;
      other.graph = nullptr;
    }
    return *this;
  }
  operator CUgraph() const { return graph; }
};

struct ExecHandle {
  CUgraphExec exec = nullptr;
  ExecHandle() = default;
  explicit ExecHandle(CUgraph g, unsigned long long flags = 0) {
    REQUIRE(status_name(cuGraphInstantiateWithFlags(&exec, g, flags)) == "CUDA_SUCCESS");
  }
  ~ExecHandle() {
    if (exec != nullptr) {
      cuGraphExecDestroy(exec);
    }
  }
  ExecHandle(const ExecHandle&) = delete;
  ExecHandle& operator=(const ExecHandle&) = delete;
  operator CUgraphExec() const { return exec; }
};

// An out-of-range enumerator, as a careless caller might pass one.
template <class E>
E invalid_enum(int value) {
  E e;
  static_assert(sizeof e == sizeof value);
  std::memcpy(&e, &value, sizeof e);
  return e;
}

// affine_u32's arguments where a test can change them after handing them over (to see that the
// driver took its own copy), and a one-thread kernel node's parameters naming them.
struct AffineArgs {
  CUdeviceptr ptr;
  unsigned mul;
  unsigned add;
  unsigned n;
  void* args[4] = {&ptr, &mul, &add, &n};

  AffineArgs(CUdeviceptr data, unsigned m, unsigned a, unsigned count) : ptr(data), mul(m), add(a), n(count) {}
  AffineArgs(const AffineArgs&) = delete;
  AffineArgs& operator=(const AffineArgs&) = delete;
  CUDA_KERNEL_NODE_PARAMS node(const GraphKernels& k) {
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = k.affine;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    return p;
  }
};

inline CUresult affine(const GraphKernels& k, CUdeviceptr data, unsigned mul, unsigned add, unsigned n, CUstream s) {
  void* args[] = {&data, &mul, &add, &n};
  return cuLaunchKernel(k.affine, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr);
}

inline CUresult append(const GraphKernels& k, CUdeviceptr log, unsigned id, CUstream s) {
  void* args[] = {&log, &id};
  return cuLaunchKernel(k.append, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr);
}

// A kernel node running affine_u32 on `data`.
inline CUgraphNode add_affine(CUgraph g, const GraphKernels& k, std::vector<CUgraphNode> deps, CUdeviceptr data,
                              unsigned mul, unsigned add, unsigned n) {
  void* args[] = {&data, &mul, &add, &n};
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = k.affine;
  p.gridDimX = p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = 32;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = args;
  CUgraphNode node = nullptr;
  REQUIRE(status_name(cuGraphAddKernelNode(&node, g, deps.data(), deps.size(), &p)) == "CUDA_SUCCESS");
  return node;
}

inline std::vector<CUgraphNode> nodes_of(CUgraph g) {
  std::size_t n = 0;
  REQUIRE(cuGraphGetNodes(g, nullptr, &n) == CUDA_SUCCESS);
  std::vector<CUgraphNode> nodes(n);
  REQUIRE(cuGraphGetNodes(g, nodes.data(), &n) == CUDA_SUCCESS);
  return nodes;
}

inline CUgraphNodeType type_of(CUgraphNode n) {
  CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
  REQUIRE(cuGraphNodeGetType(n, &t) == CUDA_SUCCESS);
  return t;
}

inline std::vector<CUgraphNode> dependencies_of(CUgraphNode n) {
  std::size_t count = 0;
  REQUIRE(cuGraphNodeGetDependencies(n, nullptr, nullptr, &count) == CUDA_SUCCESS);
  std::vector<CUgraphNode> deps(count);
  REQUIRE(cuGraphNodeGetDependencies(n, deps.data(), nullptr, &count) == CUDA_SUCCESS);
  return deps;
}

inline CUstreamCaptureStatus capture_status(CUstream s) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  REQUIRE(status_name(cuStreamIsCapturing(s, &status)) == "CUDA_SUCCESS");
  return status;
}

}  // namespace fakecuda_test
