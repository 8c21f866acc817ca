// Shared by the clients that check what the driver's resolvers hand out: names the library and
// symbol a function pointer lies in, and the signature of cuGetProcAddress_v2 they call through
// dlsym (the way cudart finds it). Header-only so each client stays one source file.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <string>

namespace memtool::integration {

// "libmemtool.so:cuMemAlloc_v2" for a function pointer; "?" for a part dladdr cannot name.
inline std::string where(void* p) {
  Dl_info info{};
  if (p == nullptr || dladdr(p, &info) == 0) return "?";
  std::string file = info.dli_fname != nullptr ? info.dli_fname : "?";
  file = file.substr(file.rfind('/') + 1);
  return file + ":" + (info.dli_sname != nullptr ? info.dli_sname : "?");
}

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

}  // namespace memtool::integration
