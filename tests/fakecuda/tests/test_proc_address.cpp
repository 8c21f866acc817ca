// cuGetProcAddress{,_v2}: versioned and per-thread-stream variants, status reporting, errors;
// cuGetErrorName/String.
#include "fixture.hpp"

#include <dlfcn.h>

#include <string>

using namespace fakecuda_test;

namespace {

// The exported symbol a request resolves to.
void* exported(const char* symbol) {
  void* self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(self != nullptr);
  void* fn = dlsym(self, symbol);
  dlclose(self);
  REQUIRE(fn != nullptr);
  return fn;
}

void* resolve(const char* name, int version, cuuint64_t flags) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult r = cuGetProcAddress(name, &fn, version, flags, &status);
  INFO(name << " @" << version << " flags " << flags);
  CHECK(status_name(r) == "CUDA_SUCCESS");
  CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS);
  return fn;
}

}  // namespace

TEST_CASE("cuGetProcAddress picks the variant by version and stream flavour", "[fakecuda][procaddress]") {
  const cuuint64_t legacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  const cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  CHECK(resolve("cuMemAlloc", 12000, 0) == exported("cuMemAlloc_v2"));
  CHECK(resolve("cuMemFree", 13000, ptds) == exported("cuMemFree_v2"));  // no twin: same function
  CHECK(resolve("cuMemAdvise", 12000, 0) == exported("cuMemAdvise"));
  // CUDA 13 changed these two to take a context (PFN_..._v13000 in cudaTypedefs.h).
  CHECK(resolve("cuCtxSynchronize", 12000, 0) == exported("cuCtxSynchronize"));
  CHECK(resolve("cuCtxSynchronize", 13000, 0) == exported("cuCtxSynchronize_v2"));
  CHECK(resolve("cuCtxGetDevice", 12080, 0) == exported("cuCtxGetDevice"));
  CHECK(resolve("cuCtxGetDevice", 13000, 0) == exported("cuCtxGetDevice_v2"));
  CHECK(resolve("cuMemAdvise", 12020, 0) == exported("cuMemAdvise_v2"));
  CHECK(resolve("cuMemPrefetchAsync", 11000, legacy) == exported("cuMemPrefetchAsync"));
  CHECK(resolve("cuMemPrefetchAsync", 11000, ptds) == exported("cuMemPrefetchAsync_ptsz"));
  CHECK(resolve("cuMemPrefetchAsync", 12080, 0) == exported("cuMemPrefetchAsync_v2"));
  CHECK(resolve("cuMemPrefetchAsync", 12080, ptds) == exported("cuMemPrefetchAsync_v2_ptsz"));
  CHECK(resolve("cuLaunchKernel", 12000, ptds) == exported("cuLaunchKernel_ptsz"));
  CHECK(resolve("cuLaunchKernel", 12000, legacy) == exported("cuLaunchKernel"));
  CHECK(resolve("cuMemcpyHtoD", 12000, ptds) == exported("cuMemcpyHtoD_v2_ptds"));
  CHECK(resolve("cuMemcpyHtoDAsync", 12000, ptds) == exported("cuMemcpyHtoDAsync_v2_ptsz"));
  CHECK(resolve("cuMemAllocAsync", 12000, ptds) == exported("cuMemAllocAsync_ptsz"));
  CHECK(resolve("cuCtxCreate", 4000, 0) == exported("cuCtxCreate_v2"));
  CHECK(resolve("cuCtxCreate", 11040, 0) == exported("cuCtxCreate_v3"));
  CHECK(resolve("cuCtxCreate", 12080, 0) == exported("cuCtxCreate_v4"));
  CHECK(resolve("cuStreamDestroy", 12000, 0) == exported("cuStreamDestroy_v2"));
  CHECK(resolve("cuEventElapsedTime", 12000, 0) == exported("cuEventElapsedTime"));
  CHECK(resolve("cuEventElapsedTime", 12080, 0) == exported("cuEventElapsedTime_v2"));
  CHECK(resolve("cuGetProcAddress", 12000, 0) == exported("cuGetProcAddress_v2"));
  CHECK(resolve("cuFuncGetParamInfo", 12040, 0) == exported("cuFuncGetParamInfo"));
}

TEST_CASE("cuGetProcAddress reports what it cannot find", "[fakecuda][procaddress][errors]") {
  void* fn = &fn;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  CU_CHECK_IS(cuGetProcAddress("cuMemAllocAsync", &fn, 11000, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK(fn == nullptr);
  fn = &fn;
  CU_CHECK_IS(cuGetProcAddress("cuNoSuchEntryPoint", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(fn == nullptr);
  CU_CHECK_IS(cuGetProcAddress(nullptr, &fn, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGetProcAddress("cuInit", nullptr, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGetProcAddress("cuInit", &fn, 13000, 8, &status), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGetProcAddress("cuInit", &fn, 13000, 0, nullptr), CUDA_SUCCESS);  // status is optional
}

TEST_CASE("a per-thread resolved call uses the calling thread's default stream", "[fakecuda][procaddress][ptsz]") {
  driver_ready();
  using StreamGetId = CUresult (*)(CUstream, unsigned long long*);
  auto* ptsz =
      reinterpret_cast<StreamGetId>(resolve("cuStreamGetId", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
  auto* legacy = reinterpret_cast<StreamGetId>(resolve("cuStreamGetId", 12000, 0));
  unsigned long long via_ptsz = 0;
  unsigned long long per_thread = 0;
  unsigned long long via_legacy = 0;
  unsigned long long legacy_stream = 0;
  CU_REQUIRE_OK(ptsz(nullptr, &via_ptsz));
  CU_REQUIRE_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &per_thread));
  CU_REQUIRE_OK(legacy(nullptr, &via_legacy));
  CU_REQUIRE_OK(cuStreamGetId(CU_STREAM_LEGACY, &legacy_stream));
  CHECK(via_ptsz == per_thread);
  CHECK(via_legacy == legacy_stream);
  CHECK(via_ptsz != via_legacy);
}

TEST_CASE("cuGetErrorName and cuGetErrorString know every status", "[fakecuda][errors]") {
  const char* text = nullptr;
  CU_REQUIRE_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text));
  CHECK(std::string(text) == "CUDA_ERROR_OUT_OF_MEMORY");
  CU_REQUIRE_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
  CHECK(std::string(text) == "out of memory");
  CU_REQUIRE_OK(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &text));
  CHECK(std::string(text) == "CUDA_ERROR_ILLEGAL_ADDRESS");
  CU_REQUIRE_OK(cuGetErrorName(CUDA_SUCCESS, &text));
  CHECK(std::string(text) == "CUDA_SUCCESS");
  CU_CHECK_IS(cuGetErrorName(static_cast<CUresult>(1000), &text), CUDA_ERROR_INVALID_VALUE);
  CHECK(text == nullptr);
  CU_CHECK_IS(cuGetErrorString(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("cuGetProcAddress hands out every variant of its table, by version and stream flavour",
          "[fakecuda][procaddress][graphs]") {
  // Every line of src/proc_table.def: the API name asked for at the variant's first version (and
  // its stream flavour) resolves to exactly that exported symbol.
  struct Entry {
    const char* name;
    int version;
    bool per_thread;
    const char* symbol;
  };
  static const Entry entries[] = {
#define FAKECUDA_PROC(name, version, symbol) {#name, version, false, #symbol},
#define FAKECUDA_PROC_PT(name, version, symbol) {#name, version, true, #symbol},
#include "../src/proc_table.def"
#undef FAKECUDA_PROC
#undef FAKECUDA_PROC_PT
  };
  for (const Entry& e : entries) {
    INFO(e.symbol);
    const cuuint64_t flags =
        e.per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    CHECK(resolve(e.name, e.version, flags) == exported(e.symbol));
  }
}

TEST_CASE("cuGetProcAddress resolves stream capture and graph calls by generation", "[fakecuda][procaddress][graphs]") {
  const cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  // CUDA 12 renamed cuGraphInstantiate to the flags form.
  CHECK(resolve("cuGraphInstantiate", 10020, 0) == exported("cuGraphInstantiate"));
  CHECK(resolve("cuGraphInstantiate", 11080, 0) == exported("cuGraphInstantiate_v2"));
  CHECK(resolve("cuGraphInstantiate", 13000, 0) == exported("cuGraphInstantiateWithFlags"));
  CHECK(resolve("cuStreamBeginCapture", 10000, 0) == exported("cuStreamBeginCapture"));
  CHECK(resolve("cuStreamBeginCapture", 13000, 0) == exported("cuStreamBeginCapture_v2"));
  CHECK(resolve("cuStreamBeginCapture", 13000, ptds) == exported("cuStreamBeginCapture_v2_ptsz"));
  CHECK(resolve("cuStreamGetCaptureInfo", 11020, 0) == exported("cuStreamGetCaptureInfo"));
  CHECK(resolve("cuStreamGetCaptureInfo", 12020, ptds) == exported("cuStreamGetCaptureInfo_v2_ptsz"));
  CHECK(resolve("cuStreamGetCaptureInfo", 13000, 0) == exported("cuStreamGetCaptureInfo_v3"));
  CHECK(resolve("cuStreamUpdateCaptureDependencies", 12000, 0) == exported("cuStreamUpdateCaptureDependencies"));
  CHECK(resolve("cuStreamUpdateCaptureDependencies", 13000, ptds) ==
        exported("cuStreamUpdateCaptureDependencies_v2_ptsz"));
  CHECK(resolve("cuGraphAddKernelNode", 11080, 0) == exported("cuGraphAddKernelNode"));
  CHECK(resolve("cuGraphAddKernelNode", 12000, 0) == exported("cuGraphAddKernelNode_v2"));
  CHECK(resolve("cuGraphGetEdges", 12020, 0) == exported("cuGraphGetEdges"));
  CHECK(resolve("cuGraphGetEdges", 12030, 0) == exported("cuGraphGetEdges_v2"));
  CHECK(resolve("cuGraphAddNode", 12020, 0) == exported("cuGraphAddNode"));
  CHECK(resolve("cuGraphAddNode", 13000, 0) == exported("cuGraphAddNode_v2"));
  CHECK(resolve("cuGraphExecUpdate", 11000, 0) == exported("cuGraphExecUpdate"));
  CHECK(resolve("cuGraphExecUpdate", 12000, 0) == exported("cuGraphExecUpdate_v2"));
  CHECK(resolve("cuGraphLaunch", 12000, ptds) == exported("cuGraphLaunch_ptsz"));
  CHECK(resolve("cuGraphUpload", 12000, ptds) == exported("cuGraphUpload_ptsz"));
  CHECK(resolve("cuGraphInstantiateWithParams", 12000, ptds) == exported("cuGraphInstantiateWithParams_ptsz"));
  CHECK(resolve("cuGraphCreate", 12000, ptds) == exported("cuGraphCreate"));  // no twin: one function
  CHECK(resolve("cuDeviceGraphMemTrim", 12000, 0) == exported("cuDeviceGraphMemTrim"));
  void* fn = &fn;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  CU_CHECK_IS(cuGetProcAddress("cuGraphAddNode", &fn, 12010, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CU_CHECK_IS(cuGetProcAddress("cuStreamBeginCaptureToGraph", &fn, 12020, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}
