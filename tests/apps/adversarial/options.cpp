// Strict parsing of adversarial_train's options: a typo never runs a different test.
#include "options.hpp"

#include "../common/options.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace adversarial {

namespace {

constexpr const char* kProgram = "adversarial_train";

[[noreturn]] void usage(int status) {
  std::FILE* out = status == 0 ? stdout : stderr;
  std::fprintf(out,
               "usage: %s [--iterations N] [--seed S] [--module PATH] [--threads T] [--shape-period K]\n"
               "  --iterations N    iterations, one checksum line each (default 12)\n"
               "  --seed S          seed of the buffer patterns and the extra allocations (default 1)\n"
               "  --module PATH     module image: a fakecuda image or a cubin/fatbin\n"
               "                    (default app_kernels.fakecuda beside the program)\n"
               "  --threads T       host threads, each with its own two streams (1..8, default 1)\n"
               "  --shape-period K  iterations between changes of the iteration's shape (default 5)\n",
               kProgram);
  std::exit(status);
}

long long parse_integer(const char* name, const char* text, long long min, long long max) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    std::fprintf(stderr, "%s: %s wants an integer in [%lld, %lld], got '%s'\n", kProgram, name, min, max, text);
    std::exit(2);
  }
  return value;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", kProgram, arg);
        std::exit(2);
      }
      return argv[++i];
    };
    if (std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0) {
      usage(0);
    } else if (std::strcmp(arg, "--iterations") == 0) {
      options.iterations = static_cast<int>(parse_integer(arg, value(), 1, 1000000));
    } else if (std::strcmp(arg, "--seed") == 0) {
      options.seed = static_cast<std::uint64_t>(parse_integer(arg, value(), 0, std::numeric_limits<long long>::max()));
    } else if (std::strcmp(arg, "--module") == 0) {
      options.module = value();
    } else if (std::strcmp(arg, "--threads") == 0) {
      options.threads = static_cast<int>(parse_integer(arg, value(), 1, 8));
    } else if (std::strcmp(arg, "--shape-period") == 0) {
      options.shape_period = static_cast<int>(parse_integer(arg, value(), 1, 1000000));
    } else if (std::strcmp(arg, "--self-test-corrupt") == 0) {
      options.self_test_corrupt = true;
    } else {
      std::fprintf(stderr, "%s: unknown option '%s'\n", kProgram, arg);
      usage(2);
    }
  }
  if (options.module.empty()) options.module = apps::default_module_path();
  return options;
}

}  // namespace adversarial
