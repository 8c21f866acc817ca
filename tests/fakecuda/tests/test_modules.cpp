// Modules, libraries and launches: loading fake module images, unknown kernels, parameter layout
// queries, the kernelParams and `extra` launch forms, launch configuration checks.
#include "fixture.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace fakecuda_test;

namespace {

std::vector<float> read_floats(CUdeviceptr p, size_t n) {
  std::vector<float> out(n);
  REQUIRE(cuMemcpyDtoH(out.data(), p, n * sizeof(float)) == CUDA_SUCCESS);
  return out;
}

}  // namespace

TEST_CASE("module images load kernel objects; bad images are refused", "[fakecuda][modules]") {
  driver_ready();
  CUmodule m = nullptr;
  CU_CHECK_IS(cuModuleLoadData(&m,
                               "\x7f"
                               "ELF not a fake module"),
              CUDA_ERROR_INVALID_IMAGE);
  CU_CHECK_IS(cuModuleLoadData(&m, nullptr), CUDA_ERROR_INVALID_VALUE);
  const std::string missing = module_image("/nonexistent/kernels.so");
  CU_CHECK_IS(cuModuleLoadData(&m, missing.c_str()), CUDA_ERROR_FILE_NOT_FOUND);
  const std::string corrupt = module_image(FAKECUDA_BAD_KERNELS);
  CU_CHECK_IS(cuModuleLoadData(&m, corrupt.c_str()), CUDA_ERROR_INVALID_IMAGE);
  CU_CHECK_IS(cuModuleLoad(&m, "/nonexistent/module.fatbin"), CUDA_ERROR_FILE_NOT_FOUND);

  // cuModuleLoad reads the same image from a file.
  char path[] = "/tmp/fakecuda-module-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string image = module_image(FAKECUDA_TEST_KERNELS);
  REQUIRE(write(fd, image.data(), image.size()) == static_cast<ssize_t>(image.size()));
  close(fd);
  CU_REQUIRE_OK(cuModuleLoad(&m, path));
  std::remove(path);
  CUfunction f = nullptr;
  CU_CHECK_IS(cuModuleGetFunction(&f, m, "axpy"), CUDA_SUCCESS);
  CU_CHECK_IS(cuModuleGetFunction(&f, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  unsigned count = 0;
  CU_REQUIRE_OK(cuModuleGetFunctionCount(&count, m));
  CHECK(count == 6);
  CU_CHECK_IS(cuModuleUnload(m), CUDA_SUCCESS);
  CU_CHECK_IS(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuModuleGetFunction(&f, m, "axpy"), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("parameter layouts and names come from the registered table", "[fakecuda][modules][params]") {
  driver_ready();
  TestModule module;
  const CUfunction axpy = module.get("axpy");
  const size_t expected_offsets[] = {0, 8, 16, 24};
  const size_t expected_sizes[] = {4, 8, 8, 4};
  for (size_t i = 0; i < 4; ++i) {
    size_t offset = 99;
    size_t size = 99;
    CU_REQUIRE_OK(cuFuncGetParamInfo(axpy, i, &offset, &size));
    CHECK(offset == expected_offsets[i]);
    CHECK(size == expected_sizes[i]);
  }
  size_t offset = 0;
  size_t size = 0;
  CU_CHECK_IS(cuFuncGetParamInfo(axpy, 4, &offset, &size), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuFuncGetParamInfo(module.get("no_params"), 0, &offset, &size), CUDA_ERROR_INVALID_VALUE);
  const char* name = nullptr;
  CU_REQUIRE_OK(cuFuncGetName(&name, axpy));
  CHECK(std::string(name) == "axpy");
  CUmodule owner = nullptr;
  CU_REQUIRE_OK(cuFuncGetModule(&owner, axpy));
  CHECK(owner == module.module);
  int threads = 0;
  CU_REQUIRE_OK(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, axpy));
  CHECK(threads == 1024);
}

TEST_CASE("kernelParams and extra-buffer launches run the host function", "[fakecuda][modules][launch]") {
  driver_ready();
  TestModule module;
  const CUfunction axpy = module.get("axpy");
  const int n = 100;
  CUdeviceptr x = 0;
  CUdeviceptr y = 0;
  CU_REQUIRE_OK(cuMemAlloc(&x, n * sizeof(float)));
  CU_REQUIRE_OK(cuMemAlloc(&y, n * sizeof(float)));
  std::vector<float> xs(n), ys(n);
  for (int i = 0; i < n; ++i) {
    xs[static_cast<size_t>(i)] = static_cast<float>(i);
    ys[static_cast<size_t>(i)] = 1.0f;
  }
  CU_REQUIRE_OK(cuMemcpyHtoD(x, xs.data(), n * sizeof(float)));
  CU_REQUIRE_OK(cuMemcpyHtoD(y, ys.data(), n * sizeof(float)));

  float alpha = 2.0f;
  int count = n;
  void* params[] = {&alpha, &x, &y, &count};
  CU_REQUIRE_OK(cuLaunchKernel(axpy, 1, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
  std::vector<float> out = read_floats(y, n);
  CHECK(out[0] == 1.0f);
  CHECK(out[99] == 199.0f);

  // The same call packed in one buffer at the kernel's offsets.
  unsigned char packed[28] = {};
  alpha = 0.5f;
  std::memcpy(packed + 0, &alpha, 4);
  std::memcpy(packed + 8, &x, 8);
  std::memcpy(packed + 16, &y, 8);
  std::memcpy(packed + 24, &count, 4);
  size_t packed_size = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                   CU_LAUNCH_PARAM_END};
  CU_REQUIRE_OK(cuLaunchKernel(axpy, 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, extra));
  out = read_floats(y, n);
  CHECK(out[99] == 199.0f + 0.5f * 99.0f);

  // Arguments are copied at launch: changing them afterwards changes nothing.
  alpha = 1.0f;
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  {
    Gate gate;
    gate.hold(s);
    CU_REQUIRE_OK(cuLaunchKernel(axpy, 1, 1, 1, 128, 1, 1, 0, s, params, nullptr));
    alpha = 1000.0f;
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  out = read_floats(y, n);
  CHECK(out[1] == 1.0f + 2.0f + 0.5f + 1.0f);

  size_t short_size = 20;
  void* short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &short_size,
                         CU_LAUNCH_PARAM_END};
  CU_CHECK_IS(cuLaunchKernel(axpy, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, short_extra), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLaunchKernel(axpy, 1, 1, 1, 1, 1, 1, 0, nullptr, params, extra), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLaunchKernel(axpy, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLaunchKernel(module.get("no_params"), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(x), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(y), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_CASE("launch configurations are checked and passed to the kernel", "[fakecuda][modules][launch]") {
  driver_ready();
  TestModule module;
  const CUfunction shape = module.get("launch_shape");
  CUdeviceptr d = 0;
  CU_REQUIRE_OK(cuMemAlloc(&d, 7 * sizeof(unsigned)));
  void* params[] = {&d};
  CU_REQUIRE_OK(cuLaunchKernel(shape, 3, 2, 1, 64, 2, 1, 128, nullptr, params, nullptr));
  unsigned dims[7] = {};
  CU_REQUIRE_OK(cuMemcpyDtoH(dims, d, sizeof dims));
  const unsigned expected[7] = {3, 2, 1, 64, 2, 1, 128};
  CHECK(std::memcmp(dims, expected, sizeof dims) == 0);

  CU_CHECK_IS(cuLaunchKernel(shape, 1, 1, 1, 2048, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLaunchKernel(shape, 0, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLaunchKernel(shape, 1, 70000, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLaunchKernel(shape, 1, 1, 1, 32, 1, 1, 100000, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuFuncSetAttribute(shape, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
  CU_CHECK_IS(cuLaunchKernel(shape, 1, 1, 1, 32, 1, 1, 100000, nullptr, params, nullptr), CUDA_SUCCESS);
  int bogus_stream = 0;
  CU_CHECK_IS(cuLaunchKernel(shape, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(&bogus_stream), params, nullptr),
              CUDA_ERROR_INVALID_HANDLE);

  CUlaunchConfig config{};
  config.gridDimX = 5;
  config.gridDimY = 1;
  config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  CU_REQUIRE_OK(cuLaunchKernelEx(&config, shape, params, nullptr));
  CU_REQUIRE_OK(cuMemcpyDtoH(dims, d, sizeof dims));
  CHECK(dims[0] == 5);
  CU_CHECK_IS(cuLaunchKernelEx(nullptr, shape, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuLaunchCooperativeKernel(shape, 4, 1, 1, 32, 1, 1, 0, nullptr, params), CUDA_SUCCESS);
  CU_CHECK_IS(cuLaunchCooperativeKernel(shape, 100000, 1, 1, 1024, 1, 1, 0, nullptr, params),
              CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  CU_REQUIRE_OK(cuCtxSynchronize());
  CU_CHECK_IS(cuMemFree(d), CUDA_SUCCESS);
}

TEST_CASE("the cuLibrary family: kernels usable as functions", "[fakecuda][modules][library]") {
  driver_ready();
  const std::string image = module_image(FAKECUDA_TEST_KERNELS);
  CUlibrary lib = nullptr;
  CU_REQUIRE_OK(cuLibraryLoadData(&lib, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel kernel = nullptr;
  CU_REQUIRE_OK(cuLibraryGetKernel(&kernel, lib, "fill_u32"));
  CU_CHECK_IS(cuLibraryGetKernel(&kernel, lib, "missing"), CUDA_ERROR_NOT_FOUND);
  CU_REQUIRE_OK(cuLibraryGetKernel(&kernel, lib, "fill_u32"));
  const char* name = nullptr;
  CU_REQUIRE_OK(cuKernelGetName(&name, kernel));
  CHECK(std::string(name) == "fill_u32");
  size_t offset = 0;
  size_t size = 0;
  CU_REQUIRE_OK(cuKernelGetParamInfo(kernel, 2, &offset, &size));
  CHECK(offset == 12);
  CHECK(size == 4);
  CUfunction f = nullptr;
  CU_REQUIRE_OK(cuKernelGetFunction(&f, kernel));
  CUdeviceptr d = 0;
  CU_REQUIRE_OK(cuMemAlloc(&d, 16 * sizeof(unsigned)));
  unsigned value = 0x1234;
  unsigned n = 16;
  void* params[] = {&d, &value, &n};
  CU_REQUIRE_OK(cuLaunchKernel(f, 1, 1, 1, 16, 1, 1, 0, nullptr, params, nullptr));
  value = 0x5678;
  n = 8;
  // A CUkernel stands wherever a CUfunction is accepted.
  CU_REQUIRE_OK(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 1, 1, 1, 16, 1, 1, 0, nullptr, params, nullptr));
  unsigned out[16] = {};
  CU_REQUIRE_OK(cuMemcpyDtoH(out, d, sizeof out));
  CHECK(out[0] == 0x5678);
  CHECK(out[15] == 0x1234);
  CUmodule as_module = nullptr;
  CU_REQUIRE_OK(cuLibraryGetModule(&as_module, lib));
  CU_CHECK_IS(cuModuleGetFunction(&f, as_module, "axpy"), CUDA_SUCCESS);
  CU_CHECK_IS(cuModuleUnload(as_module), CUDA_ERROR_INVALID_HANDLE);  // a library unloads as a library
  CU_CHECK_IS(cuLibraryUnload(lib), CUDA_SUCCESS);
  CU_CHECK_IS(cuKernelGetName(&name, kernel), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuMemFree(d), CUDA_SUCCESS);
}
