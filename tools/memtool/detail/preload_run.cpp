// run_preloaded and friends (see preload_run.hpp).
#include "detail/preload_run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace memtool::cli {
namespace {

namespace fs = std::filesystem;

// The exit status a shell would report for the child.
int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::string find_preload_library() {
  if (const char* configured = std::getenv("MEMTOOL_LIBRARY"); configured != nullptr && *configured != '\0') {
    return configured;
  }
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) return {};
  const fs::path dir = self.parent_path();
  for (const fs::path& candidate : {dir / "../../interpose/libmemtool.so", dir / "../lib/libmemtool.so",
                                    dir / "../lib64/libmemtool.so", dir / "libmemtool.so"}) {
    if (fs::exists(candidate, error)) return fs::weakly_canonical(candidate, error).string();
  }
  return {};
}

int run_preloaded(const std::vector<std::string>& command, const std::string& library,
                  const std::vector<std::pair<std::string, std::string>>& variables, pid_t& child) {
  std::string preload = library;
  if (const char* existing = std::getenv("LD_PRELOAD"); existing != nullptr && *existing != '\0') {
    preload = std::string(existing) + ":" + library;  // keep the user's preloads first
  }
  // Like system(): the command gets Ctrl-C, we wait for it and report.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_int {};
  struct sigaction old_quit {};
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);

  child = fork();
  if (child < 0) {
    child = 0;
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    fmt::print(stderr, "memtool: error: fork failed: {}\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    for (const auto& [name, value] : variables) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fmt::print(stderr, "memtool: error: cannot run {}: {}\n", command[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  return exit_status_of(status);
}

}  // namespace memtool::cli
