// A program that ends abruptly (issue 39, item 4): a few iterations of allocations and frees
// through the driver (fakecuda), then the end its argument names. Every allocation made before
// the end must be in its trace. Prints "ready" once the iterations are done.
//   abrupt_end _exit | abort | quick_exit | segv | exec | wait   (wait: until killed from outside)
//   abrupt_end exec-self    execs itself as "child" (the same MEMTOOL_TRACE, the same pid)
//   abrupt_end child        2 allocations, 1 free, a normal exit
// Linked with -lcuda (fakecuda).
#include <cuda.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kIterations = 5;  // each: 3 allocations, 2 frees (one buffer left live)
constexpr std::size_t kBytes = 1 << 16;

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  std::fprintf(stderr, "%s failed with %d\n", what, static_cast<int>(result));
  std::exit(1);
}

// Not a constant the compiler can see through: the store below is a real fault, not a trap.
volatile std::uintptr_t g_nowhere = 0;

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  CUdevice device = 0;
  CUcontext context = nullptr;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  if (std::strcmp(mode, "child") == 0) {
    CUdeviceptr a = 0;
    CUdeviceptr b = 0;
    check(cuMemAlloc(&a, kBytes), "cuMemAlloc");
    check(cuMemAlloc(&b, kBytes), "cuMemAlloc");
    check(cuMemFree(a), "cuMemFree");
    std::printf("child done\n");
    return 0;
  }
  for (int i = 0; i < kIterations; ++i) {
    CUdeviceptr buffers[3] = {};
    for (CUdeviceptr& buffer : buffers) check(cuMemAlloc(&buffer, kBytes), "cuMemAlloc");
    check(cuMemFree(buffers[0]), "cuMemFree");
    check(cuMemFree(buffers[1]), "cuMemFree");
  }
  std::printf("ready\n");
  std::fflush(stdout);
  if (std::strcmp(mode, "_exit") == 0) _exit(0);
  if (std::strcmp(mode, "abort") == 0) std::abort();
  if (std::strcmp(mode, "quick_exit") == 0) std::quick_exit(0);
  if (std::strcmp(mode, "segv") == 0) *reinterpret_cast<volatile int*>(g_nowhere) = 1;
  if (std::strcmp(mode, "exec") == 0) execl("/bin/true", "true", static_cast<char*>(nullptr));
  if (std::strcmp(mode, "exec-self") == 0) execl(argv[0], argv[0], "child", static_cast<char*>(nullptr));
  if (std::strcmp(mode, "wait") == 0) {
    for (;;) pause();
  }
  std::fprintf(stderr, "abrupt_end: unknown mode or failed exec: %s\n", mode);
  return 2;
}
