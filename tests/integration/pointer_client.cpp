// A training-like loop that asks the driver about its own buffers, as NCCL's registration
// caches and IPC-sharing frameworks do: each iteration (ended by memtool_iteration_mark when
// preloaded) allocates four buffers, checks that cuMemGetAddressRange and
// cuPointerGetAttribute(s) describe exactly that buffer (its own base and size, an id no other
// live buffer has), and exports the third with cuIpcGetMemHandle: a handle must either fail or
// open to the buffer itself, never to another address. The exporting process may not open its
// own handle (the driver refuses), so a second process (this program again, under the same
// LD_PRELOAD as every rank of a job: memtool's own handles are opened by memtool) opens it and
// checks it reads exactly the buffer's bytes.
// Prints one line per iteration: "iter I ok export=<ok|refused>", or what went wrong (exit 1).
#include <cuda.h>
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

extern char** environ;

namespace {

int failures = 0;

void fail(int iteration, const char* what, unsigned long long got, unsigned long long want) {
  std::printf("iter %d FAIL %s: got %llu, want %llu\n", iteration, what, got, want);
  ++failures;
}

std::string to_hex(const CUipcMemHandle& handle) {
  std::string out;
  char digits[3];
  for (const char c : handle.reserved) {
    std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(c));
    out += digits;
  }
  return out;
}

// The opening side: `--open HEX BYTES VALUE` maps the handle and checks every byte is VALUE.
int open_and_check(const char* hex, const char* bytes_text, const char* value_text) {
  CUipcMemHandle handle{};
  for (std::size_t i = 0; i < sizeof handle.reserved; ++i) {
    unsigned byte = 0;
    if (std::sscanf(hex + 2 * i, "%2x", &byte) != 1) return 4;
    handle.reserved[i] = static_cast<char>(byte);
  }
  const std::size_t bytes = std::strtoull(bytes_text, nullptr, 10);
  const auto value = static_cast<unsigned char>(std::atoi(value_text));
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUdeviceptr opened = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS || cuCtxSetCurrent(context) != CUDA_SUCCESS ||
      cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS) {
    return 5;
  }
  std::vector<unsigned char> seen(bytes);
  if (cuMemcpyDtoH(seen.data(), opened, bytes) != CUDA_SUCCESS) return 6;
  for (const unsigned char b : seen) {
    if (b != value) return 7;
  }
  return cuIpcCloseMemHandle(opened) == CUDA_SUCCESS ? 0 : 8;
}

// Runs `self --open ...` with the same LD_PRELOAD and strategy (not the summary, trace or
// FAKECUDA_STATS files, which are this process's). Its exit status, or -1.
int open_elsewhere(const char* self, const CUipcMemHandle& handle, std::size_t bytes, unsigned value) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("MEMTOOL_SUMMARY=", 0) != 0 && entry.rfind("MEMTOOL_TRACE=", 0) != 0 &&
        entry.rfind("FAKECUDA_STATS=", 0) != 0) {
      env.push_back(entry);
    }
  }
  std::vector<std::string> args{self, "--open", to_hex(handle), std::to_string(bytes), std::to_string(value)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, self, nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--open") == 0) {
    return open_and_check(argv[2], argv[3], argv[4]);
  }
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
      if (cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_ERROR_INVALID_CONTEXT) {
        fail(it, "cuIpcOpenMemHandle in the exporting process", 1, 0);
      }
      cuCtxSynchronize();  // the memsets are asynchronous: the other process reads what they wrote
      const int opened_elsewhere = open_elsewhere(argv[0], handle, sizes[2], static_cast<unsigned>(it * 4 + 2) & 0xffu);
      if (opened_elsewhere != 0) {
        fail(it, "handle opens in another process to the buffer's bytes (status)",
             static_cast<unsigned long long>(opened_elsewhere), 0);
      }
    }
    for (int i = 0; i < 4; ++i) cuMemFree(buffers[i]);
    std::printf("iter %d %s export=%s\n", it, failures == 0 ? "ok" : "FAILED", export_result);
  }
  cuMemFree(persistent);
  return failures == 0 ? 0 : 1;
}
