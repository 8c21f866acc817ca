// Entry points: modules, libraries, functions and kernel launches. A launch copies its arguments
// when it is issued (as the driver does), and the stream's worker later calls the kernel's host
// function with kernelParams-style pointers into that copy.
#include "driver.hpp"
#include "link.hpp"
#include "memory.hpp"
#include "modules.hpp"
#include "stats.hpp"
#include "streams.hpp"
#include "work_observer.hpp"
#include "work_ops.hpp"
#include "capture.hpp"
#include "graph.hpp"

#include <cstring>
#include <vector>

using namespace fakecuda;

namespace {

constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {2147483647u, 65535, 65535};
constexpr int kMaxSharedOptIn = 232448;
constexpr unsigned kMultiprocessors = 132;

CUresult prologue(Context*& ctx) {
  FC_TRY(check_init());
  return current_context(ctx);
}

CUresult check_dims(const fakecuda_launch_dims& d) {
  unsigned long long threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (d.grid[i] == 0 || d.block[i] == 0 || d.grid[i] > kMaxGridDim[i] || d.block[i] > kMaxBlockDim[i]) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    threads *= d.block[i];
  }
  return threads > kMaxThreadsPerBlock ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

}  // namespace

// The argument bytes of one launch, packed at the kernel's parameter offsets.
CUresult fakecuda::pack_arguments(const Function& f, void** params, void** extra, std::vector<unsigned char>& packed) {
  const fakecuda_kernel_desc& k = *f.desc;
  packed.assign(f.packed_size, 0);
  if (params != nullptr && extra != nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (params != nullptr) {
    for (unsigned i = 0; i < k.param_count; ++i) {
      if (params[i] == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      std::memcpy(packed.data() + k.param_offsets[i], params[i], k.param_sizes[i]);
    }
    return CUDA_SUCCESS;
  }
  if (extra != nullptr) {
    const void* buffer = nullptr;
    const std::size_t* size = nullptr;
    for (std::size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = static_cast<const std::size_t*>(extra[i + 1]);
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (f.packed_size == 0 && buffer == nullptr) {
      return CUDA_SUCCESS;
    }
    if (buffer == nullptr || size == nullptr || *size < f.packed_size) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::memcpy(packed.data(), buffer, f.packed_size);
    return CUDA_SUCCESS;
  }
  return k.param_count == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

namespace {

// A pointer argument into device memory the launching context may not reach (another device's,
// without peer, VMM or pool access) is a device fault: the kernel does not run and the context
// gets the sticky CUDA_ERROR_ILLEGAL_ADDRESS a GPU would report.
bool arguments_reachable(const fakecuda_kernel_desc& k, const std::vector<unsigned char>& packed, Context& ctx) {
  if (memory().single_device()) {
    return true;  // one device: nothing is another device's
  }
  for (unsigned i = 0; i < k.param_count; ++i) {
    if (k.param_sizes[i] == sizeof(CUdeviceptr)) {
      CUdeviceptr word = 0;
      std::memcpy(&word, packed.data() + k.param_offsets[i], sizeof word);
      if (!memory().kernel_may_access(word, ctx)) {
        return false;
      }
    }
  }
  return true;
}

// Runs on the stream's worker.
void run_kernel(const fakecuda_kernel_desc& k, std::vector<unsigned char>& packed, const fakecuda_launch_dims& dims,
                Context* owner) {
  if (!arguments_reachable(k, packed, *owner)) {
    set_sticky_error(owner, CUDA_ERROR_ILLEGAL_ADDRESS);
    return;
  }
  void* inline_args[16];
  std::vector<void*> heap_args;
  void** args = inline_args;
  if (k.param_count > 16) {
    heap_args.resize(k.param_count);
    args = heap_args.data();
  }
  const bool managed = memory().any_managed();
  const bool graph_memory = memory().any_graph_ranges();
  Migration faulted;
  for (unsigned i = 0; i < k.param_count; ++i) {
    args[i] = packed.data() + k.param_offsets[i];
    // A pointer argument into a graph allocation that is not mapped now (before its alloc node
    // ran, after its free) is a device fault, reported as the sticky error a GPU would raise.
    if (graph_memory && k.param_sizes[i] == sizeof(CUdeviceptr)) {
      CUdeviceptr word = 0;
      std::memcpy(&word, args[i], sizeof word);
      if (memory().graph_unmapped(word)) {
        set_sticky_error(owner, CUDA_ERROR_ILLEGAL_ADDRESS);
        return;
      }
    }
    // A pointer argument into managed memory is a GPU touch: the pages migrate to the device,
    // and the kernel waits for them to cross the link.
    if (managed && k.param_sizes[i] == sizeof(CUdeviceptr)) {
      CUdeviceptr word = 0;
      std::memcpy(&word, args[i], sizeof word);
      const Migration moved = memory().touch_managed(word, owner->device);
      faulted.to_device += moved.to_device;
      faulted.to_host += moved.to_host;
    }
  }
  link_migrate(faulted.to_device, faulted.to_host);
  const KernelRunning running;
  k.fn(args, &dims);
}

}  // namespace

CUresult fakecuda::check_launch(const Function& fn, const fakecuda_launch_dims& dims, bool cooperative) {
  FC_TRY(check_dims(dims));
  if (dims.shared_bytes > static_cast<unsigned>(fn.max_dynamic_shared.load(std::memory_order_relaxed))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (cooperative) {
    const unsigned threads = dims.block[0] * dims.block[1] * dims.block[2];
    const unsigned long long per_sm = std::min(32u, 2048u / threads);
    const unsigned long long blocks = 1ULL * dims.grid[0] * dims.grid[1] * dims.grid[2];
    if (blocks > per_sm * kMultiprocessors) {
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
  }
  return CUDA_SUCCESS;
}

std::function<void()> fakecuda::kernel_op(Function& fn, std::vector<unsigned char> packed,
                                          const fakecuda_launch_dims& dims, const Stream& s) {
  count(stats().launches);
  count(*fn.launches);
  const fakecuda_kernel_desc* k = fn.desc;
  Context* owner = s.context;
  const fakecuda_work work{FAKECUDA_WORK_KERNEL, 0, 0, s.id, owner->id, k->name};
  return observed(work_observer(), work,
                  [k, packed = std::move(packed), dims, owner]() mutable { run_kernel(*k, packed, dims, owner); });
}

namespace {

CUresult launch(CUfunction f, const fakecuda_launch_dims& dims, CUstream h, void** params, void** extra,
                bool per_thread, bool cooperative) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  Function* fn = nullptr;
  FC_TRY(find_function(f, fn));
  FC_TRY(check_launch(*fn, dims, cooperative));
  return guarded([&] {
    std::vector<unsigned char> packed;
    FC_TRY(pack_arguments(*fn, params, extra, packed));
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(h, per_thread, s));
    if (s->context->device != ctx->device) {
      // "A kernel launch will fail if it is issued to a stream that is not associated to the
      // current device" (CUDA Programming Guide, stream and event behavior).
      return CUDA_ERROR_INVALID_HANDLE;
    }
    FC_TRY(sticky_error(s->context));
    if (captures_exist()) {  // a capturing stream records the launch as a kernel node instead
      bool captured = false;
      FC_TRY(capture_work(
          s,
          [&](NodeParams& node) {
            return kernel_node_params(node, f, nullptr, nullptr, dims, std::move(packed), extra != nullptr,
                                      cooperative);
          },
          captured));
      if (captured) {
        return CUDA_SUCCESS;
      }
    }
    enqueue(s, kernel_op(*fn, std::move(packed), dims, *s));
    return CUDA_SUCCESS;
  });
}

fakecuda_launch_dims make_dims(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                               unsigned shared) {
  return fakecuda_launch_dims{{gx, gy, gz}, {bx, by, bz}, shared};
}

CUresult launch_ex(const CUlaunchConfig* config, CUfunction f, void** params, void** extra, bool per_thread) {
  if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && config->attrs[i].value.cooperative != 0) {
      cooperative = true;
    }
  }
  const auto dims = make_dims(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                              config->blockDimY, config->blockDimZ, config->sharedMemBytes);
  return launch(f, dims, config->hStream, params, extra, per_thread, cooperative);
}

CUresult param_info(const void* handle, size_t index, size_t* offset, size_t* size) {
  FC_TRY(check_init());
  Function* fn = nullptr;
  FC_TRY(find_function(handle, fn));
  if (index >= fn->desc->param_count) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (offset != nullptr) {
    *offset = fn->desc->param_offsets[index];
  }
  if (size != nullptr) {
    *size = fn->desc->param_sizes[index];
  }
  return CUDA_SUCCESS;
}

CUresult function_name(const char** name, const void* handle) {
  FC_TRY(check_init());
  if (name == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Function* fn = nullptr;
  FC_TRY(find_function(handle, fn));
  *name = fn->desc->name;
  return CUDA_SUCCESS;
}

CUresult function_attribute(int* pi, CUfunction_attribute attrib, const void* handle) {
  FC_TRY(check_init());
  if (pi == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Function* fn = nullptr;
  FC_TRY(find_function(handle, fn));
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = static_cast<int>(kMaxThreadsPerBlock);
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *pi = 32;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *pi = 90;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *pi = fn->max_dynamic_shared.load();
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *pi = -1;
      break;
    default:
      if (attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      *pi = 0;  // no static shared, constant or local memory: the kernel is a host function
  }
  return CUDA_SUCCESS;
}

CUresult set_function_attribute(const void* handle, CUfunction_attribute attrib, int value) {
  FC_TRY(check_init());
  Function* fn = nullptr;
  FC_TRY(find_function(handle, fn));
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > kMaxSharedOptIn) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      fn->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      return value < -1 || value > 100 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // read-only attributes
  }
}

CUresult enumerate(const void* owner, unsigned count, void** out) {
  FC_TRY(check_init());
  Module* m = nullptr;
  FC_TRY(find_module(owner, m));
  if (out == nullptr || count != m->functions.size()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (unsigned i = 0; i < count; ++i) {
    out[i] = m->functions[i].get();
  }
  return CUDA_SUCCESS;
}

// Loads a module or library from an in-memory image or (from_file) a path named by `source`.
template <class Handle>
CUresult load(Handle* out, const void* source, bool from_file, bool is_library, Context* ctx) {
  return guarded([&] {
    Module* m = nullptr;
    FC_TRY(from_file ? load_file(static_cast<const char*>(source), is_library, ctx, m)
                     : load_image(source, is_library, ctx, m));
    *out = reinterpret_cast<Handle>(m);
    return CUDA_SUCCESS;
  });
}

// cuModuleLoad*: modules belong to the current context, which must exist.
CUresult load_module(CUmodule* module, const void* source, bool from_file) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  if (module == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return load(module, source, from_file, false, ctx);
}

// cuLibraryLoad*: libraries are context-independent; option arrays must be there when counted.
CUresult load_library(CUlibrary* library, const void* source, bool from_file, const CUjit_option* jitOptions,
                      void* const* jitOptionsValues, unsigned numJitOptions, const CUlibraryOption* libraryOptions,
                      void* const* libraryOptionValues, unsigned numLibraryOptions) {
  FC_TRY(check_init());
  if (library == nullptr || (numJitOptions > 0 && (jitOptions == nullptr || jitOptionsValues == nullptr)) ||
      (numLibraryOptions > 0 && (libraryOptions == nullptr || libraryOptionValues == nullptr))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return load(library, source, from_file, true, nullptr);
}

// cuModuleGetFunction / cuLibraryGetKernel: a function of a module or library by name.
template <class Out>
CUresult function_by_name(Out* out, const void* owner, const char* name) {
  if (out == nullptr || name == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Module* m = nullptr;
  FC_TRY(find_module(owner, m));
  Function* f = nullptr;
  FC_TRY(get_function(m, name, f));
  *out = reinterpret_cast<Out>(f);
  return CUDA_SUCCESS;
}

// cuFuncGetModule / cuKernelGetLibrary: the module or library a function came from.
template <class Out>
CUresult owner_of(Out* out, const void* handle) {
  FC_TRY(check_init());
  if (out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Function* f = nullptr;
  FC_TRY(find_function(handle, f));
  *out = reinterpret_cast<Out>(f->module);
  return CUDA_SUCCESS;
}

}  // namespace

// ---- modules -------------------------------------------------------------------------

FAKECUDA_API CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return load_module(module, image, false);
}

FAKECUDA_API CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                         CUjit_option* options, void** optionValues) {
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return cuModuleLoadData(module, image);  // JIT options have nothing to act on
}

FAKECUDA_API CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return cuModuleLoadData(module, fatCubin);
}

FAKECUDA_API CUresult cuModuleLoad(CUmodule* module, const char* fname) { return load_module(module, fname, true); }

FAKECUDA_API CUresult cuModuleUnload(CUmodule hmod) {
  FC_TRY(check_init());
  return guarded([&] { return unload(reinterpret_cast<Module*>(hmod), false); });
}

FAKECUDA_API CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  return function_by_name(hfunc, hmod, name);
}

FAKECUDA_API CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  FC_TRY(check_init());
  if (count == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Module* m = nullptr;
  FC_TRY(find_module(mod, m));
  *count = static_cast<unsigned>(m->functions.size());
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions, CUmodule mod) {
  return enumerate(mod, numFunctions, reinterpret_cast<void**>(functions));
}

FAKECUDA_API CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  if (name == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  (void)dptr;
  (void)bytes;
  Module* m = nullptr;
  FC_TRY(find_module(hmod, m));
  return CUDA_ERROR_NOT_FOUND;  // kernel objects carry no __device__ variables
}

FAKECUDA_API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  FC_TRY(check_init());
  if (mode == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

// ---- libraries and kernels -----------------------------------------------------------

FAKECUDA_API CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                                        void** jitOptionsValues, unsigned int numJitOptions,
                                        CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                        unsigned int numLibraryOptions) {
  return load_library(library, code, false, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                      libraryOptionValues, numLibraryOptions);
}

FAKECUDA_API CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* jitOptions,
                                            void** jitOptionsValues, unsigned int numJitOptions,
                                            CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                            unsigned int numLibraryOptions) {
  return load_library(library, fileName, true, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                      libraryOptionValues, numLibraryOptions);
}

FAKECUDA_API CUresult cuLibraryUnload(CUlibrary library) {
  FC_TRY(check_init());
  return guarded([&] { return unload(reinterpret_cast<Module*>(library), true); });
}

FAKECUDA_API CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  FC_TRY(check_init());
  return function_by_name(pKernel, library, name);
}

FAKECUDA_API CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  return cuModuleGetFunctionCount(count, reinterpret_cast<CUmodule>(lib));
}

FAKECUDA_API CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels, CUlibrary lib) {
  return enumerate(lib, numKernels, reinterpret_cast<void**>(kernels));
}

FAKECUDA_API CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  if (pMod == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Module* m = nullptr;
  FC_TRY(find_module(library, m));
  *pMod = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  if (pFunc == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Function* f = nullptr;
  FC_TRY(find_function(kernel, f));
  *pFunc = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) { return owner_of(pLib, kernel); }

FAKECUDA_API CUresult cuKernelGetName(const char** name, CUkernel hfunc) { return function_name(name, hfunc); }

FAKECUDA_API CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  return param_info(kernel, paramIndex, paramOffset, paramSize);
}

FAKECUDA_API CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  FC_TRY(check_device(dev));
  return function_attribute(pi, attrib, kernel);
}

FAKECUDA_API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  FC_TRY(check_device(dev));
  return set_function_attribute(kernel, attrib, val);
}

// ---- functions -----------------------------------------------------------------------

FAKECUDA_API CUresult cuFuncGetName(const char** name, CUfunction hfunc) { return function_name(name, hfunc); }

FAKECUDA_API CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  return param_info(func, paramIndex, paramOffset, paramSize);
}

FAKECUDA_API CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) { return owner_of(hmod, hfunc); }

FAKECUDA_API CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  return function_attribute(pi, attrib, hfunc);
}

FAKECUDA_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  return set_function_attribute(hfunc, attrib, value);
}

FAKECUDA_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  FC_TRY(check_init());
  Function* f = nullptr;
  FC_TRY(find_function(hfunc, f));
  return config > CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  FC_TRY(check_init());
  if (state == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Function* f = nullptr;
  FC_TRY(find_function(function, f));
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuFuncLoad(CUfunction function) {
  FC_TRY(check_init());
  Function* f = nullptr;
  return find_function(function, f);
}

// ---- launches ------------------------------------------------------------------------

FAKECUDA_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return launch(f, make_dims(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes), hStream,
                kernelParams, extra, false, false);
}

FAKECUDA_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                          void** kernelParams, void** extra) {
  return launch(f, make_dims(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes), hStream,
                kernelParams, extra, true, false);
}

FAKECUDA_API CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  return launch_ex(config, f, kernelParams, extra, false);
}

FAKECUDA_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                            void** extra) {
  return launch_ex(config, f, kernelParams, extra, true);
}

FAKECUDA_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                                void** kernelParams) {
  return launch(f, make_dims(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes), hStream,
                kernelParams, nullptr, false, true);
}

FAKECUDA_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                     unsigned int gridDimZ, unsigned int blockDimX,
                                                     unsigned int blockDimY, unsigned int blockDimZ,
                                                     unsigned int sharedMemBytes, CUstream hStream,
                                                     void** kernelParams) {
  return launch(f, make_dims(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes), hStream,
                kernelParams, nullptr, true, true);
}
