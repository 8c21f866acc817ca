// DriverApi resolved the way cudart resolves the driver: dlopen("libcuda.so.1"), dlsym of
// "cuGetProcAddress_v2", then one cuGetProcAddress_v2(base name, &fn, cudaVersion, flags, &status)
// per entry point. Nothing here is linked against libcuda: the interposer must see every call
// arrive through the pointers the resolver handed out.
#include "driver_api.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace apps {

namespace {

const char* query_status_name(CUdriverProcAddressQueryResult status) {
  switch (status) {
    case CU_GET_PROC_ADDRESS_SUCCESS:
      return "CU_GET_PROC_ADDRESS_SUCCESS";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND:
      return "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
      return "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT";
  }
  return "unknown status";
}

}  // namespace

DriverApi getproc_driver_api(const GetProcOptions& options) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW);
  if (driver == nullptr) {
    std::fprintf(stderr, "getproc: cannot load libcuda.so.1: %s\n", dlerror());
    std::exit(77);
  }
  using GetProc = decltype(&::cuGetProcAddress_v2);
  auto* get_proc = reinterpret_cast<GetProc>(dlsym(driver, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    std::fprintf(stderr, "getproc: libcuda.so.1 exports no cuGetProcAddress_v2\n");
    std::exit(1);
  }
  const cuuint64_t flags =
      options.per_thread_default_stream ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
  DriverApi api;
  const auto resolve = [&](const char* request, void** slot) {
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult result = get_proc(request, slot, options.cuda_version, flags, &status);
    if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || *slot == nullptr) {
      std::fprintf(stderr, "getproc: cuGetProcAddress_v2(\"%s\", %d, flags %llu) failed: result %d, %s\n", request,
                   options.cuda_version, static_cast<unsigned long long>(flags), static_cast<int>(result),
                   query_status_name(status));
      std::exit(1);
    }
  };
  // `request` is stringised without macro expansion, so cuda.h's cuMemAlloc -> cuMemAlloc_v2
  // renaming does not apply: we ask by the base name, as cudart does. An entry whose name means
  // another ABI at the requested version is left empty, and its newer twin is filled instead.
#define APP_DRIVER_FN(symbol, request, until)                \
  if ((until) == 0 || options.cuda_version < (until)) {      \
    void* fn = nullptr;                                      \
    resolve(#request, &fn);                                  \
    api.symbol = reinterpret_cast<decltype(api.symbol)>(fn); \
  }
#define APP_DRIVER_FN_SINCE(symbol, request, since)          \
  if (options.cuda_version >= (since)) {                     \
    void* fn = nullptr;                                      \
    resolve(#request, &fn);                                  \
    api.symbol = reinterpret_cast<decltype(api.symbol)>(fn); \
  }
#include "driver_api.def"
#undef APP_DRIVER_FN
#undef APP_DRIVER_FN_SINCE
  return api;  // the handle stays open for the life of the process, as cudart keeps it
}

}  // namespace apps
