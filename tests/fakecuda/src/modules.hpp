// Modules and libraries whose kernels are host functions (see fakecuda/kernel_abi.h). A module
// and a library are the same object here, and so are a function and a library kernel: the
// driver lets a CUkernel stand wherever a CUfunction is accepted, and with one device there is
// nothing to tell them apart.
#pragma once

#include "cuda_abi.hpp"
#include "fakecuda/kernel_abi.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fakecuda {

struct Context;
struct Module;

struct Function {
  Module* module = nullptr;
  const fakecuda_kernel_desc* desc = nullptr;
  std::size_t packed_size = 0;  // bytes of the packed parameter buffer
  std::atomic<std::uint64_t>* launches = nullptr;
  std::atomic<int> max_dynamic_shared{48 * 1024};  // cuFuncSetAttribute may race with launches
};

struct Module {
  bool is_library = false;
  Context* context = nullptr;
  void* object = nullptr;  // dlopen handle of the kernel object
  std::string path;
  std::vector<std::unique_ptr<Function>> functions;
};

// Loads a fake module image (magic line + path). CUDA_ERROR_INVALID_IMAGE for anything else.
CUresult load_image(const void* image, bool is_library, Context* ctx, Module*& out);
CUresult load_file(const char* path, bool is_library, Context* ctx, Module*& out);
CUresult unload(Module* module, bool is_library);
// Any loaded module or library (cuLibraryGetModule hands a library out as a module).
CUresult find_module(const void* handle, Module*& out);
CUresult find_function(const void* handle, Function*& out);
CUresult get_function(Module* module, const char* name, Function*& out);

}  // namespace fakecuda
