// The table of driver functions a test app calls, and the error check every call goes through.
//
// The training code never names a driver symbol directly: it calls through a DriverApi, filled
// either from the symbols of libcuda.so.1 the program is linked against (driver_api_linked.cpp)
// or, like cudart does, through dlopen + cuGetProcAddress_v2 (driver_api_getproc.cpp). The same
// model code therefore runs both ways and must print the same checksums.
#pragma once

#include <cuda.h>

namespace apps {

struct DriverApi {
#define APP_DRIVER_FN(symbol, request, until) decltype(&::symbol) symbol = nullptr;
#define APP_DRIVER_FN_SINCE(symbol, request, since) decltype(&::symbol) symbol = nullptr;
#include "driver_api.def"
#undef APP_DRIVER_FN
#undef APP_DRIVER_FN_SINCE
};

// Fills the table from the linked driver (the program then has NEEDED libcuda.so.1).
DriverApi linked_driver_api();

struct GetProcOptions {
  int cuda_version = 12000;                // what the caller claims to be built against, as cudart passes it
  bool per_thread_default_stream = false;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
};

// Fills the table through dlopen("libcuda.so.1") + cuGetProcAddress_v2, exactly as cudart does.
// On failure prints why on stderr and exits: 77 when there is no libcuda.so.1 at all (so GPU
// tests can skip), 1 for a symbol the driver does not hand out.
DriverApi getproc_driver_api(const GetProcOptions& options);

// Exits the program with the error's name when `result` is not CUDA_SUCCESS.
void check(const DriverApi& api, CUresult result, const char* call, const char* file, int line);

}  // namespace apps

#define APP_CHECK(api, call) ::apps::check((api), (api).call, #call, __FILE__, __LINE__)
