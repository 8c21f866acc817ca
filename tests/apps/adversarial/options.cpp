// Strict parsing of adversarial_train's options: a typo never runs a different test.
#include "options.hpp"

#include "../common/arguments.hpp"
#include "../common/options.hpp"

#include <cstdio>
#include <cstdlib>

namespace adversarial {

namespace {

constexpr const char* kProgram = "adversarial_train";

[[noreturn]] void usage(int status) {
  apps::usage_exit(status,
                   "usage: %s [--iterations N] [--seed S] [--module PATH] [--threads T] [--shape-period K]\n"
                   "  --iterations N    iterations, one checksum line each (default 12)\n"
                   "  --seed S          seed of the buffer patterns and the extra allocations (default 1)\n"
                   "  --module PATH     module image: a fakecuda image or a cubin/fatbin\n"
                   "                    (default app_kernels.fakecuda beside the program)\n"
                   "  --threads T       host threads, each with its own two streams (1..8, default 1)\n"
                   "  --shape-period K  iterations between changes of the iteration's shape (default 5)\n",
                   kProgram);
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  apps::Arguments args(kProgram, argc, argv);
  while (args.next()) {
    if (args.is_help()) {
      usage(0);
    } else if (args.is("--iterations")) {
      options.iterations = static_cast<int>(args.integer(1, 1000000));
    } else if (args.is("--threads")) {
      options.threads = static_cast<int>(args.integer(1, 8));
    } else if (args.is("--shape-period")) {
      options.shape_period = static_cast<int>(args.integer(1, 1000000));
    } else {
      apps::read_pattern_option(args, options.seed, options.module, options.self_test_corrupt, usage);
    }
  }
  if (options.module.empty()) options.module = apps::default_module_path();
  return options;
}

}  // namespace adversarial
