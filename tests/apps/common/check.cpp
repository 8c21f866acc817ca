// The one error path of the test apps: a failed driver call ends the program with its error name.
#include "driver_api.hpp"

#include <cstdio>
#include <cstdlib>

namespace apps {

void check(const DriverApi& api, CUresult result, const char* call, const char* file, int line) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    name = "unknown CUresult";
  }
  std::fprintf(stderr, "error: %s failed with %s (%d) at %s:%d\n", call, name, static_cast<int>(result), file, line);
  std::exit(1);
}

}  // namespace apps
