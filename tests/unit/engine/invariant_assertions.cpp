// The engine's debug assertions (engine/include/memtool/engine/debug_assert.hpp) catch a broken
// invariant 1: a child process hands out a pool range overlapping a live one. Built with
// MEMTOOL_ASSERTIONS the child must abort with the invariant named on stderr; built without,
// the assertion must cost nothing and the child must run on (the engine's own range_free check
// is what keeps a user's build safe). Exit 0 when the build behaves as configured.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "pool_arena.hpp"

namespace {

[[noreturn]] void overlap_in_child(int err_fd) {
  dup2(err_fd, STDERR_FILENO);
  memtool::engine::PoolArena arena(0x10000, 4096);
  arena.occupy(0, 1024);
  arena.occupy(512, 1024);  // overlaps [0, 1024): invariant 1 broken
  _exit(0);
}

}  // namespace

int main() {
  int fds[2];
  if (pipe(fds) != 0) return 2;
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    close(fds[0]);
    overlap_in_child(fds[1]);
  }
  close(fds[1]);
  std::string err;
  char chunk[256];
  for (ssize_t n; (n = read(fds[0], chunk, sizeof chunk)) > 0;) err.append(chunk, static_cast<std::size_t>(n));
  int status = 0;
  waitpid(child, &status, 0);
#if defined(MEMTOOL_ASSERTIONS)
  const bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  const bool named = err.find("assertion failed: invariant 1") != std::string::npos;
  std::printf("assertions on: child %s, message %s\n", aborted ? "aborted" : "ran on", named ? "named" : "missing");
  return aborted && named ? 0 : 1;
#else
  const bool ran_on = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("assertions off: child %s\n", ran_on ? "ran on" : "stopped");
  return ran_on && err.empty() ? 0 : 1;
#endif
}
