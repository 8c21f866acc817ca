// Strict parsing of table_train's options: a typo never runs a different test.
#include "table_options.hpp"

#include "../common/arguments.hpp"
#include "../common/options.hpp"

#include <cstdio>
#include <cstdlib>

namespace table {
namespace {

constexpr const char* kProgram = "table_train";

[[noreturn]] void usage(int status) {
  apps::usage_exit(
      status,
      "usage: %s [--steps N] [--layers L] [--groups G] [--words W] [--table pinned|pageable|kernel|global]\n"
      "          [--through all|written] [--alloc sync|async] [--refresh] [--table-in-large]\n"
      "          [--interior] [--seed S] [--module PATH]\n"
      "  --steps N          steps, one line each (default 6; --iterations N is the same)\n"
      "  --layers L         layers, each a grouped launch with its own table, 1..64 (default 4)\n"
      "  --groups G         groups of each layer, 1..16 (default 4)\n"
      "  --words W          32-bit words per buffer (default 524288: 2 MiB)\n"
      "  --table SOURCE     how the table gets its pointers: pinned or pageable host memory and\n"
      "                     cuMemcpyHtoDAsync (default pinned), kernel (table_set launches), or\n"
      "                     global (pinned, then published in a device global: the grouped\n"
      "                     kernels get no table argument)\n"
      "  --through WHAT     all buffers through the table (default), or only the written ones\n"
      "                     (inputs passed as arguments)\n"
      "  --alloc KIND       sync (cuMemAlloc, default) or async (cuMemAllocAsync)\n"
      "  --refresh          inputs and outputs allocated each step; the table rewritten each step\n"
      "  --table-in-large   the table inside a buffer as large as the others, at an offset\n"
      "  --interior         table entries point %d bytes into their buffers\n"
      "  --seed S           seed of the patterns (default 1)\n"
      "  --module PATH      module image (default app_kernels.fakecuda beside the program)\n",
      kProgram, kInteriorBytes);
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  apps::Arguments args(kProgram, argc, argv);
  while (args.next()) {
    if (args.is_help()) {
      usage(0);
    } else if (args.is("--steps") || args.is("--iterations")) {
      options.steps = static_cast<int>(args.integer(1, 1000000));
    } else if (args.is("--layers")) {
      options.layers = static_cast<int>(args.integer(1, kMaxLayers));
    } else if (args.is("--groups")) {
      options.groups = static_cast<int>(args.integer(1, kMaxGroups));
    } else if (args.is("--words")) {
      options.words = static_cast<int>(args.integer(2 * kInteriorBytes / 4, 64 * 1024 * 1024));
    } else if (args.is("--table")) {
      options.source = args.choice<Source>({{"pinned", Source::pinned},
                                            {"pageable", Source::pageable},
                                            {"kernel", Source::kernel},
                                            {"global", Source::global}});
    } else if (args.is("--through")) {
      options.written_only = args.choice<bool>({{"all", false}, {"written", true}});
    } else if (args.is("--alloc")) {
      options.async = args.choice<bool>({{"sync", false}, {"async", true}});
    } else if (args.is("--refresh")) {
      options.refresh = true;
    } else if (args.is("--table-in-large")) {
      options.table_in_large = true;
    } else if (args.is("--interior")) {
      options.interior = true;
    } else {
      apps::read_pattern_option(args, options.seed, options.module, options.self_test_corrupt, usage);
    }
  }
  if (options.module.empty()) options.module = apps::default_module_path();
  return options;
}

}  // namespace table
