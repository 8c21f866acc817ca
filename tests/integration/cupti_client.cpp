// A program for the CUPTI tracer's integration tests (test_cupti.cpp). Linked with -lcuda
// (fakecuda); under libmemtool.so with MEMTOOL_CUPTI.
//   cupti_client own LIBCUPTI   holds CUPTI itself from the start, as a profiler would:
//                               subscribes, registers its own activity buffers and enables MEMSET
//                               before its first hooked call, then issues 20 memsets and prints
//                               how many memset records it got back.
//   cupti_client late LIBCUPTI  the same once memtool traces (a profiler started in the middle
//                               of a run): 5 memsets, then CUPTI taken, then 4 s of memsets (40,
//                               100 ms apart) with memtool_iteration_mark() between them.
//   cupti_client fork           10 memsets, fork (the child tries one and exits through atexit),
//                               10 more memsets in the parent; prints "fork ok".
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK_CU(call)                                                         \
  do {                                                                         \
    if (CUresult r = (call); r != CUDA_SUCCESS) {                              \
      std::fprintf(stderr, "%s failed with %d\n", #call, static_cast<int>(r)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

int g_memset_records = 0;
decltype(&cuptiActivityGetNextRecord) g_next = nullptr;

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 16;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (g_next(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) ++g_memset_records;
  }
  std::free(buffer);
}

template <class F>
F symbol(void* library, const char* name) {
  auto f = reinterpret_cast<F>(dlsym(library, name));
  if (f == nullptr) {
    std::fprintf(stderr, "no %s\n", name);
    std::exit(1);
  }
  return f;
}

void memsets(CUdeviceptr buffer, int n) {
  for (int i = 0; i < n; ++i) CHECK_CU(cuMemsetD8(buffer, static_cast<unsigned char>(i), 4096));
  CHECK_CU(cuCtxSynchronize());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  CUdevice device = 0;
  CUcontext context = nullptr;
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDeviceGet(&device, 0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  CUdeviceptr buffer = 0;
  const bool own = (mode == "own" || mode == "late") && argc == 3;
  if (!own || mode == "late") CHECK_CU(cuMemAlloc(&buffer, 4096));  // memtool starts here
  if (mode == "late") memsets(buffer, 5);
  if (own) {
    void* cupti = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (cupti == nullptr) return 1;
    g_next = symbol<decltype(&cuptiActivityGetNextRecord)>(cupti, "cuptiActivityGetNextRecord");
    CUpti_SubscriberHandle subscriber = nullptr;
    if (symbol<decltype(&cuptiSubscribe)>(cupti, "cuptiSubscribe")(
            &subscriber, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "cuptiSubscribe failed\n");
      return 1;
    }
    if (symbol<decltype(&cuptiActivityRegisterCallbacks)>(cupti, "cuptiActivityRegisterCallbacks")(
            &requested, &completed) != CUPTI_SUCCESS ||
        symbol<decltype(&cuptiActivityEnable)>(cupti, "cuptiActivityEnable")(CUPTI_ACTIVITY_KIND_MEMSET) !=
            CUPTI_SUCCESS) {
      return 1;
    }
    if (mode == "own") {
      CHECK_CU(cuMemAlloc(&buffer, 4096));  // memtool starts here, finding CUPTI taken
      memsets(buffer, 20);
    } else {
      auto mark = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "memtool_iteration_mark"));
      for (int round = 0; round < 40; ++round) {
        memsets(buffer, 1);
        if (mark != nullptr) mark();  // memtool flushes at each: it sees its buffers stay away
        usleep(100000);
      }
    }
    (void)symbol<decltype(&cuptiActivityFlushAll)>(cupti, "cuptiActivityFlushAll")(0);
    std::printf("own records %d\n", g_memset_records);
  } else if (mode == "fork") {
    memsets(buffer, 10);
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      (void)cuMemsetD8(buffer, 1, 4096);  // the driver refuses a forked child's context
      std::exit(0);                       // atexit handlers run: the tracer must stay quiet
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    memsets(buffer, 10);
    std::puts("fork ok");
  } else {
    return 2;
  }
  CHECK_CU(cuMemFree(buffer));
  return 0;
}
