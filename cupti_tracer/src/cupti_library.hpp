// Finding and loading libcupti at run time (never linked), and its functions as a typed table.
//
// Where it is looked for, in order (the first that loads and has every required function wins):
//   1. a libcupti the process already loaded (PyTorch's kineto links one): reused through
//      dlopen(RTLD_NOLOAD), never a second copy;
//   2. MEMTOOL_CUPTI_LIBRARY — when set, the only one tried after step 1;
//   3. $CUDA_HOME/lib64 and $CUDA_HOME/extras/CUPTI/lib64, then the same under /usr/local/cuda;
//   4. the pip wheels next to an already loaded NVIDIA or PyTorch library: site-packages'
//      nvidia/cu13/lib (CUDA 13 wheels) and nvidia/cuda_cupti/lib (CUDA 12 wheels);
//   5. the loader's own search (LD_LIBRARY_PATH, ldconfig).
// In each directory the versioned names libcupti.so.13 and libcupti.so.12 come first — the
// driver's major version first, since a libcupti newer than the driver refuses to trace — then
// libcupti.so.
#pragma once

#include <cupti.h>

#include <optional>
#include <string>
#include <vector>

namespace memtool::cupti::detail {

struct CuptiApi {
#define MEMTOOL_CUPTI_FUNCTION(name, required) decltype(&::name) name = nullptr;
#include "cupti_api.def"
#undef MEMTOOL_CUPTI_FUNCTION
};

struct LibrarySearch {
  std::string explicit_library;             // MEMTOOL_CUPTI_LIBRARY
  std::string cuda_home;                    // CUDA_HOME ("" when unset)
  int driver_major = 0;                     // 12, 13, ... (0: unknown)
  std::vector<std::string> loaded_objects;  // paths of the objects loaded in the process
};

struct LoadedCupti {
  void* handle = nullptr;  // never closed: CUPTI cannot be unloaded safely
  std::string path;
  bool already_loaded = false;  // found loaded in the process (step 1)
  CuptiApi api;
};

// The paths the search tries after step 1, in order (tests check it).
[[nodiscard]] std::vector<std::string> candidate_paths(const LibrarySearch& search);
// Paths of the objects the process has loaded now (dl_iterate_phdr).
[[nodiscard]] std::vector<std::string> loaded_object_paths();
// Steps 1–5. nullopt with *why (what was tried) when no usable libcupti was found.
[[nodiscard]] std::optional<LoadedCupti> load_cupti(const LibrarySearch& search, std::string* why);

}  // namespace memtool::cupti::detail
