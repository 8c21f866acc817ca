// Before cuInit (its own test binary, so nothing has initialised the driver yet): every call but
// the version, error-name and resolver queries is refused with CUDA_ERROR_NOT_INITIALIZED; bad
// configuration fails cuInit loudly; after cuInit, calls without a context get
// CUDA_ERROR_INVALID_CONTEXT.
#include "fixture.hpp"

#include <sys/wait.h>
#include <unistd.h>

using namespace fakecuda_test;

TEST_CASE("the driver refuses work before cuInit and without a context", "[fakecuda][init]") {
  int version = 0;
  CU_CHECK_IS(cuDriverGetVersion(&version), CUDA_SUCCESS);
  CHECK(version == 13000);
  int count = 0;
  CU_CHECK_IS(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  CUdeviceptr p = 0;
  CU_CHECK_IS(cuMemAlloc(&p, 64), CUDA_ERROR_NOT_INITIALIZED);
  CUstream s = nullptr;
  CU_CHECK_IS(cuStreamCreate(&s, 0), CUDA_ERROR_NOT_INITIALIZED);
  void* fn = nullptr;
  CU_CHECK_IS(cuGetProcAddress("cuInit", &fn, 13000, 0, nullptr), CUDA_SUCCESS);  // cudart resolves before init
  CHECK(fn != nullptr);

  CU_CHECK_IS(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  setenv("FAKECUDA_MEMORY_BYTES", "12Q", 1);
  CU_CHECK_IS(cuInit(0), CUDA_ERROR_INVALID_VALUE);  // a typo must not emulate the wrong device
  CU_CHECK_IS(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  setenv("FAKECUDA_MEMORY_BYTES", "1G", 1);
  CU_CHECK_IS(cuInit(0), CUDA_SUCCESS);
  CU_CHECK_IS(cuDeviceGetCount(&count), CUDA_SUCCESS);
  CHECK(count == 1);
  size_t total = 0;
  CU_CHECK_IS(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  CHECK(total == (size_t{1} << 30));
  CUdevice dev = -1;
  CU_CHECK_IS(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  CU_CHECK_IS(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  char name[64] = {};
  CU_CHECK_IS(cuDeviceGetName(name, sizeof name, dev), CUDA_SUCCESS);
  CHECK(name[0] != '\0');
  int major = 0;
  CU_CHECK_IS(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), CUDA_SUCCESS);
  CHECK(major >= 7);
  CU_CHECK_IS(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_MAX, dev), CUDA_ERROR_INVALID_VALUE);

  // No current context yet.
  CU_CHECK_IS(cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  int bogus = 0;
  CU_CHECK_IS(cuCtxSetCurrent(reinterpret_cast<CUcontext>(&bogus)), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx = nullptr;
  CU_REQUIRE_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
  unsigned flags = 0;
  int active = 0;
  CU_REQUIRE_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  CHECK(active == 1);
  CU_REQUIRE_OK(cuCtxSetCurrent(ctx));
  CU_CHECK_IS(cuMemAlloc(&p, 64), CUDA_SUCCESS);
  CU_CHECK_IS(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  CHECK(dev == 0);

  // A pushed context is current until popped.
  CUcontext created = nullptr;
  CU_REQUIRE_OK(cuCtxCreate(&created, nullptr, 0, 0));
  CUcontext current = nullptr;
  CU_REQUIRE_OK(cuCtxGetCurrent(&current));
  CHECK(current == created);
  CUcontext popped = nullptr;
  CU_REQUIRE_OK(cuCtxPopCurrent(&popped));
  CHECK(popped == created);
  CU_REQUIRE_OK(cuCtxGetCurrent(&current));
  CHECK(current == ctx);
  CU_CHECK_IS(cuCtxDestroy(created), CUDA_SUCCESS);
  CU_CHECK_IS(cuCtxDestroy(created), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxDestroy(ctx), CUDA_ERROR_INVALID_CONTEXT);  // the primary context is released, not destroyed

  // A forked child cannot use the parent's driver, as with the real one.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    CUdeviceptr q = 0;
    _exit(cuMemAlloc(&q, 64) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  CU_CHECK_IS(cuMemFree(p), CUDA_SUCCESS);
  CU_CHECK_IS(cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
  CU_CHECK_IS(cuDevicePrimaryCtxRelease(dev), CUDA_ERROR_INVALID_CONTEXT);
}
