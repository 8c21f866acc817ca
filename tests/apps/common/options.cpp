// Parsing of the apps' few options, strict about values so a typo never runs a different test.
#include "options.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace apps {

namespace {

[[noreturn]] void usage(const OptionDefaults& d, int status) {
  std::FILE* out = status == 0 ? stdout : stderr;
  std::fprintf(out,
               "usage: %s [--iterations N] [--batch B] [--seed S] [--lr X] [--module PATH]%s\n"
               "  --iterations N  training iterations, one checksum line each (default 5)\n"
               "  --batch B       samples per iteration (default %d)\n"
               "  --seed S        seed of the synthetic data and initial weights (default 1)\n"
               "  --lr X          SGD learning rate (default %g)\n"
               "  --module PATH   module image: a fakecuda image or a cubin/fatbin\n"
               "                  (default app_kernels.fakecuda beside the program)\n",
               d.program, d.getproc ? " [--cuda-version V] [--per-thread]" : "", d.batch,
               static_cast<double>(d.learning_rate));
  if (d.getproc) {
    std::fprintf(out,
                 "  --cuda-version V  cudaVersion passed to cuGetProcAddress_v2 (default 12000)\n"
                 "  --per-thread      ask for per-thread default stream variants (_ptsz/_ptds)\n");
  }
  std::exit(status);
}

long long parse_integer(const OptionDefaults& d, const char* name, const char* text, long long min, long long max) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    std::fprintf(stderr, "%s: %s wants an integer in [%lld, %lld], got '%s'\n", d.program, name, min, max, text);
    std::exit(2);
  }
  return value;
}

float parse_rate(const OptionDefaults& d, const char* text) {
  errno = 0;
  char* end = nullptr;
  const float value = std::strtof(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(value > 0.0f) || value > 100.0f) {
    std::fprintf(stderr, "%s: --lr wants a number in (0, 100], got '%s'\n", d.program, text);
    std::exit(2);
  }
  return value;
}

}  // namespace

Options parse_options(int argc, char** argv, const OptionDefaults& defaults) {
  Options options;
  options.batch = defaults.batch;
  options.learning_rate = defaults.learning_rate;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", defaults.program, arg);
        std::exit(2);
      }
      return argv[++i];
    };
    if (std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0) {
      usage(defaults, 0);
    } else if (std::strcmp(arg, "--iterations") == 0) {
      options.iterations = static_cast<int>(parse_integer(defaults, arg, value(), 1, 1000000));
    } else if (std::strcmp(arg, "--batch") == 0) {
      options.batch = static_cast<int>(parse_integer(defaults, arg, value(), 1, 65536));
    } else if (std::strcmp(arg, "--seed") == 0) {
      options.seed =
          static_cast<std::uint64_t>(parse_integer(defaults, arg, value(), 0, std::numeric_limits<long long>::max()));
    } else if (std::strcmp(arg, "--lr") == 0) {
      options.learning_rate = parse_rate(defaults, value());
    } else if (std::strcmp(arg, "--module") == 0) {
      options.module = value();
    } else if (defaults.getproc && std::strcmp(arg, "--cuda-version") == 0) {
      options.cuda_version = static_cast<int>(parse_integer(defaults, arg, value(), 1000, 99999));
    } else if (defaults.getproc && std::strcmp(arg, "--per-thread") == 0) {
      options.per_thread_default_stream = true;
    } else {
      std::fprintf(stderr, "%s: unknown option '%s'\n", defaults.program, arg);
      usage(defaults, 2);
    }
  }
  if (options.module.empty()) options.module = default_module_path();
  return options;
}

std::string default_module_path() {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return "app_kernels.fakecuda";
  std::string path(self, static_cast<std::size_t>(length));
  const auto slash = path.rfind('/');
  return path.substr(0, slash + 1) + "app_kernels.fakecuda";
}

}  // namespace apps
