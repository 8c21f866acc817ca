// Device memory: alignment, capacity and out-of-memory, wrong frees, range checks of copies,
// pitch, pinned host memory, pointer attributes.
#include "fixture.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

using namespace fakecuda_test;

TEST_CASE("cuMemAlloc returns aligned, distinct, usable device memory", "[fakecuda][memory]") {
  driver_ready();
  const std::size_t sizes[] = {1, 100, 513, 4096, std::size_t{1} << 20};
  std::vector<CUdeviceptr> ptrs;
  for (std::size_t size : sizes) {
    CUdeviceptr p = 0;
    CU_REQUIRE_OK(cuMemAlloc(&p, size));
    CHECK(p % 256 == 0);
    std::vector<unsigned char> in(size), out(size, 0);
    for (std::size_t i = 0; i < size; ++i) {
      in[i] = static_cast<unsigned char>(i * 7 + size);
    }
    CU_REQUIRE_OK(cuMemcpyHtoD(p, in.data(), size));
    CU_REQUIRE_OK(cuMemcpyDtoH(out.data(), p, size));
    CHECK(in == out);
    ptrs.push_back(p);
  }
  for (std::size_t i = 0; i < ptrs.size(); ++i) {
    for (std::size_t j = i + 1; j < ptrs.size(); ++j) {
      const bool disjoint = ptrs[i] + sizes[i] <= ptrs[j] || ptrs[j] + sizes[j] <= ptrs[i];
      CHECK(disjoint);
    }
  }
  for (CUdeviceptr p : ptrs) {
    CU_CHECK_IS(cuMemFree(p), CUDA_SUCCESS);
  }
}

TEST_CASE("capacity is real: cuMemGetInfo tells the truth and OOM is returned", "[fakecuda][memory]") {
  driver_ready();
  size_t free0 = 0;
  size_t total = 0;
  CU_REQUIRE_OK(cuMemGetInfo(&free0, &total));
  CHECK(total == kTestCapacity);
  size_t device_total = 0;
  CU_REQUIRE_OK(cuDeviceTotalMem(&device_total, 0));
  CHECK(device_total == kTestCapacity);

  CUdeviceptr small = 0;
  CU_REQUIRE_OK(cuMemAlloc(&small, 1000));  // charged as 1024: the 512-byte granule
  size_t free1 = 0;
  CU_REQUIRE_OK(cuMemGetInfo(&free1, &total));
  CHECK(free0 - free1 == 1024);

  const fakecuda_stats before = stats_now();
  CUdeviceptr big = 0;
  CU_REQUIRE_OK(cuMemAlloc(&big, free1 - (std::size_t{4} << 20)));
  CUdeviceptr more = 0;
  CU_CHECK_IS(cuMemAlloc(&more, std::size_t{8} << 20), CUDA_ERROR_OUT_OF_MEMORY);
  CU_CHECK_IS(cuMemAlloc(&more, kTestCapacity + 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(stats_now().oom_errors - before.oom_errors == 2);
  CHECK(stats_now().peak_bytes_in_use >= kTestCapacity - free0 + 1024 + free1 - (std::size_t{4} << 20));
  CU_CHECK_IS(cuMemAlloc(&more, std::size_t{2} << 20), CUDA_SUCCESS);  // what is left still fits

  CU_CHECK_IS(cuMemFree(big), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(more), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(small), CUDA_SUCCESS);
  size_t free2 = 0;
  CU_REQUIRE_OK(cuMemGetInfo(&free2, &total));
  CHECK(free2 == free0);
}

TEST_CASE("wrong allocation calls get the driver's error codes", "[fakecuda][memory][errors]") {
  driver_ready();
  CUdeviceptr p = 0;
  CU_CHECK_IS(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemAlloc(nullptr, 64), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemAlloc(&p, 4096));
  CU_CHECK_IS(cuMemFree(p + 16), CUDA_ERROR_INVALID_VALUE);  // not the start of an allocation
  int on_stack = 0;
  CU_CHECK_IS(cuMemFree(reinterpret_cast<CUdeviceptr>(&on_stack)), CUDA_ERROR_INVALID_VALUE);
  const fakecuda_stats before = stats_now();
  CU_CHECK_IS(cuMemFree(p), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);  // double free
  CHECK(stats_now().frees - before.frees == 1);
}

TEST_CASE("copies and memsets outside allocations are refused", "[fakecuda][memory][errors]") {
  driver_ready();
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAlloc(&p, 1000));
  std::vector<unsigned char> host(2000, 1);
  CU_CHECK_IS(cuMemcpyHtoD(p, host.data(), 1000), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemcpyHtoD(p, host.data(), 1001), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemcpyHtoD(p + 999, host.data(), 2), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemcpyDtoH(host.data(), p + 500, 501), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemcpyHtoD(p, nullptr, 10), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemsetD32(p, 7, 251), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemsetD32(p + 2, 7, 2), CUDA_ERROR_INVALID_VALUE);  // misaligned for 32-bit words
  CU_CHECK_IS(cuMemsetD16(p + 1, 7, 2), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemsetD32(p, 0x01020304u, 250), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemcpyDtoH(host.data(), p, 8), CUDA_SUCCESS);
  std::uint32_t word = 0;
  std::memcpy(&word, host.data() + 4, 4);
  CHECK(word == 0x01020304u);
  CU_CHECK_IS(cuMemFree(p), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemcpyDtoH(host.data(), p, 8), CUDA_ERROR_INVALID_VALUE);  // freed
  CU_CHECK_IS(cuMemsetD8(p, 0, 8), CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("cuMemcpy and cuMemcpyDtoD move data with unified addressing", "[fakecuda][memory]") {
  driver_ready();
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CU_REQUIRE_OK(cuMemAlloc(&a, 256));
  CU_REQUIRE_OK(cuMemAlloc(&b, 256));
  std::vector<unsigned char> in(256), out(256, 0);
  for (int i = 0; i < 256; ++i) {
    in[static_cast<std::size_t>(i)] = static_cast<unsigned char>(255 - i);
  }
  const fakecuda_stats before = stats_now();
  CU_REQUIRE_OK(cuMemcpy(a, reinterpret_cast<CUdeviceptr>(in.data()), 256));  // host -> device
  CU_REQUIRE_OK(cuMemcpyDtoD(b, a, 256));
  CU_REQUIRE_OK(cuMemcpy(reinterpret_cast<CUdeviceptr>(out.data()), b, 256));  // device -> host
  CHECK(in == out);
  const fakecuda_stats after = stats_now();
  CHECK(after.bytes_h2d - before.bytes_h2d == 256);
  CHECK(after.bytes_d2d - before.bytes_d2d == 256);
  CHECK(after.bytes_d2h - before.bytes_d2h == 256);
  CHECK(after.copies - before.copies == 3);
  CU_CHECK_IS(cuMemFree(a), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(b), CUDA_SUCCESS);
}

TEST_CASE("cuMemAllocPitch pads rows to the pitch", "[fakecuda][memory]") {
  driver_ready();
  CUdeviceptr p = 0;
  size_t pitch = 0;
  CU_REQUIRE_OK(cuMemAllocPitch(&p, &pitch, 1000, 3, 4));
  CHECK(pitch == 1024);
  CUdeviceptr base = 0;
  size_t size = 0;
  CU_REQUIRE_OK(cuMemGetAddressRange(&base, &size, p + 2000));
  CHECK(base == p);
  CHECK(size == 3072);
  CU_CHECK_IS(cuMemAllocPitch(&p, &pitch, 1000, 3, 3), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemFree(base), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemGetAddressRange(&base, &size, p), CUDA_ERROR_NOT_FOUND);
}

TEST_CASE("pinned and registered host memory", "[fakecuda][memory][host]") {
  driver_ready();
  void* pinned = nullptr;
  CU_REQUIRE_OK(cuMemAllocHost(&pinned, 10000));
  unsigned type = 0;
  CU_REQUIRE_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(pinned)));
  CHECK(type == CU_MEMORYTYPE_HOST);
  CUdeviceptr mapped = 0;
  CU_REQUIRE_OK(cuMemHostGetDevicePointer(&mapped, pinned, 0));
  CHECK(mapped == reinterpret_cast<CUdeviceptr>(pinned));
  CU_CHECK_IS(cuMemsetD8(mapped, 0x5a, 10000), CUDA_SUCCESS);  // device-accessible; waits for completion
  CHECK(static_cast<unsigned char*>(pinned)[9999] == 0x5a);
  CU_CHECK_IS(cuMemFreeHost(pinned), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);

  std::vector<char> user(1 << 16);
  CU_CHECK_IS(cuMemHostRegister(user.data(), user.size(), 0), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemHostRegister(user.data() + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CU_CHECK_IS(cuMemFreeHost(user.data()), CUDA_ERROR_INVALID_VALUE);  // registered, not allocated by us
  CU_CHECK_IS(cuMemHostUnregister(user.data()), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemHostUnregister(user.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

TEST_CASE("pointer attributes describe allocations", "[fakecuda][memory][attributes]") {
  driver_ready();
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CU_REQUIRE_OK(cuMemAlloc(&a, 5000));
  CU_REQUIRE_OK(cuMemAlloc(&b, 64));
  unsigned type = 0;
  CU_REQUIRE_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 100));
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  CUdeviceptr start = 0;
  size_t size = 0;
  CU_REQUIRE_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 4999));
  CU_REQUIRE_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 4999));
  CHECK(start == a);
  CHECK(size == 5000);
  bool managed = true;
  CU_REQUIRE_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, a));
  CHECK_FALSE(managed);
  unsigned long long id_a = 0;
  unsigned long long id_b = 0;
  CU_REQUIRE_OK(cuPointerGetAttribute(&id_a, CU_POINTER_ATTRIBUTE_BUFFER_ID, a));
  CU_REQUIRE_OK(cuPointerGetAttribute(&id_b, CU_POINTER_ATTRIBUTE_BUFFER_ID, b));
  CHECK(id_a != id_b);
  void* host = nullptr;
  CU_CHECK_IS(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, a), CUDA_ERROR_INVALID_VALUE);
  CUcontext ctx = nullptr;
  CUcontext current = nullptr;
  CU_REQUIRE_OK(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, a));
  CU_REQUIRE_OK(cuCtxGetCurrent(&current));
  CHECK(ctx == current);

  int on_stack = 0;
  const auto unknown = reinterpret_cast<CUdeviceptr>(&on_stack);
  CU_CHECK_IS(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, unknown), CUDA_ERROR_INVALID_VALUE);
  // cuPointerGetAttributes reports "nothing" for unknown pointers instead of failing.
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  type = 99;
  size = 99;
  void* data[] = {&type, &size};
  CU_CHECK_IS(cuPointerGetAttributes(2, attrs, data, unknown), CUDA_SUCCESS);
  CHECK(type == 0);
  CHECK(size == 0);
  CU_CHECK_IS(cuPointerGetAttributes(2, attrs, data, b), CUDA_SUCCESS);
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  CHECK(size == 64);
  CU_CHECK_IS(cuMemFree(a), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(b), CUDA_SUCCESS);
  CU_CHECK_IS(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a), CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("pitched 2D/3D copies and 2D memsets touch exactly their rows", "[fakecuda][memory][2d]") {
  driver_ready();
  CUdeviceptr d = 0;
  size_t pitch = 0;
  CU_REQUIRE_OK(cuMemAllocPitch(&d, &pitch, 40, 6, 4));  // 6 rows of 40 bytes, 512 bytes apart
  REQUIRE(pitch == 512);
  CU_REQUIRE_OK(cuMemsetD8(d, 0xee, pitch * 6));
  CU_REQUIRE_OK(cuMemsetD2D32(d + 8, pitch, 0x11223344u, 4, 3));  // rows 0-2, bytes 8..23

  std::vector<unsigned char> rows(10 * 16);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i] = static_cast<unsigned char>(i);
  }
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = rows.data();
  up.srcPitch = 16;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = d;
  up.dstXInBytes = 24;
  up.dstY = 3;
  up.dstPitch = pitch;
  up.WidthInBytes = 16;
  up.Height = 3;  // host rows 0-2 -> device rows 3-5, bytes 24..39
  CU_REQUIRE_OK(cuMemcpy2D(&up));

  std::vector<unsigned char> all(pitch * 6);
  CU_REQUIRE_OK(cuMemcpyDtoH(all.data(), d, all.size()));
  CHECK(all[7] == 0xee);
  CHECK(all[8] == 0x44);  // little-endian 0x11223344
  CHECK(all[2 * pitch + 23] == 0x11);
  CHECK(all[2 * pitch + 24] == 0xee);
  CHECK(all[3 * pitch + 8] == 0xee);  // the memset stopped after 3 rows
  CHECK(all[3 * pitch + 24] == 0);
  CHECK(all[5 * pitch + 24 + 15] == 2 * 16 + 15);
  CHECK(all[5 * pitch + 40] == 0xee);

  // 3D: two slices of two rows of the device layout back into a dense host block.
  std::vector<unsigned char> dense(2 * 2 * 16, 0);
  CUDA_MEMCPY3D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = d;
  down.srcXInBytes = 24;
  down.srcY = 0;
  down.srcZ = 1;  // slice 1 starts at row 3
  down.srcPitch = pitch;
  down.srcHeight = 3;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = dense.data();
  down.dstPitch = 16;
  down.dstHeight = 2;
  down.WidthInBytes = 16;
  down.Height = 2;
  down.Depth = 1;
  CU_REQUIRE_OK(cuMemcpy3D(&down));
  CHECK(dense[0] == 0);
  CHECK(dense[31] == 31);

  CUDA_MEMCPY2D bad = up;
  bad.dstPitch = 8;  // rows would overlap
  CU_CHECK_IS(cuMemcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.Height = 4;  // the 7th row is outside the allocation
  CU_CHECK_IS(cuMemcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  CU_CHECK_IS(cuMemcpy2D(&bad), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemsetD2D8(d, 16, 1, 32, 2), CUDA_ERROR_INVALID_VALUE);  // pitch below width

  // Peer copies between contexts of the one device.
  CUcontext ctx = nullptr;
  CU_REQUIRE_OK(cuCtxGetCurrent(&ctx));
  CUdeviceptr e = 0;
  CU_REQUIRE_OK(cuMemAlloc(&e, 64));
  CU_REQUIRE_OK(cuMemcpyPeer(e, ctx, d + 3 * pitch + 24, ctx, 16));
  unsigned char peer[16] = {};
  CU_REQUIRE_OK(cuMemcpyDtoH(peer, e, 16));
  CHECK(peer[15] == 15);
  int bogus = 0;
  CU_CHECK_IS(cuMemcpyPeer(e, reinterpret_cast<CUcontext>(&bogus), d, ctx, 16), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxSynchronize_v2(ctx), CUDA_SUCCESS);
  CU_CHECK_IS(cuGraphLaunch(nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);  // no graphs exist here
  CU_CHECK_IS(cuMemFree(d), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(e), CUDA_SUCCESS);
}
