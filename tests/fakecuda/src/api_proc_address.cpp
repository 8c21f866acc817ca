// cuGetProcAddress{,_v2}: hands out fakecuda's own entry points by (name, CUDA version, stream
// flavour), the way cudart resolves the driver. A request names the API ("cuMemAdvise"); the
// answer is the newest variant not newer than the requested version, and its per-thread twin when
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM is set and the API has one.
#include "cuda_abi.hpp"
#include "cuda_abi_devices.hpp"
#include "graph_abi.hpp"

#include <cstring>

// Entry points defined elsewhere without a declaration in cuda.h or cuda_abi.hpp.
FAKECUDA_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                                     unsigned, unsigned, CUstream, void**);

namespace {

struct ProcEntry {
  const char* name;
  int version;
  bool per_thread;
  void* fn;
};

void* as_void(auto fn) { return reinterpret_cast<void*>(fn); }

const ProcEntry* table(std::size_t& size) {
  static const ProcEntry entries[] = {
#define FAKECUDA_PROC(name, version, symbol) {#name, version, false, as_void(&symbol)},
#define FAKECUDA_PROC_PT(name, version, symbol) {#name, version, true, as_void(&symbol)},
#include "proc_table.def"
#undef FAKECUDA_PROC
#undef FAKECUDA_PROC_PT
  };
  size = sizeof entries / sizeof entries[0];
  return entries;
}

CUresult resolve(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                 CUdriverProcAddressQueryResult* status) {
  constexpr cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if (symbol == nullptr || pfn == nullptr || (flags & ~known) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  std::size_t n = 0;
  const ProcEntry* entries = table(n);
  bool known_name = false;
  int best_version = -1;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::strcmp(entries[i].name, symbol) == 0) {
      known_name = true;
      if (entries[i].version <= cuda_version && entries[i].version > best_version) {
        best_version = entries[i].version;
      }
    }
  }
  *pfn = nullptr;
  if (best_version < 0) {
    if (status != nullptr) {
      *status = known_name ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const ProcEntry& e = entries[i];
    if (e.version == best_version && std::strcmp(e.name, symbol) == 0) {
      if (e.per_thread == per_thread) {
        *pfn = e.fn;  // the exact flavour asked for
        break;
      }
      if (!e.per_thread && *pfn == nullptr) {
        *pfn = e.fn;  // an API without a per-thread twin serves both
      }
    }
  }
  if (status != nullptr) {
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
  }
  return CUDA_SUCCESS;
}

}  // namespace

FAKECUDA_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                          CUdriverProcAddressQueryResult* symbolStatus) {
  return resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
}

FAKECUDA_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return resolve(symbol, pfn, cudaVersion, flags, nullptr);
}
