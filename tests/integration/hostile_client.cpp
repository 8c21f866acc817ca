// A driver client for the hardening tests (test_hardening.cpp): makes a known set of calls,
// then ends as its mode says — by a signal, through a handler of its own, or with failed
// frees. Linked with -lcuda (fakecuda). Prints what it did on stdout.
//   hostile_client term      4 allocations, 2 frees, then SIGTERM to itself (default action)
//   hostile_client handler   installs a SIGTERM handler first (prints "handled", exits 3)
//   hostile_client ignore    ignores SIGTERM first, is sent it, then frees the rest: exits 0
//   hostile_client kill      allocations, 2.5 s of sleep, then SIGKILL (no handler can run)
//   hostile_client frees     a good free, a double free, an interior free and a wild free
//   hostile_client hup       (run with SIGHUP ignored, as under nohup) prints its SIGHUP
//                            disposition, runs a shell that sends itself SIGHUP, then sends it
//                            to itself: prints "child survived" and "still running", exits 0
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "client_driver.hpp"

namespace {

void handled(int) {
  const char text[] = "handled\n";
  (void)!write(STDOUT_FILENO, text, sizeof(text) - 1);
  _exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "handler") == 0) std::signal(SIGTERM, handled);  // before the first driver call
  if (std::strcmp(mode, "ignore") == 0) std::signal(SIGTERM, SIG_IGN);
  start_driver();
  if (std::strcmp(mode, "frees") == 0) {
    CUdeviceptr a = 0;
    CUdeviceptr b = 0;
    CHECK_CU(cuMemAlloc(&a, 4096));
    CHECK_CU(cuMemAlloc(&b, 4096));
    CHECK_CU(cuMemFree(a));
    const CUresult twice = cuMemFree(a);        // double
    const CUresult inside = cuMemFree(b + 64);  // interior
    const CUresult wild = cuMemFree(0x1234);    // never allocated
    CHECK_CU(cuMemFree(b));
    std::printf("double %d interior %d wild %d\n", static_cast<int>(twice), static_cast<int>(inside),
                static_cast<int>(wild));
    return 0;
  }
  CUdeviceptr buffers[4] = {};
  for (CUdeviceptr& buffer : buffers) CHECK_CU(cuMemAlloc(&buffer, 1 << 16));
  CHECK_CU(cuMemFree(buffers[0]));
  CHECK_CU(cuMemFree(buffers[1]));
  std::printf("4 allocations, 2 frees\n");
  std::fflush(stdout);
  if (std::strcmp(mode, "hup") == 0) {
    struct sigaction hup {};
    sigaction(SIGHUP, nullptr, &hup);
    const bool ignored = (hup.sa_flags & SA_SIGINFO) == 0 && hup.sa_handler == SIG_IGN;
    std::printf("SIGHUP %s\n", ignored ? "ignored" : "not ignored");
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      execl("/bin/sh", "sh", "-c", "kill -HUP $$; echo child survived", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    raise(SIGHUP);
    CHECK_CU(cuMemFree(buffers[2]));
    CHECK_CU(cuMemFree(buffers[3]));
    std::printf("still running\n");
    return 0;
  }
  if (std::strcmp(mode, "kill") == 0) {
    usleep(2500 * 1000);  // the library's flush timer runs meanwhile
    raise(SIGKILL);
  }
  raise(SIGTERM);
  CHECK_CU(cuMemFree(buffers[2]));  // only "ignore" gets here
  CHECK_CU(cuMemFree(buffers[3]));
  std::printf("still running\n");
  return 0;
}
