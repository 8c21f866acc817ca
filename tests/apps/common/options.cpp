// Parsing of the apps' few options, strict about values so a typo never runs a different test.
#include "options.hpp"

#include "arguments.hpp"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
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

}  // namespace

Options parse_options(int argc, char** argv, const OptionDefaults& defaults) {
  Options options;
  options.batch = defaults.batch;
  options.learning_rate = defaults.learning_rate;
  Arguments args(defaults.program, argc, argv);
  while (args.next()) {
    if (args.is_help()) {
      usage(defaults, 0);
    } else if (args.is("--iterations")) {
      options.iterations = static_cast<int>(args.integer(1, 1000000));
    } else if (args.is("--batch")) {
      options.batch = static_cast<int>(args.integer(1, 65536));
    } else if (args.is("--seed")) {
      options.seed = static_cast<std::uint64_t>(args.integer(0, std::numeric_limits<long long>::max()));
    } else if (args.is("--lr")) {
      options.learning_rate = static_cast<float>(args.number_above(0.0, 100.0));
    } else if (args.is("--module")) {
      options.module = args.value();
    } else if (defaults.getproc && args.is("--cuda-version")) {
      options.cuda_version = static_cast<int>(args.integer(1000, 99999));
    } else if (defaults.getproc && args.is("--per-thread")) {
      options.per_thread_default_stream = true;
    } else {
      std::fprintf(stderr, "%s: unknown option '%s'\n", defaults.program, args.current());
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

void usage_exit(int status, const char* format, ...) {
  std::FILE* out = status == 0 ? stdout : stderr;
  va_list args;
  va_start(args, format);
  std::vfprintf(out, format, args);
  va_end(args);
  std::exit(status);
}

void read_pattern_option(Arguments& args, std::uint64_t& seed, std::string& module, bool& self_test_corrupt,
                         void (*usage)(int status)) {
  if (args.is("--seed")) {
    seed = static_cast<std::uint64_t>(args.integer(0, std::numeric_limits<long long>::max()));
  } else if (args.is("--module")) {
    module = args.value();
  } else if (args.is("--self-test-corrupt")) {
    self_test_corrupt = true;
  } else {
    std::fprintf(stderr, "%s: unknown option '%s'\n", args.program(), args.current());
    usage(2);
    std::exit(2);  // usage exits; never past an unknown option in any case
  }
}

}  // namespace apps
