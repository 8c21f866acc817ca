// load_cupti: the search order of cupti_library.hpp, dlopen with RTLD_NOLOAD for a libcupti the
// process already has, and the function table resolved with dlsym.
#include "cupti_library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

namespace memtool::cupti::detail {
namespace {

std::string_view basename_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// libcupti.so.<major> names, the driver's major first.
std::vector<std::string> library_names(int driver_major) {
  std::vector<int> majors{13, 12};
  if (driver_major == 12) std::swap(majors[0], majors[1]);
  std::vector<std::string> names;
  names.reserve(majors.size() + 1);
  for (const int major : majors) names.push_back("libcupti.so." + std::to_string(major));
  names.emplace_back("libcupti.so");
  return names;
}

// "…/site-packages/" (or dist-packages) of a loaded object's path, if it lies in one.
std::string python_packages_root(std::string_view path) {
  for (const std::string_view marker : {std::string_view("/site-packages/"), std::string_view("/dist-packages/")}) {
    const auto at = path.find(marker);
    if (at != std::string_view::npos) return std::string(path.substr(0, at + marker.size()));
  }
  return {};
}

bool resolve(void* handle, CuptiApi& api, std::string* missing) {
  bool complete = true;
#define MEMTOOL_CUPTI_FUNCTION(name, required)                           \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name)); \
  if (api.name == nullptr && (required)) {                               \
    complete = false;                                                    \
    if (missing != nullptr && missing->empty()) *missing = #name;        \
  }
#include "cupti_api.def"
#undef MEMTOOL_CUPTI_FUNCTION
  return complete;
}

std::optional<LoadedCupti> try_open(const std::string& path, int flags, bool already_loaded, std::string& tried) {
  void* handle = dlopen(path.c_str(), flags);
  if (handle == nullptr) {
    if ((flags & RTLD_NOLOAD) == 0) {
      const char* error = dlerror();
      tried += (tried.empty() ? " " : "; ") + path + ": " + (error != nullptr ? error : "cannot be loaded");
    }
    return std::nullopt;
  }
  LoadedCupti loaded;
  loaded.handle = handle;
  loaded.path = path;
  loaded.already_loaded = already_loaded;
  std::string missing;
  if (!resolve(handle, loaded.api, &missing)) {
    tried += (tried.empty() ? " " : "; ") + path + ": has no " + missing;
    return std::nullopt;  // left loaded: unloading a library that may be in use is riskier
  }
  return loaded;
}

}  // namespace

std::vector<std::string> loaded_object_paths() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &paths);
  return paths;
}

std::vector<std::string> candidate_paths(const LibrarySearch& search) {
  const std::vector<std::string> names = library_names(search.driver_major);
  std::vector<std::string> paths;
  auto add = [&](const std::string& path) {
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  };
  auto add_dir = [&](const std::string& dir) {
    for (const std::string& name : names) add(std::string(dir).append("/").append(name));
  };
  if (!search.explicit_library.empty()) return {search.explicit_library};  // the user's choice, only
  std::vector<std::string> homes;
  if (!search.cuda_home.empty()) homes.push_back(search.cuda_home);
  homes.emplace_back("/usr/local/cuda");
  for (const std::string& home : homes) {
    add_dir(home + "/lib64");
    add_dir(home + "/extras/CUPTI/lib64");
  }
  std::vector<std::string> roots;
  for (const std::string& object : search.loaded_objects) {
    const std::string root = python_packages_root(object);
    if (!root.empty() && std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
  }
  for (const std::string& root : roots) {
    // CUDA 13 wheels put every library in nvidia/cu13/lib; CUDA 12 wheels one package each.
    const std::string cu13 = root + "nvidia/cu13/lib/libcupti.so.13";
    const std::string cu12 = root + "nvidia/cuda_cupti/lib/libcupti.so.12";
    if (search.driver_major == 12) {
      add(cu12);
      add(cu13);
    } else {
      add(cu13);
      add(cu12);
    }
  }
  for (const std::string& name : names) add(name);  // the loader's own search
  return paths;
}

std::optional<LoadedCupti> load_cupti(const LibrarySearch& search, std::string* why) {
  std::string tried;
  // 1. Already in the process: by its path, then by name.
  for (const std::string& object : search.loaded_objects) {
    if (!basename_of(object).starts_with("libcupti.so")) continue;
    if (auto loaded = try_open(object, RTLD_NOW | RTLD_NOLOAD, true, tried)) return loaded;
  }
  for (const std::string& name : library_names(search.driver_major)) {
    if (auto loaded = try_open(name, RTLD_NOW | RTLD_NOLOAD, true, tried)) return loaded;
  }
  // 2–5.
  for (const std::string& path : candidate_paths(search)) {
    // A directory candidate that does not exist is not worth a line in the message.
    const bool by_path = path.find('/') != std::string::npos;
    const bool chosen = !search.explicit_library.empty();
    if (by_path && !chosen && access(path.c_str(), F_OK) != 0) continue;
    std::string quiet;  // the loader's own search: only worth mentioning when it finds something
    if (auto loaded = try_open(path, RTLD_NOW | RTLD_LOCAL, false, by_path || chosen ? tried : quiet)) return loaded;
  }
  if (why != nullptr) {
    *why = !tried.empty() ? "no usable libcupti:" + tried
                          : std::string(
                                "no libcupti found ($CUDA_HOME, /usr/local/cuda, the pip wheels, the loader's "
                                "search path)");
  }
  return std::nullopt;
}

}  // namespace memtool::cupti::detail
