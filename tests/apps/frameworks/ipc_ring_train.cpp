// A two-process ring all-reduce over IPC handles, shaped like NCCL's legacy (cudaIpc) path: each
// rank allocates a communication buffer at init, exports it with cuIpcGetMemHandle and opens its
// peer's; every step it computes a gradient into a fresh buffer, exports that too, opens the
// peer's and reads it with a kernel (a peer read), writes its own gradient into the peer's
// communication buffer (a peer write), and sums what arrived. Host synchronisation goes through
// pipes. Rank 0 starts rank 1 (this program again, same environment: under memtool when this
// one is) and prints one line per step with both ranks' checksums: the output of a run under
// any strategy must equal the plain run's. Any failing driver call ends the run (exit 3).
//
//   ipc_ring_train --module IMAGE [--steps N | --iterations N] [--floats N]
// The kernel is app_kernels.cu's scale_add (its host twin on fakecuda): on a GPU the program runs
// as it is with app_kernels.fatbin (tests/gpu/run.sh, stage 4).
#include <cuda.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_device.hpp"

extern char** environ;

namespace {

int g_rank = 0;

using frameworks::check;

void write_all(int fd, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = write(fd, p, bytes);
    if (n <= 0) std::exit(4);
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}
void read_all(int fd, void* data, std::size_t bytes) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = read(fd, p, bytes);
    if (n <= 0) std::exit(4);
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

struct Peer {
  int in = -1;
  int out = -1;
  void barrier() const {
    const char token = 'b';
    char got = 0;
    write_all(out, &token, 1);
    read_all(in, &got, 1);
  }
  CUipcMemHandle swap_handles(const CUipcMemHandle& mine) const {
    CUipcMemHandle theirs{};
    write_all(out, &mine, sizeof mine);
    read_all(in, &theirs, sizeof theirs);
    return theirs;
  }
};

using frameworks::checksum;

int run_rank(const std::string& module_path, int steps, int floats, const Peer& peer) {
  const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
  CK(cuInit(0));
  const frameworks::KernelDevice kernel_device = frameworks::open_kernel_device(0, module_path, check);
  const CUdevice device = kernel_device.device;
  const CUstream stream = kernel_device.stream;
  auto launch = [&](CUdeviceptr y, CUdeviceptr x, float a, float b) {
    frameworks::launch_scale_add(kernel_device, floats, y, x, a, b, check);
  };

  // Init: the communication buffer, exported once and opened by the peer for the whole run.
  CUdeviceptr comm = 0;
  CUdeviceptr acc = 0;
  CK(cuMemAlloc(&comm, bytes));
  CK(cuMemAlloc(&acc, bytes));
  CK(cuMemsetD32(comm, 0, static_cast<size_t>(floats)));
  CK(cuMemsetD32(acc, 0, static_cast<size_t>(floats)));
  // A synchronous memset of device memory may return before it is done, and the kernels' stream
  // is non-blocking (not ordered after the legacy stream's work): wait for it.
  CK(cuCtxSynchronize());
  CUipcMemHandle comm_handle{};
  CK(cuIpcGetMemHandle(&comm_handle, comm));
  CUdeviceptr peer_comm = 0;
  CK(cuIpcOpenMemHandle(&peer_comm, peer.swap_handles(comm_handle), CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));

  std::vector<float> host(static_cast<std::size_t>(floats));
  std::vector<std::string> lines;
  for (int step = 0; step < steps; ++step) {
    for (int i = 0; i < floats; ++i) {
      host[static_cast<std::size_t>(i)] =
          0.5f * static_cast<float>(g_rank + 1) + 0.25f * static_cast<float>(step) + 0.125f * static_cast<float>(i % 7);
    }
    CUdeviceptr x = 0;
    CUdeviceptr grad = 0;
    CUdeviceptr scratch = 0;
    CK(cuMemAlloc(&x, bytes));
    CK(cuMemcpyHtoDAsync(x, host.data(), bytes, stream));  // ordered before the kernels
    CK(cuMemAlloc(&grad, bytes));
    CK(cuMemAlloc(&scratch, bytes));
    launch(grad, x, 0.0f, 1.0f);        // grad = x
    launch(scratch, grad, 0.0f, 2.0f);  // scratch = 2 grad
    launch(grad, scratch, 1.0f, 0.5f);  // grad = 2 x
    CK(cuMemFree(scratch));
    // Export this step's gradient; the peer reads it where it is.
    CUipcMemHandle grad_handle{};
    CK(cuIpcGetMemHandle(&grad_handle, grad));
    CK(cuStreamSynchronize(stream));
    const CUipcMemHandle peer_grad_handle = peer.swap_handles(grad_handle);
    CUdeviceptr peer_grad = 0;
    CK(cuIpcOpenMemHandle(&peer_grad, peer_grad_handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    launch(acc, peer_grad, 1.0f, 1.0f);   // acc += the peer's gradient (a peer read)
    launch(peer_comm, grad, 0.0f, 1.0f);  // the peer's comm = my gradient (a peer write)
    CK(cuStreamSynchronize(stream));
    CK(cuIpcCloseMemHandle(peer_grad));
    peer.barrier();                 // both ranks read and wrote: comm holds the peer's gradient
    launch(acc, comm, 1.0f, 0.5f);  // acc += half of what arrived
    launch(acc, grad, 1.0f, 1.0f);  // acc += my own
    CK(cuStreamSynchronize(stream));
    CK(cuMemcpyDtoH(host.data(), acc, bytes));
    char line[160];
    std::snprintf(line, sizeof line, "rank %d step %d acc[0] %.6f checksum %016llx", g_rank, step,
                  static_cast<double>(host[0]), static_cast<unsigned long long>(checksum(host)));
    lines.emplace_back(line);
    CK(cuMemFree(grad));
    CK(cuMemFree(x));
    peer.barrier();  // neither writes the other's comm again before it was read
  }
  CK(cuIpcCloseMemHandle(peer_comm));
  peer.barrier();  // the peer closed my comm before I free it
  CK(cuMemFree(comm));
  CK(cuMemFree(acc));
  CK(cuStreamDestroy(stream));
  CK(cuModuleUnload(kernel_device.module));
  CK(cuDevicePrimaryCtxRelease(device));
  // Rank 1's lines go to rank 0, which prints both ranks' in order.
  if (g_rank == 1) {
    for (const std::string& l : lines) {
      const std::uint32_t n = static_cast<std::uint32_t>(l.size());
      write_all(peer.out, &n, sizeof n);
      write_all(peer.out, l.data(), n);
    }
    return 0;
  }
  for (int step = 0; step < steps; ++step) {
    std::uint32_t n = 0;
    read_all(peer.in, &n, sizeof n);
    std::string other(n, '\0');
    read_all(peer.in, other.data(), n);
    std::printf("%s | %s\n", lines[static_cast<std::size_t>(step)].c_str(), other.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string module_path;
  int steps = 12;
  int floats = 1 << 19;  // 2 MiB buffers: every one a swap candidate
  Peer peer;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--module")
      module_path = argv[i + 1];
    else if (flag == "--steps" || flag == "--iterations")
      steps = std::atoi(argv[i + 1]);
    else if (flag == "--floats")
      floats = std::atoi(argv[i + 1]);
    else if (flag == "--rank1-fds") {
      g_rank = 1;
      std::sscanf(argv[i + 1], "%d,%d", &peer.in, &peer.out);
    } else {
      std::fprintf(stderr, "usage: ipc_ring_train --module IMAGE [--steps N] [--floats N]\n");
      return 2;
    }
  }
  if (module_path.empty() || steps < 1 || floats < 1) {
    std::fprintf(stderr, "usage: ipc_ring_train --module IMAGE [--steps N] [--floats N]\n");
    return 2;
  }
  frameworks::g_program = "ipc_ring_train rank " + std::to_string(g_rank);
  if (g_rank == 1) return run_rank(module_path, steps, floats, peer);
  int to_child[2];
  int to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) return 4;
  const std::string fds = std::to_string(to_child[0]) + "," + std::to_string(to_parent[1]);
  std::vector<std::string> args{
      argv[0],       "--module", module_path, "--steps", std::to_string(steps), "--floats", std::to_string(floats),
      "--rank1-fds", fds};
  std::vector<char*> child_argv;
  child_argv.reserve(args.size() + 1);
  for (auto& a : args) child_argv.push_back(a.data());
  child_argv.push_back(nullptr);
  pid_t child = 0;
  if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, child_argv.data(), environ) != 0) return 4;
  close(to_child[0]);
  close(to_parent[1]);
  peer.in = to_parent[0];
  peer.out = to_child[1];
  const int status = run_rank(module_path, steps, floats, peer);
  int child_status = 0;
  waitpid(child, &child_status, 0);
  if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0) {
    std::fprintf(stderr, "ipc_ring_train: rank 1 ended with status %d\n", child_status);
    return 3;
  }
  return status;
}
