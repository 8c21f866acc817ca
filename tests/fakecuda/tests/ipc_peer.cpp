// The second process of fakecuda's IPC tests: a driver-API program on the devices of its
// environment that does what the test asks over a unix socket (peer_channel.hpp), one command per
// line, and answers "ok ..." or "err <CUresult>": opening IPC memory and event handles, importing
// VMM and pool handles received as file descriptors, reading, writing and waiting on the memory.
// Usage: fakecuda_ipc_peer SOCKET_FD
#include "peer_channel.hpp"

#include <cuda.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

using namespace fakecuda_test;

namespace {

std::string err(CUresult r) { return "err " + std::to_string(static_cast<int>(r)); }

std::string ptr_text(CUdeviceptr p) { return std::to_string(static_cast<unsigned long long>(p)); }

CUdeviceptr parse_ptr(const std::string& text) { return static_cast<CUdeviceptr>(std::stoull(text)); }

struct Peer {
  CUstream stream = nullptr;
  CUevent event = nullptr;

  std::string run(const std::string& line, int fd, int& fd_back) {
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    CUresult r = CUDA_SUCCESS;
    if (verb == "open-mem") {
      // open-mem HANDLEHEX FLAGS -> ok PTR ORDINAL
      std::string hex;
      unsigned flags = 0;
      in >> hex >> flags;
      CUipcMemHandle handle{};
      if (!from_hex(hex, &handle, sizeof handle)) return "err bad-hex";
      CUdeviceptr p = 0;
      if ((r = cuIpcOpenMemHandle(&p, handle, flags)) != CUDA_SUCCESS) return err(r);
      int ordinal = -1;
      cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
      return "ok " + ptr_text(p) + " " + std::to_string(ordinal);
    }
    if (verb == "close-mem") {
      std::string p;
      in >> p;
      return (r = cuIpcCloseMemHandle(parse_ptr(p))) == CUDA_SUCCESS ? "ok" : err(r);
    }
    if (verb == "check") {
      // check PTR BYTES BYTE -> ok | bad INDEX VALUE
      std::string p;
      std::size_t bytes = 0;
      unsigned value = 0;
      in >> p >> bytes >> value;
      std::vector<unsigned char> host(bytes);
      if ((r = cuMemcpyDtoH(host.data(), parse_ptr(p), bytes)) != CUDA_SUCCESS) return err(r);
      for (std::size_t i = 0; i < bytes; ++i) {
        if (host[i] != value) return "bad " + std::to_string(i) + " " + std::to_string(host[i]);
      }
      return "ok";
    }
    if (verb == "fill") {
      std::string p;
      std::size_t bytes = 0;
      unsigned value = 0;
      in >> p >> bytes >> value;
      if ((r = cuMemsetD8(parse_ptr(p), static_cast<unsigned char>(value), bytes)) != CUDA_SUCCESS) return err(r);
      return (r = cuCtxSynchronize()) == CUDA_SUCCESS ? "ok" : err(r);
    }
    if (verb == "alloc") {
      // alloc BYTES BYTE -> ok PTR HANDLEHEX (an exported cuMemAlloc buffer filled with BYTE)
      std::size_t bytes = 0;
      unsigned value = 0;
      in >> bytes >> value;
      CUdeviceptr p = 0;
      if ((r = cuMemAlloc(&p, bytes)) != CUDA_SUCCESS) return err(r);
      if ((r = cuMemsetD8(p, static_cast<unsigned char>(value), bytes)) != CUDA_SUCCESS) return err(r);
      if ((r = cuCtxSynchronize()) != CUDA_SUCCESS) return err(r);
      CUipcMemHandle handle{};
      if ((r = cuIpcGetMemHandle(&handle, p)) != CUDA_SUCCESS) return err(r);
      return "ok " + ptr_text(p) + " " + to_hex(&handle, sizeof handle);
    }
    if (verb == "write-value") {
      // write-value PTR VALUE: a 32-bit stream write, then the stream synchronised
      std::string p;
      unsigned value = 0;
      in >> p >> value;
      if ((r = cuStreamWriteValue32(stream, parse_ptr(p), value, 0)) != CUDA_SUCCESS) return err(r);
      return (r = cuStreamSynchronize(stream)) == CUDA_SUCCESS ? "ok" : err(r);
    }
    if (verb == "wait-value") {
      // wait-value PTR VALUE: the stream waits for *PTR >= VALUE; answered once it got there
      std::string p;
      unsigned value = 0;
      in >> p >> value;
      if ((r = cuStreamWaitValue32(stream, parse_ptr(p), value, CU_STREAM_WAIT_VALUE_GEQ)) != CUDA_SUCCESS)
        return err(r);
      return (r = cuStreamSynchronize(stream)) == CUDA_SUCCESS ? "ok" : err(r);
    }
    if (verb == "open-event") {
      std::string hex;
      in >> hex;
      CUipcEventHandle handle{};
      if (!from_hex(hex, &handle, sizeof handle)) return "err bad-hex";
      return (r = cuIpcOpenEventHandle(&event, handle)) == CUDA_SUCCESS ? "ok" : err(r);
    }
    if (verb == "query-event") return "ok " + std::to_string(static_cast<int>(cuEventQuery(event)));
    if (verb == "sync-event") return "ok " + std::to_string(static_cast<int>(cuEventSynchronize(event)));
    if (verb == "record-event") return (r = cuEventRecord(event, stream)) == CUDA_SUCCESS ? "ok" : err(r);
    if (verb == "import-vmm") {
      // import-vmm (fd attached) -> ok PTR DEVICE HANDLE_TYPES: imported, mapped, readable and writable
      CUmemGenericAllocationHandle h = 0;
      if ((r = cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) != CUDA_SUCCESS) {
        return err(r);
      }
      close(fd);  // the handle keeps what it needs
      CUmemAllocationProp prop{};
      if ((r = cuMemGetAllocationPropertiesFromHandle(&prop, h)) != CUDA_SUCCESS) return err(r);
      std::size_t size = 0;
      in >> size;
      CUdeviceptr va = 0;
      if ((r = cuMemAddressReserve(&va, size, 0, 0, 0)) != CUDA_SUCCESS) return err(r);
      if ((r = cuMemMap(va, size, 0, h, 0)) != CUDA_SUCCESS) return err(r);
      CUmemAccessDesc access{};
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = prop.location.id;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      if ((r = cuMemSetAccess(va, size, &access, 1)) != CUDA_SUCCESS) return err(r);
      cuMemRelease(h);  // the mapping holds the memory
      return "ok " + ptr_text(va) + " " + std::to_string(prop.location.id) + " " +
             std::to_string(static_cast<unsigned>(prop.requestedHandleTypes));
    }
    if (verb == "import-pool") {
      // import-pool (fd attached), then import-ptr DATAHEX -> ok PTR ORDINAL
      CUmemoryPool pool = nullptr;
      r = cuMemPoolImportFromShareableHandle(&pool, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      close(fd);
      if (r != CUDA_SUCCESS) return err(r);
      imported_pool = pool;
      return "ok";
    }
    if (verb == "import-ptr") {
      std::string hex;
      in >> hex;
      CUmemPoolPtrExportData data{};
      if (!from_hex(hex, &data, sizeof data)) return "err bad-hex";
      CUdeviceptr p = 0;
      if ((r = cuMemPoolImportPointer(&p, imported_pool, &data)) != CUDA_SUCCESS) return err(r);
      int ordinal = -1;
      cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
      return "ok " + ptr_text(p) + " " + std::to_string(ordinal);
    }
    if (verb == "free") {
      std::string p;
      in >> p;
      return (r = cuMemFree(parse_ptr(p))) == CUDA_SUCCESS ? "ok" : err(r);
    }
    if (verb == "dup-fd") {
      // dup-fd (fd attached) BYTES OFFSET BYTE: maps the received file and checks BYTES at OFFSET
      std::size_t bytes = 0;
      long long offset = 0;
      unsigned value = 0;
      in >> bytes >> offset >> value;
      std::vector<unsigned char> host(bytes);
      const ssize_t n = pread(fd, host.data(), bytes, static_cast<off_t>(offset));
      close(fd);
      if (n != static_cast<ssize_t>(bytes)) return "err short-read";
      for (std::size_t i = 0; i < bytes; ++i) {
        if (host[i] != value) return "bad " + std::to_string(i) + " " + std::to_string(host[i]);
      }
      return "ok";
    }
    (void)fd_back;
    return "err unknown-command";
  }
  CUmemoryPool imported_pool = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fakecuda_ipc_peer SOCKET_FD\n");
    return 2;
  }
  const int sock = std::atoi(argv[1]);
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    return 1;
  }
  Peer peer;
  if (cuStreamCreate(&peer.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    return 1;
  }
  for (;;) {
    std::string line;
    int fd = -1;
    if (!receive_line(sock, line, &fd)) {
      return 3;  // the test went away
    }
    if (line == "quit") {
      return 0;
    }
    int fd_back = -1;
    const std::string reply = peer.run(line, fd, fd_back);
    if (!send_line(sock, reply, fd_back)) {
      return 3;
    }
  }
}
