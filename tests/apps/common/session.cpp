// Session: context, module and kernel lookup, and the checked wrappers of the driver calls the
// training loops make.
#include "session.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace apps {

std::vector<char> read_module_image(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "error: cannot read module image '%s'\n", path.c_str());
    std::exit(1);
  }
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  image.push_back('\0');
  return image;
}

LoadedModule::LoadedModule(const DriverApi& api, const std::string& module_path) : api_(api) {
  APP_CHECK(api_, cuInit(0));
  APP_CHECK(api_, cuDeviceGet(&device_, 0));
  APP_CHECK(api_, cuDevicePrimaryCtxRetain(&context_, device_));
  APP_CHECK(api_, cuCtxSetCurrent(context_));
  const std::vector<char> image = read_module_image(module_path);
  APP_CHECK(api_, cuModuleLoadData(&module_, image.data()));
}

LoadedModule::~LoadedModule() {
  APP_CHECK(api_, cuModuleUnload(module_));
  APP_CHECK(api_, cuDevicePrimaryCtxRelease_v2(device_));
}

CUfunction LoadedModule::function(const char* name) const {
  CUfunction kernel = nullptr;
  APP_CHECK(api_, cuModuleGetFunction(&kernel, module_, name));
  return kernel;
}

Session::Session(const DriverApi& api, const std::string& module_path) : api_(api), loaded_(api, module_path) {
  const struct {
    CUfunction* slot;
    const char* name;
  } lookups[] = {
      {&kernels_.matmul, "matmul"},
      {&kernels_.bias_add, "bias_add"},
      {&kernels_.relu_forward, "relu_forward"},
      {&kernels_.relu_backward, "relu_backward"},
      {&kernels_.softmax_xent, "softmax_xent"},
      {&kernels_.column_sum, "column_sum"},
      {&kernels_.sgd_update, "sgd_update"},
      {&kernels_.scale_add, "scale_add"},
      {&kernels_.im2col_3x3, "im2col_3x3"},
      {&kernels_.maxpool2x2_forward, "maxpool2x2_forward"},
      {&kernels_.maxpool2x2_backward, "maxpool2x2_backward"},
  };
  for (const auto& lookup : lookups) *lookup.slot = loaded_.function(lookup.name);
}

// The module is unloaded and the context released after (loaded_'s destructor).
Session::~Session() { synchronize_context(); }

unsigned Session::blocks_for(int elements) {
  constexpr int threads_per_block = static_cast<int>(kThreadsPerBlock);
  constexpr int max_blocks = 1024;  // the GPU kernels loop grid-stride over the rest
  return static_cast<unsigned>(std::clamp((elements + threads_per_block - 1) / threads_per_block, 1, max_blocks));
}

void Session::launch_packed(CUfunction kernel, CUstream stream, int elements, void** params) {
  APP_CHECK(api_,
            cuLaunchKernel(kernel, blocks_for(elements), 1, 1, kThreadsPerBlock, 1, 1, 0, stream, params, nullptr));
}

void Session::synchronize_context() {
  if (api_.cuCtxSynchronize_v2 != nullptr) {
    APP_CHECK(api_, cuCtxSynchronize_v2(loaded_.context()));
  } else {
    APP_CHECK(api_, cuCtxSynchronize());
  }
}

CUdeviceptr Session::alloc(std::size_t bytes) {
  CUdeviceptr buffer = 0;
  APP_CHECK(api_, cuMemAlloc_v2(&buffer, bytes));
  return buffer;
}

void Session::free(CUdeviceptr buffer) { APP_CHECK(api_, cuMemFree_v2(buffer)); }

CUdeviceptr Session::alloc_async(std::size_t bytes, CUstream stream) {
  CUdeviceptr buffer = 0;
  APP_CHECK(api_, cuMemAllocAsync(&buffer, bytes, stream));
  return buffer;
}

void Session::free_async(CUdeviceptr buffer, CUstream stream) { APP_CHECK(api_, cuMemFreeAsync(buffer, stream)); }

void Session::upload(CUdeviceptr destination, const void* source, std::size_t bytes) {
  APP_CHECK(api_, cuMemcpyHtoD_v2(destination, source, bytes));
}

void Session::download(void* destination, CUdeviceptr source, std::size_t bytes) {
  APP_CHECK(api_, cuMemcpyDtoH_v2(destination, source, bytes));
}

}  // namespace apps
