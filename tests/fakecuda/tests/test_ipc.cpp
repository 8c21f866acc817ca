// Sharing device memory with another process: IPC memory handles (both ways at once, with stream
// write/wait values across the two), IPC events, VMM allocations exported as file descriptors and
// passed over a unix socket, pools exported with their pointers, and dma-buf handles of ranges.
// The other process is fakecuda_ipc_peer, driven over a socket (peer_channel.hpp); every check
// reads or writes real bytes on both sides.
#include "devices_fixture.hpp"
#include "peer_channel.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace fakecuda_test;

namespace {

const std::vector<std::string> kPeerEnv{"FAKECUDA_DEVICES=2", "FAKECUDA_MEMORY_BYTES=256M,128M"};

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool all_bytes(CUdeviceptr p, std::size_t bytes, unsigned char value) {
  std::vector<unsigned char> host(bytes);
  REQUIRE(cuMemcpyDtoH(host.data(), p, bytes) == CUDA_SUCCESS);
  for (const unsigned char b : host) {
    if (b != value) return false;
  }
  return true;
}

CUmemAllocationProp exportable_prop(int dev) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

}  // namespace

TEST_CASE("an IPC memory handle opens in another process onto the same bytes", "[fakecuda][ipc]") {
  two_devices_ready(1);
  constexpr std::size_t kBytes = 1 << 20;
  DeviceBuffer buffer(kBytes);
  CU_REQUIRE_OK(cuMemsetD8(buffer.get(), 0x5a, kBytes));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CUipcMemHandle handle{};
  CU_REQUIRE_OK(cuIpcGetMemHandle(&handle, buffer.get() + 4096));  // names the whole allocation
  CUdeviceptr opened = 0;
  CU_CHECK_IS(cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_CONTEXT);

  PeerProcess peer(FAKECUDA_IPC_PEER, {}, kPeerEnv);
  REQUIRE(peer.running());
  const std::string hex = to_hex(&handle, sizeof handle);
  const auto open = words(peer.ask("open-mem " + hex + " 1"));
  REQUIRE(open.size() == 3);
  REQUIRE(open[0] == "ok");
  CHECK(open[2] == "1");                                                               // device 1's memory there too
  CHECK(peer.ask("check " + open[1] + " " + std::to_string(kBytes) + " 90") == "ok");  // 0x5a
  CHECK(peer.ask("fill " + open[1] + " " + std::to_string(kBytes) + " 165") == "ok");  // 0xa5
  CHECK(all_bytes(buffer.get(), kBytes, 0xa5));
  // Opened again: the same mapping, one more reference; closed as often as opened.
  const auto again = words(peer.ask("open-mem " + hex + " 1"));
  REQUIRE(again.size() == 3);
  CHECK(again[1] == open[1]);
  CHECK(peer.ask("close-mem " + open[1]) == "ok");
  CHECK(peer.ask("check " + open[1] + " 16 165") == "ok");  // still mapped
  CHECK(peer.ask("close-mem " + open[1]) == "ok");
  CHECK(peer.ask("close-mem " + open[1]) == "err " + std::to_string(CUDA_ERROR_INVALID_VALUE));
  // The exporter's memory is unaffected by the importer's close.
  CHECK(all_bytes(buffer.get(), kBytes, 0xa5));
  // Garbage is not a handle.
  CUipcMemHandle junk{};
  std::memset(junk.reserved, 0x7f, sizeof junk.reserved);
  CHECK(peer.ask("open-mem " + to_hex(&junk, sizeof junk) + " 1") ==
        "err " + std::to_string(CUDA_ERROR_INVALID_HANDLE));
  // Stream-ordered and managed memory are not exportable this way.
  CUdeviceptr async = 0;
  CU_REQUIRE_OK(cuMemAllocAsync(&async, 4096, nullptr));
  CU_CHECK_IS(cuIpcGetMemHandle(&handle, async), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemFreeAsync(async, nullptr));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CHECK(peer.quit() == 0);
}

TEST_CASE("two processes write each other's memory and wait on it in stream order", "[fakecuda][ipc][memop]") {
  two_devices_ready(0);
  DeviceBuffer mine(4096);
  CU_REQUIRE_OK(cuMemsetD8(mine.get(), 0, 4096));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CUipcMemHandle my_handle{};
  CU_REQUIRE_OK(cuIpcGetMemHandle(&my_handle, mine.get()));

  PeerProcess peer(FAKECUDA_IPC_PEER, {}, kPeerEnv);
  REQUIRE(peer.running());
  const auto theirs = words(peer.ask("alloc 4096 0"));
  REQUIRE(theirs.size() == 3);
  REQUIRE(theirs[0] == "ok");
  CUipcMemHandle their_handle{};
  REQUIRE(from_hex(theirs[2], &their_handle, sizeof their_handle));
  CUdeviceptr theirs_here = 0;
  CU_REQUIRE_OK(cuIpcOpenMemHandle(&theirs_here, their_handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  const auto mine_there = words(peer.ask("open-mem " + to_hex(&my_handle, sizeof my_handle) + " 1"));
  REQUIRE(mine_there.size() == 3);

  // The peer's stream waits for a word in its own buffer that only this process writes; then it
  // writes a word in this process's buffer, which this process's stream waits for.
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::string peer_reply;
  std::thread peer_side([&] { peer_reply = peer.ask("wait-value " + theirs[1] + " 7"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CU_REQUIRE_OK(cuStreamWriteValue32(s, theirs_here, 7, 0));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  peer_side.join();
  CHECK(peer_reply == "ok");
  CU_REQUIRE_OK(cuStreamWaitValue32(s, mine.get() + 64, 3, CU_STREAM_WAIT_VALUE_EQ));
  CU_CHECK_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  CHECK(peer.ask("write-value " + std::to_string(std::stoull(mine_there[1]) + 64) + " 3") == "ok");
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  unsigned word = 0;
  CU_REQUIRE_OK(cuMemcpyDtoH(&word, mine.get() + 64, sizeof word));
  CHECK(word == 3);
  // And plain bytes both ways.
  CU_REQUIRE_OK(cuMemsetD8(theirs_here + 1024, 0x31, 512));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CHECK(peer.ask("check " + std::to_string(std::stoull(theirs[1]) + 1024) + " 512 49") == "ok");
  CU_REQUIRE_OK(cuIpcCloseMemHandle(theirs_here));
  CU_CHECK_IS(cuMemFree(theirs_here), CUDA_ERROR_INVALID_VALUE);  // closed: not memory any more
  CU_REQUIRE_OK(cuStreamDestroy(s));
  CHECK(peer.quit() == 0);
}

TEST_CASE("an IPC event orders work across processes", "[fakecuda][ipc][events]") {
  two_devices_ready(0);
  CUevent e = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
  CUipcEventHandle handle{};
  CU_REQUIRE_OK(cuIpcGetEventHandle(&handle, e));
  CUevent timed = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&timed, CU_EVENT_DEFAULT));
  CU_CHECK_IS(cuIpcGetEventHandle(&handle, timed), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuEventDestroy(timed));

  PeerProcess peer(FAKECUDA_IPC_PEER, {}, kPeerEnv);
  REQUIRE(peer.running());
  CHECK(peer.ask("open-event " + to_hex(&handle, sizeof handle)) == "ok");
  CHECK(peer.ask("query-event") == "ok 0");  // never recorded: complete
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  {
    Gate gate;
    gate.hold(s);
    CU_REQUIRE_OK(cuEventRecord(e, s));
    CHECK(peer.ask("query-event") == "ok " + std::to_string(CUDA_ERROR_NOT_READY));
    std::string synced;
    std::thread waiter([&] { synced = peer.ask("sync-event"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.open();
    waiter.join();
    CHECK(synced == "ok 0");
  }
  CHECK(peer.ask("query-event") == "ok 0");
  // The peer records it too; this process sees that record.
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(peer.ask("record-event") == "ok");
  CU_REQUIRE_OK(cuEventSynchronize(e));
  CU_CHECK_IS(cuEventQuery(e), CUDA_SUCCESS);
  CU_REQUIRE_OK(cuStreamDestroy(s));
  CU_REQUIRE_OK(cuEventDestroy(e));
  CHECK(peer.quit() == 0);
}

TEST_CASE("a VMM allocation exported as a file descriptor is the same memory in another process",
          "[fakecuda][ipc][vmm]") {
  two_devices_ready(1);
  const CUmemAllocationProp prop = exportable_prop(1);
  size_t size = 0;
  CU_REQUIRE_OK(cuMemGetAllocationGranularity(&size, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle h = 0;
  CU_REQUIRE_OK(cuMemCreate(&h, size, &prop, 0));
  CUdeviceptr va = 0;
  CU_REQUIRE_OK(cuMemAddressReserve(&va, size, 0, 0, 0));
  CU_REQUIRE_OK(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 1;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_REQUIRE_OK(cuMemSetAccess(va, size, &access, 1));
  CU_REQUIRE_OK(cuMemsetD8(va, 0x42, size));
  CU_REQUIRE_OK(cuCtxSynchronize());
  int fd = -1;
  CU_CHECK_IS(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_ERROR_NOT_SUPPORTED);
  CU_REQUIRE_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  REQUIRE(fd >= 0);

  PeerProcess peer(FAKECUDA_IPC_PEER, {}, kPeerEnv);
  REQUIRE(peer.running());
  const auto imported = words(peer.ask("import-vmm " + std::to_string(size), fd));  // over SCM_RIGHTS
  REQUIRE(imported.size() == 4);
  REQUIRE(imported[0] == "ok");
  CHECK(imported[2] == "1");  // the allocation's properties travel with it
  CHECK(imported[3] == std::to_string(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  CHECK(peer.ask("check " + imported[1] + " " + std::to_string(size) + " 66") == "ok");
  CHECK(peer.ask("fill " + imported[1] + " 4096 67") == "ok");
  CHECK(all_bytes(va, 4096, 0x43));
  CHECK(all_bytes(va + 4096, 4096, 0x42));
  CHECK(peer.quit() == 0);

  // Imported in this process too, it aliases the same pages.
  CUmemGenericAllocationHandle again = 0;
  CU_REQUIRE_OK(cuMemImportFromShareableHandle(&again, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd);
  CUdeviceptr alias = 0;
  CU_REQUIRE_OK(cuMemAddressReserve(&alias, size, 0, 0, 0));
  CU_REQUIRE_OK(cuMemMap(alias, size, 0, again, 0));
  CU_REQUIRE_OK(cuMemSetAccess(alias, size, &access, 1));
  CHECK(all_bytes(alias, 4096, 0x43));
  CU_REQUIRE_OK(cuMemUnmap(alias, size));
  CU_REQUIRE_OK(cuMemRelease(again));
  CU_REQUIRE_OK(cuMemAddressFree(alias, size));
  // Not created exportable: no file descriptor.
  CUmemAllocationProp plain = prop;
  plain.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  CUmemGenericAllocationHandle h2 = 0;
  CU_REQUIRE_OK(cuMemCreate(&h2, size, &plain, 0));
  CU_CHECK_IS(cuMemExportToShareableHandle(&fd, h2, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemRelease(h2));
  // A file that is no exported allocation is refused.
  const int stranger = memfd_create("not-fakecuda", 0);
  REQUIRE(ftruncate(stranger, static_cast<off_t>(size + 4096)) == 0);
  CU_CHECK_IS(cuMemImportFromShareableHandle(&h2, reinterpret_cast<void*>(static_cast<std::intptr_t>(stranger)),
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
              CUDA_ERROR_INVALID_VALUE);
  close(stranger);
  CU_REQUIRE_OK(cuMemUnmap(va, size));
  CU_REQUIRE_OK(cuMemRelease(h));
  CU_REQUIRE_OK(cuMemAddressFree(va, size));
}

TEST_CASE("a pool and its pointers exported to another process", "[fakecuda][ipc][pools]") {
  two_devices_ready(0);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;
  CU_REQUIRE_OK(cuMemPoolCreate(&pool, &props));
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&p, 64 * 1024, pool, s));
  CU_REQUIRE_OK(cuMemsetD8Async(p, 0x17, 64 * 1024, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  int fd = -1;
  CU_REQUIRE_OK(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemPoolPtrExportData data{};
  CU_CHECK_IS(cuMemPoolExportPointer(&data, p + 16), CUDA_ERROR_INVALID_VALUE);  // an allocation's start only
  CU_REQUIRE_OK(cuMemPoolExportPointer(&data, p));

  PeerProcess peer(FAKECUDA_IPC_PEER, {}, kPeerEnv);
  REQUIRE(peer.running());
  CHECK(peer.ask("import-pool", fd) == "ok");
  close(fd);
  const auto imported = words(peer.ask("import-ptr " + to_hex(&data, sizeof data)));
  REQUIRE(imported.size() == 3);
  REQUIRE(imported[0] == "ok");
  CHECK(imported[2] == "0");
  CHECK(peer.ask("check " + imported[1] + " 65536 23") == "ok");  // 0x17
  CHECK(peer.ask("fill " + imported[1] + " 65536 24") == "ok");
  CHECK(peer.ask("free " + imported[1]) == "ok");
  CHECK(all_bytes(p, 64 * 1024, 24));
  CHECK(peer.quit() == 0);

  // The default pool was not created IPC-capable: nothing of it can be exported.
  CUmemoryPool default0 = nullptr;
  CU_REQUIRE_OK(cuDeviceGetDefaultMemPool(&default0, 0));
  CU_CHECK_IS(cuMemPoolExportToShareableHandle(&fd, default0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr q = 0;
  CU_REQUIRE_OK(cuMemAllocAsync(&q, 4096, s));
  CU_CHECK_IS(cuMemPoolExportPointer(&data, q), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemFreeAsync(q, s));
  // An imported pool maps pointers but cannot allocate.
  CU_REQUIRE_OK(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemoryPool here = nullptr;
  CU_REQUIRE_OK(cuMemPoolImportFromShareableHandle(&here, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  close(fd);
  CU_CHECK_IS(cuMemAllocFromPoolAsync(&q, 4096, here, s), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuDeviceSetMemPool(0, here), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemPoolDestroy(here));
  CU_REQUIRE_OK(cuMemFreeAsync(p, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CU_REQUIRE_OK(cuStreamDestroy(s));
  CU_REQUIRE_OK(cuMemPoolDestroy(pool));
}

TEST_CASE("a dma-buf handle is a file descriptor of the range's own pages", "[fakecuda][ipc][dmabuf]") {
  two_devices_ready(0);
  constexpr std::size_t kBytes = 64 * 1024;
  DeviceBuffer buffer(kBytes);
  CU_REQUIRE_OK(cuMemsetD8(buffer.get(), 0x61, kBytes));
  CU_REQUIRE_OK(cuCtxSynchronize());
  int fd = -1;
  CU_REQUIRE_OK(cuMemGetHandleForAddressRange(&fd, buffer.get() + 4096, 8192, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
  REQUIRE(fd >= 0);
  // The file position is where the range starts: its bytes are the device's, both ways.
  const off_t start = lseek(fd, 0, SEEK_CUR);
  std::vector<unsigned char> seen(8192);
  REQUIRE(pread(fd, seen.data(), seen.size(), start) == 8192);
  CHECK(seen == std::vector<unsigned char>(8192, 0x61));
  const std::vector<unsigned char> written(4096, 0x62);
  REQUIRE(pwrite(fd, written.data(), written.size(), start) == 4096);
  CHECK(all_bytes(buffer.get() + 4096, 4096, 0x62));
  CHECK(all_bytes(buffer.get(), 4096, 0x61));
  // Another process receiving it reads the same pages.
  {
    PeerProcess peer(FAKECUDA_IPC_PEER, {}, kPeerEnv);
    REQUIRE(peer.running());
    CHECK(peer.ask("dup-fd 4096 " + std::to_string(start) + " 98", fd) == "ok");
    CHECK(peer.quit() == 0);
  }
  close(fd);
  CU_CHECK_IS(cuMemGetHandleForAddressRange(&fd, buffer.get() + 100, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
              CUDA_ERROR_INVALID_VALUE);  // not page-aligned
  CU_CHECK_IS(cuMemGetHandleForAddressRange(&fd, buffer.get(), kBytes * 2, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
              CUDA_ERROR_INVALID_VALUE);  // past the allocation
  CU_CHECK_IS(cuMemGetHandleForAddressRange(&fd, buffer.get(), 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                            CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE),
              CUDA_ERROR_NOT_SUPPORTED);

  // A whole VMM physical allocation: the file starts at the range.
  const CUmemAllocationProp prop = exportable_prop(0);
  size_t size = 0;
  CU_REQUIRE_OK(cuMemGetAllocationGranularity(&size, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle h = 0;
  CU_REQUIRE_OK(cuMemCreate(&h, size, &prop, 0));
  CUdeviceptr va = 0;
  CU_REQUIRE_OK(cuMemAddressReserve(&va, 2 * size, 0, 0, 0));
  CU_REQUIRE_OK(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_REQUIRE_OK(cuMemSetAccess(va, size, &access, 1));
  CU_REQUIRE_OK(cuMemsetD8(va, 0x70, size));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CU_REQUIRE_OK(cuMemGetHandleForAddressRange(&fd, va, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
  CHECK(lseek(fd, 0, SEEK_CUR) == 0);
  void* mapped = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(mapped != MAP_FAILED);
  CHECK(static_cast<const unsigned char*>(mapped)[size - 1] == 0x70);
  munmap(mapped, size);
  close(fd);
  CU_CHECK_IS(cuMemGetHandleForAddressRange(&fd, va, 2 * size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
              CUDA_ERROR_INVALID_VALUE);  // the second half is not mapped
  CU_REQUIRE_OK(cuMemUnmap(va, size));
  CU_REQUIRE_OK(cuMemRelease(h));
  CU_REQUIRE_OK(cuMemAddressFree(va, 2 * size));
}
