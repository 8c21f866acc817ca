// A training-like loop that asks the driver about its own buffers, as NCCL's registration
// caches and IPC-sharing frameworks do: each iteration (ended by memtool_iteration_mark when
// preloaded) allocates four buffers, checks that cuMemGetAddressRange and
// cuPointerGetAttribute(s) describe exactly that buffer (its own base and size, an id no other
// live buffer has), and exports the third with cuIpcGetMemHandle: a handle must either fail or
// open to the buffer itself (fakecuda opens handles in-process), never to another address.
// Prints one line per iteration: "iter I ok export=<ok|refused>", or what went wrong (exit 1).
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

namespace {

int failures = 0;

void fail(int iteration, const char* what, unsigned long long got, unsigned long long want) {
  std::printf("iter %d FAIL %s: got %llu, want %llu\n", iteration, what, got, want);
  ++failures;
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 12;
  using Mark = void (*)();
  const auto mark = reinterpret_cast<Mark>(dlsym(RTLD_DEFAULT, "memtool_iteration_mark"));
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS || cuCtxSetCurrent(context) != CUDA_SUCCESS) {
    std::printf("no device\n");
    return 2;
  }
  CUdeviceptr persistent = 0;
  cuMemAlloc(&persistent, 1 << 20);  // weights: live throughout, never pooled
  const size_t sizes[4] = {64 << 10, 192 << 10, 128 << 10, 32 << 10};
  for (int it = 0; it < iterations; ++it) {
    if (mark != nullptr) mark();
    CUdeviceptr buffers[4] = {};
    for (int i = 0; i < 4; ++i) {
      if (cuMemAlloc(&buffers[i], sizes[i]) != CUDA_SUCCESS) {
        std::printf("iter %d FAIL alloc\n", it);
        return 1;
      }
      cuMemsetD8(buffers[i], static_cast<unsigned char>(it * 4 + i), sizes[i]);
    }
    std::set<unsigned long long> ids;
    for (int i = 0; i < 4; ++i) {
      const CUdeviceptr inside = buffers[i] + sizes[i] / 2;
      CUdeviceptr base = 0;
      size_t size = 0;
      if (cuMemGetAddressRange(&base, &size, inside) != CUDA_SUCCESS) fail(it, "cuMemGetAddressRange", 1, 0);
      if (base != buffers[i]) fail(it, "range base", base, buffers[i]);
      if (size != sizes[i]) fail(it, "range size", size, sizes[i]);
      CUdeviceptr start = 0;
      size_t range = 0;
      unsigned long long id = 0;
      cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inside);
      cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, inside);
      if (start != buffers[i]) fail(it, "RANGE_START_ADDR", start, buffers[i]);
      if (range != sizes[i]) fail(it, "RANGE_SIZE", range, sizes[i]);
      CUpointer_attribute attributes[3] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                           CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
      unsigned int memory_type = 0;
      size_t range2 = 0;
      void* data[3] = {&id, &range2, &memory_type};
      cuPointerGetAttributes(3, attributes, data, inside);
      if (range2 != sizes[i]) fail(it, "attributes RANGE_SIZE", range2, sizes[i]);
      if (memory_type != CU_MEMORYTYPE_DEVICE) fail(it, "MEMORY_TYPE", memory_type, CU_MEMORYTYPE_DEVICE);
      if (!ids.insert(id).second) fail(it, "BUFFER_ID unique", id, 0);
    }
    CUipcMemHandle handle;
    std::memset(&handle, 0, sizeof handle);
    const char* export_result = "refused";
    if (cuIpcGetMemHandle(&handle, buffers[2]) == CUDA_SUCCESS) {
      export_result = "ok";
      CUdeviceptr opened = 0;
      if (cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS) {
        fail(it, "cuIpcOpenMemHandle", 1, 0);
      } else if (opened != buffers[2]) {
        fail(it, "handle opens to", opened, buffers[2]);
      }
    }
    for (int i = 0; i < 4; ++i) cuMemFree(buffers[i]);
    std::printf("iter %d %s export=%s\n", it, failures == 0 ? "ok" : "FAILED", export_result);
  }
  cuMemFree(persistent);
  return failures == 0 ? 0 : 1;
}
