// Loading kernel objects named by fake module images, and the function registry launches check.
#include "modules.hpp"

#include "driver.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_map>

namespace fakecuda {
namespace {

constexpr std::size_t kMaxPath = 4096;
constexpr unsigned kMaxParams = 4096;          // far above what a kernel signature can hold
constexpr std::size_t kMaxParamBytes = 32764;  // the driver's kernel parameter limit (CUDA 12.1+)

struct Registry {
  std::mutex mutex;
  std::unordered_map<const Module*, std::unique_ptr<Module>> modules;
  std::unordered_map<const Function*, Function*> functions;
};

Registry& registry() {
  static auto* r = new Registry;  // leaked with the rest of the driver state
  return *r;
}

// A kernel table is checked before any of it is trusted: a broken object is a bad image, not a
// crash later in a launch.
bool validate_table(const fakecuda_kernel_table* table, const std::string& path) {
  auto reject = [&](const char* why) {
    std::fprintf(stderr, "fakecuda: %s: %s\n", path.c_str(), why);
    return false;
  };
  if (table == nullptr) {
    return reject("no fakecuda_kernels table");
  }
  if (table->abi_version != FAKECUDA_KERNEL_ABI_VERSION) {
    return reject("kernel ABI version mismatch");
  }
  if (table->count > 0 && table->kernels == nullptr) {
    return reject("kernel table without kernels");
  }
  for (unsigned i = 0; i < table->count; ++i) {
    const fakecuda_kernel_desc& k = table->kernels[i];
    if (k.name == nullptr || k.fn == nullptr || k.param_count > kMaxParams ||
        (k.param_count > 0 && (k.param_offsets == nullptr || k.param_sizes == nullptr))) {
      return reject("malformed kernel descriptor");
    }
    for (unsigned p = 0; p < k.param_count; ++p) {
      if (k.param_sizes[p] == 0 || k.param_offsets[p] > kMaxParamBytes ||
          k.param_sizes[p] > kMaxParamBytes - k.param_offsets[p]) {
        return reject("kernel parameter outside the parameter buffer");
      }
    }
  }
  return true;
}

}  // namespace

CUresult load_image(const void* image, bool is_library, Context* ctx, Module*& out) {
  if (image == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char* text = static_cast<const char*>(image);
  const std::size_t magic_len = std::strlen(FAKECUDA_MODULE_MAGIC);
  if (std::strncmp(text, FAKECUDA_MODULE_MAGIC, magic_len) != 0) {
    return CUDA_ERROR_INVALID_IMAGE;
  }
  const char* path_start = text + magic_len;
  std::size_t n = 0;
  while (n < kMaxPath && path_start[n] != '\0' && path_start[n] != '\n') {
    ++n;
  }
  if (n == 0 || n == kMaxPath) {
    return CUDA_ERROR_INVALID_IMAGE;
  }
  std::string path(path_start, n);
  void* object = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (object == nullptr) {
    std::fprintf(stderr, "fakecuda: cannot load kernel object: %s\n", dlerror());
    return access(path.c_str(), F_OK) == 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_FILE_NOT_FOUND;
  }
  const auto* table = static_cast<const fakecuda_kernel_table*>(dlsym(object, FAKECUDA_KERNEL_TABLE_SYMBOL));
  if (!validate_table(table, path)) {
    dlclose(object);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  auto module = std::make_unique<Module>();
  module->is_library = is_library;
  module->context = ctx;
  module->object = object;
  module->path = std::move(path);
  for (unsigned i = 0; i < table->count; ++i) {
    auto f = std::make_unique<Function>();
    f->module = module.get();
    f->desc = &table->kernels[i];
    for (unsigned p = 0; p < f->desc->param_count; ++p) {
      f->packed_size = std::max<std::size_t>(f->packed_size, f->desc->param_offsets[p] + f->desc->param_sizes[p]);
    }
    f->launches = kernel_launch_counter(f->desc->name);
    module->functions.push_back(std::move(f));
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& f : module->functions) {
    r.functions.emplace(f.get(), f.get());
  }
  out = module.get();
  r.modules.emplace(out, std::move(module));
  return CUDA_SUCCESS;
}

CUresult load_file(const char* path, bool is_library, Context* ctx, Module*& out) {
  if (path == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  std::string image;
  char buffer[4096];
  // A module image is a short text; reading more would only be a way to eat memory.
  while (image.size() < kMaxPath * 2 && in.read(buffer, sizeof buffer).gcount() > 0) {
    image.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  return load_image(image.c_str(), is_library, ctx, out);
}

CUresult unload(Module* module, bool is_library) {
  std::unique_ptr<Module> owned;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.modules.find(module);
    if (it == r.modules.end() || it->second->is_library != is_library) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    owned = std::move(it->second);
    r.modules.erase(it);
    for (const auto& f : owned->functions) {
      r.functions.erase(f.get());
    }
  }
  // Launches already queued still call into the object: let them finish before dlclose.
  synchronize_device();
  dlclose(owned->object);
  return CUDA_SUCCESS;
}

CUresult find_module(const void* handle, Module*& out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.modules.find(static_cast<const Module*>(handle));
  if (it == r.modules.end()) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  out = it->second.get();
  return CUDA_SUCCESS;
}

CUresult find_function(const void* handle, Function*& out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.functions.find(static_cast<const Function*>(handle));
  if (it == r.functions.end()) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  out = it->second;
  return CUDA_SUCCESS;
}

CUresult get_function(Module* module, const char* name, Function*& out) {
  if (name == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (const auto& f : module->functions) {
    if (std::strcmp(f->desc->name, name) == 0) {
      out = f.get();
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

}  // namespace fakecuda
