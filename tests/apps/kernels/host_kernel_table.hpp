// Builds fakecuda_kernel_desc entries from a host function's C++ signature: the trampoline that
// unpacks cuLaunchKernel's kernelParams into typed arguments, and the parameter offsets and sizes
// (natural alignment, in order — the layout nvcc gives the same extern "C" __global__ signature,
// which is what cuFuncGetParamInfo reports on a real GPU).
#pragma once

#include <fakecuda/kernel_abi.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <utility>

namespace host_kernels {

template <class... Params>
struct ParamLayout {
  static constexpr unsigned count = sizeof...(Params);
  static constexpr std::array<unsigned, count> sizes{static_cast<unsigned>(sizeof(Params))...};
  static constexpr std::array<unsigned, count> offsets = [] {
    constexpr std::array<unsigned, count> alignments{static_cast<unsigned>(alignof(Params))...};
    std::array<unsigned, count> result{};
    unsigned at = 0;
    for (std::size_t i = 0; i < count; ++i) {
      at = (at + alignments[i] - 1) / alignments[i] * alignments[i];
      result[i] = at;
      at += sizes[i];
    }
    return result;
  }();
};

template <class T>
T load_param(const void* slot) {
  T value;
  std::memcpy(&value, slot, sizeof value);
  return value;
}

template <auto Function>
struct HostKernel;

template <class... Params, void (*Function)(Params...)>
struct HostKernel<Function> {
  using Layout = ParamLayout<Params...>;

  static void launch(void** params, const fakecuda_launch_dims* /*dims: host twins loop over all*/) {
    call(params, std::index_sequence_for<Params...>{});
  }

  static constexpr fakecuda_kernel_desc describe(const char* name) {
    return fakecuda_kernel_desc{name, &launch, Layout::count, Layout::offsets.data(), Layout::sizes.data()};
  }

 private:
  template <std::size_t... I>
  static void call(void** params, std::index_sequence<I...>) {
    Function(load_param<Params>(params[I])...);
  }
};

}  // namespace host_kernels

// One table entry: the host function host_kernels::NAME exported under the kernel name "NAME".
#define HOST_KERNEL_ENTRY(name) ::host_kernels::HostKernel<&::host_kernels::name>::describe(#name)
