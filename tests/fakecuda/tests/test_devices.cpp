// Several devices: identity, capacities and address ranges, contexts per device, memory info and
// stats per device, peer access and the faults a kernel takes touching another device's memory
// without it, copies across devices, which streams work may go to, and the environment grammar.
#include "devices_fixture.hpp"
#include "spawn.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace fakecuda_test;

namespace {

int ordinal_of(CUdeviceptr p) {
  int ordinal = -1;
  REQUIRE(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) == CUDA_SUCCESS);
  return ordinal;
}

std::vector<unsigned> read_words(CUdeviceptr p, std::size_t n) {
  std::vector<unsigned> host(n, 0);
  REQUIRE(cuMemcpyDtoH(host.data(), p, n * sizeof(unsigned)) == CUDA_SUCCESS);
  return host;
}

// Whether all n words at p are `value` (a failure names the first that is not, not all n).
bool words_are(CUdeviceptr p, std::size_t n, unsigned value) {
  const std::vector<unsigned> host = read_words(p, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (host[i] != value) {
      UNSCOPED_INFO("word " << i << " is " << host[i] << ", not " << value);
      return false;
    }
  }
  return true;
}

// fill_u32(p, value, n) on `stream`, then that stream synchronised: the fault status, if any.
CUresult fill_and_sync(CUfunction fill, CUdeviceptr p, unsigned value, unsigned n, CUstream stream) {
  void* args[] = {&p, &value, &n};
  const CUresult launched = cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, stream, args, nullptr);
  if (launched != CUDA_SUCCESS) {
    return launched;
  }
  return cuStreamSynchronize(stream);
}

CUmemAllocationProp vmm_prop(int dev) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  return prop;
}

CUresult grant(CUdeviceptr p, std::size_t size, int dev, CUmemAccess_flags flags) {
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = dev;
  desc.flags = flags;
  return cuMemSetAccess(p, size, &desc, 1);
}

}  // namespace

TEST_CASE("two devices: count, identity and capacity", "[fakecuda][devices]") {
  two_devices_ready();
  int count = 0;
  CU_REQUIRE_OK(cuDeviceGetCount(&count));
  CHECK(count == 2);
  CUdevice dev = -1;
  CU_REQUIRE_OK(cuDeviceGet(&dev, 1));
  CHECK(dev == 1);
  CU_CHECK_IS(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
  size_t total0 = 0;
  size_t total1 = 0;
  CU_REQUIRE_OK(cuDeviceTotalMem(&total0, 0));
  CU_REQUIRE_OK(cuDeviceTotalMem(&total1, 1));
  CHECK(total0 == kDevice0Capacity);
  CHECK(total1 == kDevice1Capacity);
  CU_CHECK_IS(cuDeviceTotalMem(&total1, 2), CUDA_ERROR_INVALID_DEVICE);
  CUuuid uuid0{};
  CUuuid uuid1{};
  CU_REQUIRE_OK(cuDeviceGetUuid(&uuid0, 0));
  CU_REQUIRE_OK(cuDeviceGetUuid(&uuid1, 1));
  CHECK(std::memcmp(uuid0.bytes, uuid1.bytes, sizeof uuid0.bytes) != 0);
  char name[64];
  CU_REQUIRE_OK(cuDeviceGetName(name, sizeof name, 1));
  CHECK(std::string(name).find("fakecuda") != std::string::npos);
  char bus[32];
  CU_REQUIRE_OK(cuDeviceGetPCIBusId(bus, sizeof bus, 1));
  CHECK(std::string(bus) == "0000:02:00.0");
  int pci_bus = 0;
  CU_REQUIRE_OK(cuDeviceGetAttribute(&pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1));
  CHECK(pci_bus == 2);
  CUdevice by_bus = -1;
  CU_REQUIRE_OK(cuDeviceGetByPCIBusId(&by_bus, "0000:02:00.0"));
  CHECK(by_bus == 1);
  CU_REQUIRE_OK(cuDeviceGetByPCIBusId(&by_bus, "01:00.0"));
  CHECK(by_bus == 0);
  CU_CHECK_IS(cuDeviceGetByPCIBusId(&by_bus, "0000:09:00.0"), CUDA_ERROR_INVALID_DEVICE);
  CU_CHECK_IS(cuDeviceGetByPCIBusId(&by_bus, "not a bus id"), CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("each device has its own address range, capacity and memory info", "[fakecuda][devices]") {
  CUcontext ctx0 = two_devices_ready(0);
  size_t free0 = 0;
  size_t total = 0;
  CU_REQUIRE_OK(cuMemGetInfo(&free0, &total));
  CHECK(total == kDevice0Capacity);
  DeviceBuffer on0(8 * kMiB);
  CUcontext ctx1 = two_devices_ready(1);
  size_t free1 = 0;
  CU_REQUIRE_OK(cuMemGetInfo(&free1, &total));
  CHECK(total == kDevice1Capacity);
  const fakecuda_device_stats before1 = device_stats(1);
  const fakecuda_device_stats before0 = device_stats(0);
  {
    DeviceBuffer on1(16 * kMiB);
    // A pointer tells its device and context (unified addressing).
    CHECK(ordinal_of(on0.get()) == 0);
    CHECK(ordinal_of(on1.get()) == 1);
    CUcontext owner = nullptr;
    CU_REQUIRE_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, on1.get()));
    CHECK(owner == ctx1);
    CU_REQUIRE_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, on0.get()));
    CHECK(owner == ctx0);
    // Only device 1 pays for device 1's allocation.
    size_t free_after = 0;
    CU_REQUIRE_OK(cuMemGetInfo(&free_after, &total));
    CHECK(free1 - free_after == 16 * kMiB);
    CHECK(device_stats(1).bytes_in_use - before1.bytes_in_use == 16 * kMiB);
    CHECK(device_stats(0).bytes_in_use == before0.bytes_in_use);
    CHECK(device_stats(1).capacity_bytes == kDevice1Capacity);
    // The address ranges are disjoint: no device-1 allocation falls inside device 0's.
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_REQUIRE_OK(cuMemGetAddressRange(&base, &size, on1.get() + 100));
    CHECK(base == on1.get());
    CHECK((on1.get() + size <= on0.get() || on0.get() + on0.bytes() <= on1.get()));
  }
  // Out of memory on the small device, while the large one still has room.
  CUdeviceptr big = 0;
  CU_CHECK_IS(cuMemAlloc(&big, 200 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  two_devices_ready(0);
  CU_REQUIRE_OK(cuMemAlloc(&big, 200 * kMiB));
  CHECK(ordinal_of(big) == 0);
  CU_REQUIRE_OK(cuMemFree(big));
  // The totals are the sums over devices.
  const fakecuda_stats totals = stats_now();
  CHECK(totals.capacity_bytes == kDevice0Capacity + kDevice1Capacity);
  CHECK(totals.bytes_in_use == device_stats(0).bytes_in_use + device_stats(1).bytes_in_use);
}

TEST_CASE("the stats JSON holds each device beside the totals", "[fakecuda][devices][stats]") {
  two_devices_ready(1);
  DeviceBuffer on1(4 * kMiB);
  const std::string path = "/tmp/fakecuda-devices-" + std::to_string(getpid()) + ".json";
  REQUIRE(fakecuda_stats_write_json(path.c_str()) == 0);
  std::ifstream in(path);
  const nlohmann::json json = nlohmann::json::parse(in);
  std::remove(path.c_str());
  REQUIRE(json.at("devices").size() == 2);
  CHECK(json.at("devices")[1].at("ordinal") == 1);
  CHECK(json.at("devices")[1].at("capacity_bytes") == kDevice1Capacity);
  CHECK(json.at("devices")[1].at("bytes_in_use").get<std::uint64_t>() >= 4 * kMiB);
  CHECK(json.at("capacity_bytes") == kDevice0Capacity + kDevice1Capacity);
  CHECK(json.at("bytes_in_use").get<std::uint64_t>() ==
        json.at("devices")[0].at("bytes_in_use").get<std::uint64_t>() +
            json.at("devices")[1].at("bytes_in_use").get<std::uint64_t>());
}

TEST_CASE("contexts belong to a device; primary contexts are per device", "[fakecuda][devices][context]") {
  two_devices_ready(0);
  {
    OwnContext own(1);
    CUdevice dev = -1;
    CU_REQUIRE_OK(cuCtxGetDevice(&dev));
    CHECK(dev == 1);
    DeviceBuffer b(4096);
    CHECK(ordinal_of(b.get()) == 1);
    CUcontext owner = nullptr;
    CU_REQUIRE_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, b.get()));
    CHECK(owner == own.get());
  }
  CUcontext p0 = nullptr;
  CUcontext p1 = nullptr;
  CU_REQUIRE_OK(cuDevicePrimaryCtxRetain(&p0, 0));
  CU_REQUIRE_OK(cuDevicePrimaryCtxRetain(&p1, 1));
  CHECK(p0 != p1);
  unsigned flags = 0;
  int active0 = 0;
  int active1 = 0;
  CU_REQUIRE_OK(cuDevicePrimaryCtxRelease(0));
  CU_REQUIRE_OK(cuDevicePrimaryCtxGetState(0, &flags, &active0));
  CU_REQUIRE_OK(cuDevicePrimaryCtxGetState(1, &flags, &active1));
  CHECK(active0 == 0);
  CHECK(active1 == 1);  // device 1's retain is its own
  CU_REQUIRE_OK(cuDevicePrimaryCtxRelease(1));
  CUdevice dev = -1;
  CU_REQUIRE_OK(cuCtxGetDevice_v2(&dev, p1));
  CHECK(dev == 1);
  CU_CHECK_IS(cuDevicePrimaryCtxRetain(&p1, 2), CUDA_ERROR_INVALID_DEVICE);
}

TEST_CASE("peer access: capability, attributes and the documented errors", "[fakecuda][devices][peer]") {
  CUcontext ctx0 = two_devices_ready(0);
  CUcontext ctx1 = two_devices_ready(1);
  two_devices_ready(0);
  int can = -1;
  CU_REQUIRE_OK(cuDeviceCanAccessPeer(&can, 0, 1));
  CHECK(can == 1);
  CU_REQUIRE_OK(cuDeviceCanAccessPeer(&can, 0, 0));
  CHECK(can == 0);
  CU_CHECK_IS(cuDeviceCanAccessPeer(&can, 0, 2), CUDA_ERROR_INVALID_DEVICE);
  int value = -1;
  CU_REQUIRE_OK(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1));
  CHECK(value == 1);
  CU_REQUIRE_OK(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED, 1, 0));
  CHECK(value == 0);
  CU_CHECK_IS(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 1, 1),
              CUDA_ERROR_INVALID_DEVICE);
  CU_CHECK_IS(cuDeviceGetP2PAttribute(nullptr, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1),
              CUDA_ERROR_INVALID_VALUE);

  CU_CHECK_IS(cuCtxEnablePeerAccess(ctx1, 1), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuCtxEnablePeerAccess(ctx0, 0), CUDA_ERROR_INVALID_CONTEXT);  // itself
  CU_CHECK_IS(cuCtxEnablePeerAccess(nullptr, 0), CUDA_ERROR_INVALID_CONTEXT);
  CU_CHECK_IS(cuCtxDisablePeerAccess(ctx1), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  CU_REQUIRE_OK(cuCtxEnablePeerAccess(ctx1, 0));
  CU_CHECK_IS(cuCtxEnablePeerAccess(ctx1, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  CU_REQUIRE_OK(cuCtxDisablePeerAccess(ctx1));
  CU_CHECK_IS(cuCtxDisablePeerAccess(ctx1), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  {
    OwnContext other0(0);  // a second context on device 0: not a peer device
    CU_CHECK_IS(cuCtxEnablePeerAccess(ctx0, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  }
  CU_REQUIRE_OK(cuCtxSetCurrent(nullptr));
  CU_CHECK_IS(cuCtxEnablePeerAccess(ctx1, 0), CUDA_ERROR_INVALID_CONTEXT);  // no current context
  CU_CHECK_IS(cuCtxDisablePeerAccess(ctx1), CUDA_ERROR_INVALID_CONTEXT);
  two_devices_ready(0);
}

TEST_CASE("a kernel touching another device's memory faults unless peer access is enabled",
          "[fakecuda][devices][peer][fault]") {
  CUcontext ctx1 = two_devices_ready(1);
  DeviceBuffer on1(64 * sizeof(unsigned));
  CU_REQUIRE_OK(cuMemsetD32(on1.get(), 7, 64));
  TestModule module;
  const CUfunction fill = module.get("fill_u32");
  {
    OwnContext a(0);
    CU_CHECK_IS(fill_and_sync(fill, on1.get(), 1, 64, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
    CU_CHECK_IS(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);  // sticky, as a GPU fault
  }
  two_devices_ready(1);
  CHECK(words_are(on1.get(), 64, 7));  // the kernel never ran
  {
    OwnContext b(0);
    CU_REQUIRE_OK(cuCtxEnablePeerAccess(ctx1, 0));
    CU_CHECK_IS(fill_and_sync(fill, on1.get(), 9, 64, nullptr), CUDA_SUCCESS);
    // Its own device's memory needs no peer access, and pinned host memory is everyone's.
    DeviceBuffer on0(64 * sizeof(unsigned));
    CU_CHECK_IS(fill_and_sync(fill, on0.get(), 3, 64, nullptr), CUDA_SUCCESS);
    PinnedWords pinned(64);
    CUdeviceptr host_side = reinterpret_cast<CUdeviceptr>(pinned.words);
    CU_CHECK_IS(fill_and_sync(fill, host_side, 4, 64, nullptr), CUDA_SUCCESS);
    CHECK(pinned.words[63] == 4);
    CU_REQUIRE_OK(cuCtxDisablePeerAccess(ctx1));
    CU_CHECK_IS(fill_and_sync(fill, on1.get(), 5, 64, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  two_devices_ready(1);
  CHECK(words_are(on1.get(), 64, 9));
  CU_CHECK_IS(cuCtxSynchronize(), CUDA_SUCCESS);  // device 1's own context never faulted
}

TEST_CASE("a VMM mapping's access descriptor decides which devices' kernels reach it",
          "[fakecuda][devices][vmm][fault]") {
  two_devices_ready(1);
  const CUmemAllocationProp prop = vmm_prop(1);
  size_t granularity = 0;
  CU_REQUIRE_OK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle h = 0;
  CU_REQUIRE_OK(cuMemCreate(&h, granularity, &prop, 0));
  CHECK(device_stats(1).bytes_in_use >= granularity);
  CUdeviceptr va = 0;
  CU_REQUIRE_OK(cuMemAddressReserve(&va, granularity, 0, 0, 0));
  CU_REQUIRE_OK(cuMemMap(va, granularity, 0, h, 0));
  CU_REQUIRE_OK(grant(va, granularity, 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  CHECK(ordinal_of(va) == 1);
  unsigned long long flags = 0;
  CUmemLocation where{};
  where.type = CU_MEM_LOCATION_TYPE_DEVICE;
  where.id = 0;
  CU_REQUIRE_OK(cuMemGetAccess(&flags, &where, va));
  CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  where.id = 1;
  CU_REQUIRE_OK(cuMemGetAccess(&flags, &where, va));
  CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  TestModule module;
  const CUfunction fill = module.get("fill_u32");
  {
    OwnContext a(0);
    CU_CHECK_IS(fill_and_sync(fill, va, 1, 64, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  {
    OwnContext b(0);
    CU_REQUIRE_OK(grant(va, granularity, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));  // device 1 keeps its access
    CU_CHECK_IS(fill_and_sync(fill, va, 6, 64, nullptr), CUDA_SUCCESS);
    unsigned attribute = 0;
    CU_REQUIRE_OK(cuPointerGetAttribute(&attribute, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, va));
    CHECK(attribute == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  }
  two_devices_ready(1);
  CHECK(words_are(va, 64, 6));
  CU_REQUIRE_OK(cuMemUnmap(va, granularity));
  CU_REQUIRE_OK(cuMemRelease(h));
  CU_REQUIRE_OK(cuMemAddressFree(va, granularity));
}

TEST_CASE("stream-ordered memory is reached through the pool's access list, not peer access",
          "[fakecuda][devices][pool][fault]") {
  CUcontext ctx1 = two_devices_ready(1);
  CUmemoryPool pool1 = nullptr;
  CU_REQUIRE_OK(cuDeviceGetDefaultMemPool(&pool1, 1));
  CUstream s1 = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&p, 64 * sizeof(unsigned), pool1, s1));
  CU_REQUIRE_OK(cuMemsetD32Async(p, 2, 64, s1));
  CU_REQUIRE_OK(cuStreamSynchronize(s1));
  CHECK(ordinal_of(p) == 1);
  TestModule module;
  const CUfunction fill = module.get("fill_u32");
  {
    OwnContext a(0);
    CU_REQUIRE_OK(cuCtxEnablePeerAccess(ctx1, 0));  // does not extend to pools
    CU_CHECK_IS(fill_and_sync(fill, p, 1, 64, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = 0;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_REQUIRE_OK(cuMemPoolSetAccess(pool1, &desc, 1));
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  CU_REQUIRE_OK(cuMemPoolGetAccess(&flags, pool1, &desc.location));
  CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  {
    OwnContext b(0);
    CU_CHECK_IS(fill_and_sync(fill, p, 8, 64, nullptr), CUDA_SUCCESS);
  }
  two_devices_ready(1);
  CHECK(words_are(p, 64, 8));
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  CU_REQUIRE_OK(cuMemPoolSetAccess(pool1, &desc, 1));
  desc.location.id = 1;
  CU_CHECK_IS(cuMemPoolSetAccess(pool1, &desc, 1), CUDA_ERROR_INVALID_VALUE);  // its own device keeps access
  CU_REQUIRE_OK(cuMemFreeAsync(p, s1));
  CU_REQUIRE_OK(cuStreamDestroy(s1));
  CU_REQUIRE_OK(cuCtxSynchronize());
}

TEST_CASE("managed memory reaches every device, resident where it was last used", "[fakecuda][devices][managed]") {
  two_devices_ready(0);
  CUdeviceptr m = 0;
  CU_REQUIRE_OK(cuMemAllocManaged(&m, 4 * kMiB, CU_MEM_ATTACH_GLOBAL));
  const fakecuda_device_stats d1 = device_stats(1);
  CUmemLocation to1{};
  to1.type = CU_MEM_LOCATION_TYPE_DEVICE;
  to1.id = 1;
  CU_REQUIRE_OK(cuMemPrefetchAsync(m, 4 * kMiB, to1, 0, nullptr));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CHECK(device_stats(1).bytes_in_use - d1.bytes_in_use == 4 * kMiB);
  TestModule module;
  const CUfunction fill = module.get("fill_u32");
  // A device-0 kernel pulls it over: device 1 no longer holds it, device 0 does.
  const fakecuda_device_stats d0 = device_stats(0);
  CU_CHECK_IS(fill_and_sync(fill, m, 11, 64, nullptr), CUDA_SUCCESS);
  CHECK(device_stats(1).bytes_in_use == d1.bytes_in_use);
  CHECK(device_stats(0).bytes_in_use - d0.bytes_in_use == 4 * kMiB);
  CHECK(reinterpret_cast<const unsigned*>(m)[63] == 11);
  int last = -2;
  CU_REQUIRE_OK(cuMemRangeGetAttribute(&last, sizeof last, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 4 * kMiB));
  CHECK(last == 1);
  CU_REQUIRE_OK(cuMemFree(m));
  CHECK(device_stats(0).bytes_in_use == d0.bytes_in_use);
}

TEST_CASE("copies between devices need no peer access", "[fakecuda][devices][copy]") {
  CUcontext ctx0 = two_devices_ready(0);
  DeviceBuffer on0(4096);
  CUcontext ctx1 = two_devices_ready(1);
  DeviceBuffer on1(4096);
  DeviceBuffer also1(4096);
  CU_REQUIRE_OK(cuMemsetD32(on1.get(), 0x11, 1024));
  CU_REQUIRE_OK(cuCtxSynchronize());  // device 1's stream and device 0's are not ordered
  two_devices_ready(0);
  CU_REQUIRE_OK(cuMemcpyDtoD(on0.get(), on1.get(), 4096));  // device 1 to device 0 from device 0
  CHECK(words_are(on0.get(), 1024, 0x11));
  CU_REQUIRE_OK(cuMemsetD32(on0.get(), 0x22, 1024));
  CU_REQUIRE_OK(cuMemcpyPeer(also1.get(), ctx1, on0.get(), ctx0, 4096));
  CHECK(words_are(also1.get(), 1024, 0x22));
  CU_REQUIRE_OK(cuMemsetD32(on0.get(), 0x33, 1024));
  CU_REQUIRE_OK(cuMemcpyPeerAsync(on1.get(), ctx1, on0.get(), ctx0, 4096, nullptr));
  CU_REQUIRE_OK(cuMemcpy(also1.get(), on1.get(), 4096));  // unified addressing: both device 1
  CHECK(words_are(also1.get(), 1024, 0x33));
}

TEST_CASE("work goes to the streams of its context's device", "[fakecuda][devices][streams]") {
  two_devices_ready(1);
  CUstream s1 = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CUevent e1 = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  DeviceBuffer on1(4096);
  CUdevice dev = -1;
  CU_REQUIRE_OK(cuStreamGetDevice(s1, &dev));
  CHECK(dev == 1);
  two_devices_ready(0);
  CU_REQUIRE_OK(cuStreamGetDevice(nullptr, &dev));
  CHECK(dev == 0);
  TestModule module;
  const CUfunction fill = module.get("fill_u32");
  // A launch into another device's stream fails; a copy into it runs there (the programming
  // guide's rules for streams of another device).
  CU_CHECK_IS(fill_and_sync(fill, on1.get(), 1, 16, s1), CUDA_ERROR_INVALID_HANDLE);
  std::vector<unsigned> host(1024, 0x44);
  CU_REQUIRE_OK(cuMemcpyHtoDAsync(on1.get(), host.data(), 4096, s1));
  CU_REQUIRE_OK(cuStreamSynchronize(s1));
  CHECK(read_words(on1.get(), 1024) == host);
  // An event of device 1 recorded on device 0's stream fails; waiting on it from device 0 is fine.
  CU_CHECK_IS(cuEventRecord(e1, nullptr), CUDA_ERROR_INVALID_HANDLE);
  CU_REQUIRE_OK(cuEventRecord(e1, s1));
  CU_CHECK_IS(cuStreamWaitEvent(nullptr, e1, 0), CUDA_SUCCESS);
  CU_CHECK_IS(cuEventSynchronize(e1), CUDA_SUCCESS);
  CUevent e0 = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CU_REQUIRE_OK(cuEventRecord(e0, nullptr));
  CU_REQUIRE_OK(cuEventSynchronize(e0));
  float ms = 0;
  CU_CHECK_IS(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_INVALID_HANDLE);  // two devices' clocks
  CU_REQUIRE_OK(cuEventDestroy(e0));
  CU_REQUIRE_OK(cuEventDestroy(e1));
  CU_REQUIRE_OK(cuStreamDestroy(s1));
}

TEST_CASE("the devices' streams are independent", "[fakecuda][devices][streams]") {
  two_devices_ready(0);
  CUstream blocking0 = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&blocking0, CU_STREAM_DEFAULT));
  Gate gate;
  gate.hold(blocking0);
  // Device 1's legacy stream does not wait for device 0's blocking streams.
  two_devices_ready(1);
  DeviceBuffer on1(4096);
  CU_REQUIRE_OK(cuMemsetD32Async(on1.get(), 5, 1024, nullptr));
  CU_CHECK_IS(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  CHECK(words_are(on1.get(), 1024, 5));
  // Device 0's legacy stream does wait for them.
  two_devices_ready(0);
  CU_CHECK_IS(cuStreamQuery(blocking0), CUDA_ERROR_NOT_READY);
  gate.open();
  CU_REQUIRE_OK(cuStreamSynchronize(nullptr));
  CU_CHECK_IS(cuStreamQuery(blocking0), CUDA_SUCCESS);
  CU_REQUIRE_OK(cuStreamDestroy(blocking0));
}

TEST_CASE("per-thread default streams are per device", "[fakecuda][devices][ptsz]") {
  two_devices_ready(0);
  unsigned long long id0 = 0;
  CU_REQUIRE_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &id0));
  CUdevice dev = -1;
  CU_REQUIRE_OK(cuStreamGetDevice(CU_STREAM_PER_THREAD, &dev));
  CHECK(dev == 0);
  two_devices_ready(1);
  unsigned long long id1 = 0;
  CU_REQUIRE_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &id1));
  CU_REQUIRE_OK(cuStreamGetDevice(CU_STREAM_PER_THREAD, &dev));
  CHECK(dev == 1);
  CHECK(id0 != id1);
  CUcontext owner = nullptr;
  CU_REQUIRE_OK(cuStreamGetCtx(CU_STREAM_PER_THREAD, &owner));
  CUcontext current = nullptr;
  CU_REQUIRE_OK(cuCtxGetCurrent(&current));
  CHECK(owner == current);
}

TEST_CASE("FAKECUDA_DEVICES and FAKECUDA_MEMORY_BYTES: the grammar and its errors", "[fakecuda][devices][env]") {
  const std::string out = "/tmp/fakecuda-devices-child-" + std::to_string(getpid()) + ".txt";
  auto run = [&](const std::vector<std::string>& env) {
    std::remove(out.c_str());
    return run_with_env({FAKECUDA_DEVICES_CHILD}, env, out, "/dev/null");
  };
  CHECK(run({}) == 0);
  CHECK(read_text(out) == "devices 1\ndevice 0 4294967296\n");  // the default: one 4 GiB device
  CHECK(run({"FAKECUDA_DEVICES=3", "FAKECUDA_MEMORY_BYTES=1G"}) == 0);
  CHECK(read_text(out) == "devices 3\ndevice 0 1073741824\ndevice 1 1073741824\ndevice 2 1073741824\n");
  CHECK(run({"FAKECUDA_DEVICES=2", "FAKECUDA_MEMORY_BYTES=1G,512M"}) == 0);
  CHECK(read_text(out) == "devices 2\ndevice 0 1073741824\ndevice 1 536870912\n");
  CHECK(run({"FAKECUDA_MEMORY_BYTES=64M,32M,16M"}) == 0);  // a list alone says how many
  CHECK(read_text(out) == "devices 3\ndevice 0 67108864\ndevice 1 33554432\ndevice 2 16777216\n");
  CHECK(run({"FAKECUDA_DEVICES=0"}) == 1);
  CHECK(run({"FAKECUDA_DEVICES=17"}) == 1);
  CHECK(run({"FAKECUDA_DEVICES=two"}) == 1);
  CHECK(run({"FAKECUDA_DEVICES=3", "FAKECUDA_MEMORY_BYTES=1G,1G"}) == 1);  // a list must match
  CHECK(run({"FAKECUDA_MEMORY_BYTES=1G,,1G"}) == 1);
  CHECK(run({"FAKECUDA_MEMORY_BYTES=1G,lots"}) == 1);
  std::remove(out.c_str());
}

TEST_CASE("under a small file size limit the devices work but their memory cannot be exported",
          "[fakecuda][devices][ipc]") {
  // RLIMIT_FSIZE forbids the shared file behind a device's memory: growing it anyway would raise
  // SIGXFSZ and end the program, so the memory stays private and an IPC export says it cannot map.
  const std::string out = "/tmp/fakecuda-fsize-child-" + std::to_string(getpid()) + ".txt";
  const std::string script = std::string("ulimit -f 8; exec ") + FAKECUDA_DEVICES_CHILD + " export";
  CHECK(run_with_env({"/bin/sh", "-c", script}, {"FAKECUDA_MEMORY_BYTES=64M"}, out, "/dev/null") == 0);
  CHECK(read_text(out) == "devices 1\ndevice 0 67108864\nexport " + std::to_string(CUDA_ERROR_MAP_FAILED) + "\n");
  CHECK(run_with_env({FAKECUDA_DEVICES_CHILD, "export"}, {"FAKECUDA_MEMORY_BYTES=64M"}, out, "/dev/null") == 0);
  CHECK(read_text(out) == "devices 1\ndevice 0 67108864\nexport 0\n");
  std::remove(out.c_str());
}
