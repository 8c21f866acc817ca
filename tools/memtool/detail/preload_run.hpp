// Running a command with libmemtool.so preloaded, shared by `memtool record` and `memtool run`:
// where the library is, how it joins the command's LD_PRELOAD, the variables the command gets,
// and the exit status a shell would report.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace memtool::cli {

// libmemtool.so: $MEMTOOL_LIBRARY, else relative to this executable as installed
// (bin/memtool → ../lib/libmemtool.so, ../lib64/), beside it, then the build tree
// (build/tools/memtool/memtool → build/interpose/libmemtool.so). Empty when not found.
[[nodiscard]] std::string find_preload_library();

// find_preload_library for memtool record and run: when not found, says so on stderr (where it
// looked, and what to do) and returns empty.
[[nodiscard]] std::string find_preload_library_or_say();

// The strategy memtool run/record runs with, said before the program starts: what it will do,
// and which libmemtool.so. `budget`: MEMTOOL_BUDGET as the program will get it ("" when none).
void say_strategy(const std::string& strategy, const std::string& library, const std::string& budget);

// Runs `command` (PATH lookup like a shell) with `library` appended to its LD_PRELOAD (the
// user's preloads stay first) and `variables` set, waits for it (Ctrl-C goes to the command),
// and returns its exit status as a shell reports it (128+signal when killed; 127 when it could
// not be started). `child` gets its pid (0 when fork failed).
int run_preloaded(const std::vector<std::string>& command, const std::string& library,
                  const std::vector<std::pair<std::string, std::string>>& variables, pid_t& child);

// One framework's switch to its stream-ordered allocator (the table add_framework_environment
// sets from, and `memtool doctor` checks the environment against).
struct FrameworkSwitch {
  const char* framework;  // PyTorch, JAX, TensorFlow
  const char* name;
  const char* value;
  std::vector<const char*> overridden_by;  // the user's own choice of that framework's allocator
};
[[nodiscard]] const std::vector<FrameworkSwitch>& framework_switches();

// The switches that make each framework allocate every tensor from the driver's stream-ordered
// allocator (one cuMemAllocAsync per tensor, which memtool sees) while keeping its speed, instead
// of a caching allocator that hands memtool a few large segments:
//   PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync    (unless it, PYTORCH_ALLOC_CONF or
//                                                       PYTORCH_NO_CUDA_MEMORY_CACHING is set)
//   XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async, XLA_PYTHON_CLIENT_PREALLOCATE=false (JAX)
//   TF_GPU_ALLOCATOR=cuda_malloc_async                 (TensorFlow)
// Each one only where the user has not set it. Appends what it sets to `variables` and says on
// stderr what was set and what was kept.
void add_framework_environment(std::vector<std::pair<std::string, std::string>>& variables);

}  // namespace memtool::cli
