// run_preloaded and friends (see preload_run.hpp).
#include "detail/preload_run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
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
  // Installed layouts first, so an installed memtool never picks up a build tree's library.
  for (const fs::path& candidate : {dir / "../lib/libmemtool.so", dir / "../lib64/libmemtool.so", dir / "libmemtool.so",
                                    dir / "../../interpose/libmemtool.so"}) {
    if (fs::exists(candidate, error)) return fs::weakly_canonical(candidate, error).string();
  }
  return {};
}

std::string find_preload_library_or_say() {
  std::string library = find_preload_library();
  if (library.empty()) {
    fmt::print(stderr,
               "memtool: error: libmemtool.so not found (in ../lib, beside memtool, or the build tree); set "
               "MEMTOOL_LIBRARY, or see memtool doctor\n");
  }
  return library;
}

const std::vector<FrameworkSwitch>& framework_switches() {
  static const std::vector<FrameworkSwitch> switches = {
      {"PyTorch",
       "PYTORCH_CUDA_ALLOC_CONF",
       "backend:cudaMallocAsync",
       {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING"}},
      {"JAX", "XLA_PYTHON_CLIENT_ALLOCATOR", "cuda_async", {"XLA_PYTHON_CLIENT_ALLOCATOR"}},
      {"JAX",
       "XLA_PYTHON_CLIENT_PREALLOCATE",
       "false",
       {"XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_ALLOCATOR"}},
      {"TensorFlow", "TF_GPU_ALLOCATOR", "cuda_malloc_async", {"TF_GPU_ALLOCATOR"}},
  };
  return switches;
}

void say_strategy(const std::string& strategy, const std::string& library, const std::string& budget) {
  std::string what;
  if (strategy == "pool") {
    what = "record until the training step is found, then serve each step's allocations from a planned pool";
  } else if (strategy == "swap") {
    what = budget.empty()
               ? "swap idle buffers to the host to stay within MEMTOOL_BUDGET (none given: nothing will "
                 "be swapped)"
               : fmt::format("keep the device within {} by swapping idle buffers to the host and back", budget);
  } else if (strategy == "record") {
    what = "record every allocation, free and launch; every call passes to the driver unchanged";
  } else {
    what = "pass every call straight to the driver; nothing is recorded, served or moved";
  }
  fmt::print(stderr, "memtool: strategy {}: {} ({})\n", strategy, what, library);
}

void add_framework_environment(std::vector<std::pair<std::string, std::string>>& variables) {
  const auto user_set = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0';
  };
  std::string set;
  std::string kept;
  for (const FrameworkSwitch& s : framework_switches()) {
    const auto chosen = std::find_if(s.overridden_by.begin(), s.overridden_by.end(), user_set);
    if (chosen != s.overridden_by.end()) {
      const std::string note = fmt::format("{}={}", *chosen, std::getenv(*chosen));
      if (kept.find(note) == std::string::npos) kept += (kept.empty() ? "" : ", ") + note;
      continue;
    }
    variables.emplace_back(s.name, s.value);
    set += fmt::format("{}{}={}", set.empty() ? "" : " ", s.name, s.value);
  }
  if (!set.empty()) {
    fmt::print(
        stderr,
        "memtool: set {} (frameworks allocate each tensor from the driver; --no-framework-env leaves them unset)\n",
        set);
  }
  if (!kept.empty()) fmt::print(stderr, "memtool: kept your {}\n", kept);
}

namespace {
constexpr int kStatusNotFound = 127;
constexpr int kStatusCannotRun = 126;
}  // namespace

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
    argv.reserve(command.size() + 1);
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int why = errno;
    fmt::print(stderr, "memtool: error: cannot run {}: {}\n", command[0], std::strerror(why));
    // As a shell says it: 127 when there is no such program, 126 when it cannot be run.
    _exit(why == ENOENT ? kStatusNotFound : kStatusCannotRun);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  return exit_status_of(status);
}

}  // namespace memtool::cli
