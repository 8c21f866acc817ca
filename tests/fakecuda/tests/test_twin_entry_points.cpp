// Entry points that come in pairs (module/library, CUfunction/CUkernel, legacy/_ptsz, with or
// without a context argument) share one implementation inside fakecuda; these tests hold both
// members of each pair to the same answers, including the error codes of bad arguments.
#include "fixture.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>
#include <unistd.h>

using namespace fakecuda_test;

// The per-thread-stream twin, which cuda.h declares only for per-thread builds.
extern "C" CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                 CUstream hStream);

namespace {

// The test kernel object's image written to a temporary file, removed again on destruction.
struct ImageFile {
  ImageFile() {
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const std::string image = module_image(FAKECUDA_TEST_KERNELS);
    REQUIRE(write(fd, image.data(), image.size()) == static_cast<ssize_t>(image.size()));
    close(fd);
  }
  ~ImageFile() { std::remove(path); }
  ImageFile(const ImageFile&) = delete;
  ImageFile& operator=(const ImageFile&) = delete;

  char path[32] = "/tmp/fakecuda-twin-XXXXXX";
};

}  // namespace

TEST_CASE("libraries load from a file as from memory, and check their option arrays", "[fakecuda][modules]") {
  driver_ready();
  ImageFile file;
  CUlibrary lib = nullptr;
  CU_REQUIRE_OK(cuLibraryLoadFromFile(&lib, file.path, nullptr, nullptr, 0, nullptr, nullptr, 0));
  unsigned count = 0;
  CU_REQUIRE_OK(cuLibraryGetKernelCount(&count, lib));
  CHECK(count == 6);
  CUkernel kernels[6] = {};
  CU_CHECK_IS(cuLibraryEnumerateKernels(kernels, 5, lib), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLibraryEnumerateKernels(nullptr, 6, lib), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuLibraryEnumerateKernels(kernels, 6, lib));
  CUkernel by_name = nullptr;
  CU_REQUIRE_OK(cuLibraryGetKernel(&by_name, lib, "fill_u32"));
  CHECK(std::find(std::begin(kernels), std::end(kernels), by_name) != std::end(kernels));
  CU_CHECK_IS(cuLibraryGetKernel(nullptr, lib, "fill_u32"), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLibraryGetKernel(&by_name, lib, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUlibrary owner = nullptr;
  CU_REQUIRE_OK(cuKernelGetLibrary(&owner, by_name));
  CHECK(owner == lib);
  CU_CHECK_IS(cuKernelGetLibrary(nullptr, by_name), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLibraryUnload(lib), CUDA_SUCCESS);
  CU_CHECK_IS(cuKernelGetLibrary(&owner, by_name), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuLibraryEnumerateKernels(kernels, 6, lib), CUDA_ERROR_INVALID_HANDLE);

  CUjit_option option = CU_JIT_MAX_REGISTERS;
  CUlibraryOption library_option = CU_LIBRARY_BINARY_IS_PRESERVED;
  CU_CHECK_IS(cuLibraryLoadFromFile(nullptr, file.path, nullptr, nullptr, 0, nullptr, nullptr, 0),
              CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLibraryLoadFromFile(&lib, file.path, &option, nullptr, 1, nullptr, nullptr, 0),
              CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLibraryLoadFromFile(&lib, file.path, nullptr, nullptr, 0, &library_option, nullptr, 1),
              CUDA_ERROR_INVALID_VALUE);
  const std::string image = module_image(FAKECUDA_TEST_KERNELS);
  CU_CHECK_IS(cuLibraryLoadData(&lib, image.c_str(), &option, nullptr, 1, nullptr, nullptr, 0),
              CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLibraryLoadData(&lib, image.c_str(), nullptr, nullptr, 0, &library_option, nullptr, 1),
              CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLibraryLoadFromFile(&lib, "/nonexistent/library.fatbin", nullptr, nullptr, 0, nullptr, nullptr, 0),
              CUDA_ERROR_FILE_NOT_FOUND);
}

TEST_CASE("modules enumerate their functions and name their owner", "[fakecuda][modules]") {
  driver_ready();
  ImageFile file;
  CUmodule m = nullptr;
  CU_CHECK_IS(cuModuleLoad(nullptr, file.path), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuModuleLoadData(nullptr, module_image(FAKECUDA_TEST_KERNELS).c_str()), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuModuleLoad(&m, file.path));
  CUfunction functions[6] = {};
  CU_CHECK_IS(cuModuleEnumerateFunctions(functions, 7, m), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuModuleEnumerateFunctions(functions, 6, m));
  CUfunction axpy = nullptr;
  CU_REQUIRE_OK(cuModuleGetFunction(&axpy, m, "axpy"));
  CHECK(std::find(std::begin(functions), std::end(functions), axpy) != std::end(functions));
  CU_CHECK_IS(cuModuleGetFunction(nullptr, m, "axpy"), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuModuleGetFunction(&axpy, m, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUmodule owner = nullptr;
  CU_REQUIRE_OK(cuFuncGetModule(&owner, axpy));
  CHECK(owner == m);
  CU_CHECK_IS(cuFuncGetModule(nullptr, axpy), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuModuleUnload(m), CUDA_SUCCESS);
  CU_CHECK_IS(cuFuncGetModule(&owner, axpy), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuModuleEnumerateFunctions(functions, 6, m), CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("context queries take NULL as the current context and refuse a destroyed one", "[fakecuda][context]") {
  driver_ready();
  CUcontext current = nullptr;
  CU_REQUIRE_OK(cuCtxGetCurrent(&current));
  unsigned long long current_id = 0;
  CU_REQUIRE_OK(cuCtxGetId(current, &current_id));
  unsigned long long id = 0;
  CU_REQUIRE_OK(cuCtxGetId(nullptr, &id));
  CHECK(id == current_id);
  unsigned version = 0;
  CU_REQUIRE_OK(cuCtxGetApiVersion(nullptr, &version));
  CHECK(version == 3020);
  CU_CHECK_IS(cuCtxGetId(nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuCtxGetApiVersion(current, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUdevice device = -1;
  CU_REQUIRE_OK(cuCtxGetDevice_v2(&device, nullptr));
  CHECK(device == 0);
  CU_CHECK_IS(cuCtxGetDevice(nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuCtxGetDevice_v2(nullptr, current), CUDA_ERROR_INVALID_VALUE);

  CUcontext created = nullptr;
  CU_REQUIRE_OK(cuCtxCreate(&created, nullptr, 0, 0));
  CU_REQUIRE_OK(cuCtxGetId(created, &id));
  CHECK(id != current_id);
  CU_CHECK_IS(cuCtxSynchronize_v2(created), CUDA_SUCCESS);
  CU_REQUIRE_OK(cuCtxDestroy(created));
  CU_CHECK_IS(cuCtxGetId(created, &id), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxGetApiVersion(created, &version), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxGetDevice_v2(&device, created), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxSynchronize_v2(created), CUDA_ERROR_INVALID_CONTEXT);

  // With no context current, NULL has nothing to name.
  CU_REQUIRE_OK(cuCtxSetCurrent(nullptr));
  CU_CHECK_IS(cuCtxGetId(nullptr, &id), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxGetDevice(&device), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  driver_ready();
  CU_CHECK_IS(cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_CASE("error names and strings come from one table", "[fakecuda][errors]") {
  const char* text = "unchanged";
  CU_REQUIRE_OK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text));
  CHECK(std::string(text) == "invalid value");
  CU_REQUIRE_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text));
  CHECK(std::string(text) == "CUDA_ERROR_OUT_OF_MEMORY");
  // 1000 lies within the enum's range but names no status.
  CU_CHECK_IS(cuGetErrorString(static_cast<CUresult>(1000), &text), CUDA_ERROR_INVALID_VALUE);
  CHECK(text == nullptr);
  text = "unchanged";
  CU_CHECK_IS(cuGetErrorName(static_cast<CUresult>(1000), &text), CUDA_ERROR_INVALID_VALUE);
  CHECK(text == nullptr);
  CU_CHECK_IS(cuGetErrorString(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGetErrorName(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("stream getters, host functions and callbacks check their arguments alike", "[fakecuda][streams]") {
  driver_ready();
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -2));
  unsigned flags = 0;
  CU_REQUIRE_OK(cuStreamGetFlags(s, &flags));
  CHECK(flags == CU_STREAM_NON_BLOCKING);
  int priority = 0;
  CU_REQUIRE_OK(cuStreamGetPriority(s, &priority));
  CHECK(priority == -2);
  CUcontext ctx = nullptr;
  CUcontext current = nullptr;
  CU_REQUIRE_OK(cuCtxGetCurrent(&current));
  CU_REQUIRE_OK(cuStreamGetCtx(s, &ctx));
  CHECK(ctx == current);
  CU_CHECK_IS(cuStreamGetFlags(s, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamGetCtx(s, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamGetPriority(s, nullptr), CUDA_ERROR_INVALID_VALUE);

  int calls = 0;
  CU_REQUIRE_OK(cuLaunchHostFunc(
      s, [](void* p) { ++*static_cast<int*>(p); }, &calls));
  CU_REQUIRE_OK(cuStreamAddCallback(
      s, [](CUstream, CUresult status, void* p) { *static_cast<int*>(p) += status == CUDA_SUCCESS ? 10 : 100; }, &calls,
      0));
  CU_CHECK_IS(cuLaunchHostFunc(s, nullptr, &calls), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamAddCallback(s, nullptr, &calls, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamAddCallback(
                  s, [](CUstream, CUresult, void*) {}, nullptr, 1),
              CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(calls == 11);

  CUevent e = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
  CU_CHECK_IS(cuEventRecord(e, s), CUDA_SUCCESS);
  CU_CHECK_IS(cuEventRecordWithFlags(e, s, 0x80), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamWaitEvent(nullptr, e, 0), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamWaitEvent(s, e, 0x80), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuEventDestroy(e));
  CU_CHECK_IS(cuEventRecord(e, s), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuStreamWaitEvent(s, e, 0), CUDA_ERROR_INVALID_HANDLE);

  CU_REQUIRE_OK(cuStreamDestroy(s));
  CU_CHECK_IS(cuStreamGetFlags(s, &flags), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuLaunchHostFunc(
                  s, [](void*) {}, nullptr),
              CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("allocation from the default pool, legacy and per-thread", "[fakecuda][memory]") {
  driver_ready();
  CUmemoryPool pool = nullptr;
  CU_REQUIRE_OK(cuDeviceGetDefaultMemPool(&pool, 0));
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&a, 4096, pool, nullptr));
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync_ptsz(&b, 4096, pool, nullptr));
  CHECK(a != 0);
  CHECK(b != 0);
  CHECK(a != b);
  CU_CHECK_IS(cuMemAllocFromPoolAsync_ptsz(&b, 4096, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemAllocFromPoolAsync_ptsz(&b, 4096, reinterpret_cast<CUmemoryPool>(&pool), nullptr),
              CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuMemAllocFromPoolAsync(&a, 4096, reinterpret_cast<CUmemoryPool>(&pool), nullptr),
              CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuMemAllocFromPoolAsync_ptsz(nullptr, 4096, pool, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemFreeAsync(a, nullptr));
  CU_REQUIRE_OK(cuMemFreeAsync(b, nullptr));
  CU_REQUIRE_OK(cuCtxSynchronize());
}
