// Fake driver introspection for recorder tests: kernels with a name and a parameter layout,
// addressed by made-up CUfunction / CUkernel handles, and call counters.
#pragma once

#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "memtool/interpose/recorder.hpp"

namespace memtool::interpose::testing {

struct FakeKernel {
  std::string name;
  std::vector<std::pair<size_t, size_t>> params;  // offset, size
  bool is_cukernel = false;                       // answers only the cuKernel* queries
};

inline std::map<std::uintptr_t, FakeKernel>& fake_kernels() {
  static std::map<std::uintptr_t, FakeKernel> kernels;
  return kernels;
}
inline std::atomic<int>& param_queries() {
  static std::atomic<int> count{0};
  return count;
}

inline CUresult fake_param_info(std::uintptr_t handle, bool as_kernel, size_t i, size_t* offset, size_t* size) {
  ++param_queries();
  const auto it = fake_kernels().find(handle);
  if (it == fake_kernels().end() || it->second.is_cukernel != as_kernel) return CUDA_ERROR_INVALID_HANDLE;
  if (i >= it->second.params.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = it->second.params[i].first;
  *size = it->second.params[i].second;
  return CUDA_SUCCESS;
}

inline DriverQueries fake_queries() {
  DriverQueries q;
  q.func_get_param_info = [](CUfunction f, size_t i, size_t* o, size_t* s) {
    return fake_param_info(reinterpret_cast<std::uintptr_t>(f), false, i, o, s);
  };
  q.kernel_get_param_info = [](CUkernel k, size_t i, size_t* o, size_t* s) {
    return fake_param_info(reinterpret_cast<std::uintptr_t>(k), true, i, o, s);
  };
  q.func_get_name = [](const char** name, CUfunction f) {
    const auto it = fake_kernels().find(reinterpret_cast<std::uintptr_t>(f));
    if (it == fake_kernels().end() || it->second.is_cukernel) return CUDA_ERROR_INVALID_HANDLE;
    *name = it->second.name.c_str();
    return CUDA_SUCCESS;
  };
  q.kernel_get_name = [](const char** name, CUkernel k) {
    const auto it = fake_kernels().find(reinterpret_cast<std::uintptr_t>(k));
    if (it == fake_kernels().end() || !it->second.is_cukernel) return CUDA_ERROR_INVALID_HANDLE;
    *name = it->second.name.c_str();
    return CUDA_SUCCESS;
  };
  return q;
}

inline CUfunction handle(std::uintptr_t value) { return reinterpret_cast<CUfunction>(value); }

// Kernels every test may use: gemm(float* a, float* b, float* c, int n) and
// axpy(struct {float* x; float* y;} pair, float alpha), and a CUkernel "relu(float*)".
inline void install_fake_kernels() {
  fake_kernels()[0x100] = {"gemm", {{0, 8}, {8, 8}, {16, 8}, {24, 4}}, false};
  fake_kernels()[0x200] = {"axpy", {{0, 16}, {16, 4}}, false};
  fake_kernels()[0x300] = {"relu", {{0, 8}}, true};
  fake_kernels()[0x400] = {"adam_step", {{0, 8}}, false};
}

}  // namespace memtool::interpose::testing
