// launch_ranks: a stand-in for `torchrun --nproc-per-node N` in tests. It asks the driver how
// many devices there are first (as torchrun does for --nproc-per-node gpu, which loads
// libcuda.so.1 in the launcher's own process), then starts N copies of the command, each with
// the variables torchrun gives its workers (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// GROUP_RANK, MASTER_ADDR, MASTER_PORT), waits for every one, and exits as torchrun does: 0
// when every rank exited 0, else the status of the first rank that failed (128+signal when it
// was killed), after saying which ranks failed.
//
//   launch_ranks [--no-driver] N command args...
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// cuInit and cuDeviceGetCount through dlopen, like a launcher that never links the driver.
int device_count() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return -1;
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  const auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  int devices = -1;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&devices) != 0) return -1;
  return devices;
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  bool ask_driver = true;
  if (argc > 1 && std::strcmp(argv[1], "--no-driver") == 0) {
    ask_driver = false;
    ++first;
  }
  if (argc - first < 2) {
    std::fprintf(stderr, "usage: launch_ranks [--no-driver] N command args...\n");
    return 2;
  }
  const int ranks = std::atoi(argv[first]);
  if (ranks < 1 || ranks > 64) {
    std::fprintf(stderr, "launch_ranks: N must be 1..64, got '%s'\n", argv[first]);
    return 2;
  }
  if (ask_driver) std::fprintf(stderr, "launch_ranks: %d devices\n", device_count());
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    const pid_t child = fork();
    if (child < 0) {
      std::fprintf(stderr, "launch_ranks: fork: %s\n", std::strerror(errno));
      return 1;
    }
    if (child == 0) {
      const std::string r = std::to_string(rank);
      const std::string n = std::to_string(ranks);
      setenv("RANK", r.c_str(), 1);
      setenv("LOCAL_RANK", r.c_str(), 1);
      setenv("WORLD_SIZE", n.c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", n.c_str(), 1);
      setenv("GROUP_RANK", "0", 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", "29500", 1);
      execvp(argv[first + 1], argv + first + 1);
      std::fprintf(stderr, "launch_ranks: cannot run %s: %s\n", argv[first + 1], std::strerror(errno));
      _exit(127);
    }
    children.push_back(child);
  }
  int result = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    int status = 0;
    while (waitpid(children[static_cast<std::size_t>(rank)], &status, 0) < 0 && errno == EINTR) {}
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    if (code != 0) {
      std::fprintf(stderr, "launch_ranks: rank %d failed with status %d\n", rank, code);
      if (result == 0) result = code;
    }
  }
  return result;
}
