// A test app's driver session: the device's primary context (as cudart uses it), the kernel
// module loaded from an image file, and the few helpers the training loops are written with.
#pragma once

#include "driver_api.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace apps {

// The kernels of app_kernels.cu / host_kernels.cpp, looked up by name.
struct Kernels {
  CUfunction matmul = nullptr;
  CUfunction bias_add = nullptr;
  CUfunction relu_forward = nullptr;
  CUfunction relu_backward = nullptr;
  CUfunction softmax_xent = nullptr;
  CUfunction column_sum = nullptr;
  CUfunction sgd_update = nullptr;
  CUfunction scale_add = nullptr;
  CUfunction im2col_3x3 = nullptr;
  CUfunction maxpool2x2_forward = nullptr;
  CUfunction maxpool2x2_backward = nullptr;
};

// Device 0's primary context, made current on this thread (as cudart uses it), with a module
// image loaded into it; at the end the module is unloaded and the context released.
class LoadedModule {
 public:
  LoadedModule(const DriverApi& api, const std::string& module_path);
  ~LoadedModule();
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  CUcontext context() const { return context_; }
  // The module's kernel `name`; a missing one ends the program (APP_CHECK).
  CUfunction function(const char* name) const;

 private:
  const DriverApi& api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
};

class Session {
 public:
  Session(const DriverApi& api, const std::string& module_path);
  ~Session();  // not copyable: it owns a LoadedModule

  const DriverApi& api() const { return api_; }
  CUcontext context() const { return loaded_.context(); }
  const Kernels& kernels() const { return kernels_; }

  // Launches `kernel` over `elements` work items (grid-stride on a GPU; the host twin loops).
  // Every argument must have the exact type of the kernel parameter: CUdeviceptr for pointers,
  // int, float.
  template <class... Args>
  void launch(CUfunction kernel, CUstream stream, int elements, Args... args) {
    void* params[] = {&args...};
    launch_packed(kernel, stream, elements, params);
  }

  // The launch geometry launch() uses for `elements` work items (graph kernel nodes use it too).
  static constexpr unsigned kThreadsPerBlock = 256;
  static unsigned blocks_for(int elements);

  // cuCtxSynchronize of the session's context, through whichever ABI the table holds (a client
  // that asked cuGetProcAddress for CUDA 13.0 or later got cuCtxSynchronize_v2(ctx)).
  void synchronize_context();

  CUdeviceptr alloc(std::size_t bytes);
  void free(CUdeviceptr buffer);
  CUdeviceptr alloc_async(std::size_t bytes, CUstream stream);
  void free_async(CUdeviceptr buffer, CUstream stream);
  void upload(CUdeviceptr destination, const void* source, std::size_t bytes);
  void download(void* destination, CUdeviceptr source, std::size_t bytes);

 private:
  void launch_packed(CUfunction kernel, CUstream stream, int elements, void** params);

  const DriverApi& api_;
  LoadedModule loaded_;
  Kernels kernels_;
};

// Bytes of `count` values of T, as the size_t the driver wants.
template <class T>
std::size_t bytes_of(int count) {
  return static_cast<std::size_t>(count) * sizeof(T);
}

// Reads a whole module image and appends a NUL (fake images and PTX are text).
std::vector<char> read_module_image(const std::string& path);

}  // namespace apps
