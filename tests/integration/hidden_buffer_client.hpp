// What the clients of a buffer reached behind memtool's back share (stray_client, verify_client):
// the session with the pattern kernels, a pattern written over a 4 MiB buffer, and newer buffers
// filled after the hidden one so that under the swap budget it is the first to go.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <initializer_list>

#include "client_session.hpp"

namespace client {

class HiddenBufferClient {
  // First: the session the members below are made in.
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_;

 public:
  static constexpr std::size_t kBytes = std::size_t{4} << 20;

  // Opens the session on the module image at `path` (failures are counted: check g_failures).
  explicit HiddenBufferClient(const char* path) : module_(open_session(path, &device_, &context_)) {}

  // The kernels both clients launch besides pattern_fill, looked up at the start.
  const CUfunction verify = function("pattern_verify");
  const CUfunction fill_indirect = function("pattern_fill_indirect");

  // The module's kernel `name`.
  CUfunction function(const char* name) const {
    CUfunction kernel = nullptr;
    check(cuModuleGetFunction(&kernel, module_, name), name);
    return kernel;
  }

  // One block of one thread on the default stream: the test kernels loop over their words.
  static void launch(CUfunction kernel, void** params) {
    check(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
  }

  // Words of a kBytes buffer, as the kernels take them (an int they read through a pointer).
  int* words() { return &words_; }

  // `key`'s pattern over the kBytes at `buffer` (pattern_fill).
  void fill(CUdeviceptr buffer, unsigned key) {
    void* params[] = {&buffer, &key, &words_};
    launch(fill_, params);
  }

  // Newer buffers, each filled after the hidden one, then all of it waited for.
  void fill_newer() {
    for (CUdeviceptr& other : others_) {
      check(cuMemAlloc(&other, kBytes), "cuMemAlloc other");
      fill(other, static_cast<unsigned>(other));
    }
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  }

  // Frees the newer buffers, then `own`, and releases the context; true when no call failed.
  bool finish(std::initializer_list<CUdeviceptr> own) {
    for (const CUdeviceptr other : others_) check(cuMemFree(other), "cuMemFree");
    for (const CUdeviceptr buffer : own) check(cuMemFree(buffer), "cuMemFree");
    check(cuDevicePrimaryCtxRelease(device_), "cuDevicePrimaryCtxRelease");
    return g_failures == 0;
  }

 private:
  CUfunction fill_ = function("pattern_fill");
  int words_ = static_cast<int>(kBytes / sizeof(unsigned));
  CUdeviceptr others_[6] = {};
};

}  // namespace client
