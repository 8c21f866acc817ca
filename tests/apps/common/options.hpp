// Command-line options shared by the test apps (no third-party parser: the apps must also build
// on a GPU machine that has only the CUDA toolkit and a compiler).
#pragma once

#include <cstdint>
#include <string>

namespace apps {

struct Options {
  int iterations = 5;
  int batch = 0;  // 0: the app's default
  std::uint64_t seed = 1;
  float learning_rate = 0;  // 0: the app's default
  std::string module;       // empty: the fake module image next to the executable
  // Only for the cuGetProcAddress clients.
  int cuda_version = 12000;
  bool per_thread_default_stream = false;
};

struct OptionDefaults {
  const char* program;
  int batch;
  float learning_rate;
  bool getproc;  // accept --cuda-version and --per-thread
};

// Parses argv; prints usage and exits 0 on --help, exits 2 on a bad option or value.
Options parse_options(int argc, char** argv, const OptionDefaults& defaults);

// The module image used when --module is not given: app_kernels.fakecuda beside the executable.
std::string default_module_path();

class Arguments;

// Prints a program's usage (printf `format`): on stdout when it was asked for (status 0), else on
// stderr; then exits with `status`.
[[noreturn]] void usage_exit(int status, const char* format, ...) __attribute__((format(printf, 2, 3)));

// The options the pattern-checking programs (adversarial_train, table_train) read alike: --seed S,
// --module PATH and the hidden --self-test-corrupt, read into their fields. Any other argument is
// unknown to the program: says so and exits through its usage(2).
void read_pattern_option(Arguments& args, std::uint64_t& seed, std::string& module, bool& self_test_corrupt,
                         void (*usage)(int status));

}  // namespace apps
