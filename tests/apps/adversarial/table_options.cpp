// Strict parsing of table_train's options: a typo never runs a different test.
#include "table_options.hpp"

#include "../common/options.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace table {
namespace {

constexpr const char* kProgram = "table_train";

[[noreturn]] void usage(int status) {
  std::FILE* out = status == 0 ? stdout : stderr;
  std::fprintf(out,
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

[[noreturn]] void bad_choice(const char* name, const char* text) {
  std::fprintf(stderr, "%s: %s does not take '%s'\n", kProgram, name, text);
  std::exit(2);
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
    } else if (std::strcmp(arg, "--steps") == 0 || std::strcmp(arg, "--iterations") == 0) {
      options.steps = static_cast<int>(parse_integer(arg, value(), 1, 1000000));
    } else if (std::strcmp(arg, "--layers") == 0) {
      options.layers = static_cast<int>(parse_integer(arg, value(), 1, kMaxLayers));
    } else if (std::strcmp(arg, "--groups") == 0) {
      options.groups = static_cast<int>(parse_integer(arg, value(), 1, kMaxGroups));
    } else if (std::strcmp(arg, "--words") == 0) {
      options.words = static_cast<int>(parse_integer(arg, value(), 2 * kInteriorBytes / 4, 64 * 1024 * 1024));
    } else if (std::strcmp(arg, "--table") == 0) {
      const char* v = value();
      if (std::strcmp(v, "pinned") == 0)
        options.source = Source::pinned;
      else if (std::strcmp(v, "pageable") == 0)
        options.source = Source::pageable;
      else if (std::strcmp(v, "kernel") == 0)
        options.source = Source::kernel;
      else if (std::strcmp(v, "global") == 0)
        options.source = Source::global;
      else
        bad_choice(arg, v);
    } else if (std::strcmp(arg, "--through") == 0) {
      const char* v = value();
      if (std::strcmp(v, "all") == 0)
        options.written_only = false;
      else if (std::strcmp(v, "written") == 0)
        options.written_only = true;
      else
        bad_choice(arg, v);
    } else if (std::strcmp(arg, "--alloc") == 0) {
      const char* v = value();
      if (std::strcmp(v, "sync") == 0)
        options.async = false;
      else if (std::strcmp(v, "async") == 0)
        options.async = true;
      else
        bad_choice(arg, v);
    } else if (std::strcmp(arg, "--refresh") == 0) {
      options.refresh = true;
    } else if (std::strcmp(arg, "--table-in-large") == 0) {
      options.table_in_large = true;
    } else if (std::strcmp(arg, "--interior") == 0) {
      options.interior = true;
    } else if (std::strcmp(arg, "--seed") == 0) {
      options.seed = static_cast<std::uint64_t>(parse_integer(arg, value(), 0, std::numeric_limits<long long>::max()));
    } else if (std::strcmp(arg, "--module") == 0) {
      options.module = value();
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

}  // namespace table
