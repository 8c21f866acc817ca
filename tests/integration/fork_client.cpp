// Forks after using the driver under libmemtool.so: the child allocates and exits normally
// (running atexit handlers), the parent carries on. The parent's trace must hold the parent's
// events only and end cleanly. Linked with -lcuda (fakecuda).
#include <sys/wait.h>
#include <unistd.h>

#include "client_driver.hpp"

int main() {
  start_driver();
  CUdeviceptr a = 0;
  CHECK_CU(cuMemAlloc(&a, 1024));  // parent event 1
  CHECK_CU(cuCtxSynchronize());    // parent event 2
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    // A driver refuses a context inherited through fork (fakecuda too, with
    // CUDA_ERROR_NOT_INITIALIZED); whatever it answers, nothing may reach the parent's trace.
    CUdeviceptr b = 0;
    if (cuMemAlloc(&b, 2048) == CUDA_SUCCESS) (void)cuMemFree(b);
    std::exit(0);  // atexit handlers run: they must not close the parent's trace either
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  CHECK_CU(cuMemFree(a));  // parent event 3
  CUdeviceptr c = 0;
  CHECK_CU(cuMemAlloc(&c, 4096));  // parent event 4
  CHECK_CU(cuMemFree(c));          // parent event 5
  std::puts("fork ok");
  return 0;
}
