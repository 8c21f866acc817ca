// Parsing of the graph options; everything else goes on to the common parser.
#include "graphed_options.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace apps::graphed {

namespace {

int parse_count(const char* program, const char* name, const char* text, int min, int max) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    std::fprintf(stderr, "%s: %s wants an integer in [%d, %d], got '%s'\n", program, name, min, max, text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

}  // namespace

GraphOptions parse_graph_options(int argc, char** argv, const GraphOptionDefaults& defaults) {
  GraphOptions options;
  const char* program = defaults.common.program;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", program, arg);
        std::exit(2);
      }
      return argv[++i];
    };
    if (std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0) {
      std::printf("%s: graph options: --hidden H (default 64, even) --warmup N (default 3)%s%s\n", program,
                  defaults.capture ? " --capture-mode global|thread-local|relaxed --graphs whole|split" : "",
                  defaults.capture ? "" : " --update-every N (default 4) --eager");
      rest.push_back(argv[i]);
    } else if (std::strcmp(arg, "--hidden") == 0) {
      options.hidden = parse_count(program, arg, value(), 2, 8192);
      if (options.hidden % 2 != 0) {
        std::fprintf(stderr, "%s: --hidden wants an even width\n", program);
        std::exit(2);
      }
    } else if (std::strcmp(arg, "--warmup") == 0) {
      options.warmup = parse_count(program, arg, value(), 0, 1000);
    } else if (!defaults.capture && std::strcmp(arg, "--eager") == 0) {
      options.eager = true;
    } else if (!defaults.capture && std::strcmp(arg, "--update-every") == 0) {
      options.update_every = parse_count(program, arg, value(), 1, 1000000);
    } else if (defaults.capture && std::strcmp(arg, "--capture-mode") == 0) {
      const char* mode = value();
      if (std::strcmp(mode, "global") == 0) {
        options.capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
      } else if (std::strcmp(mode, "thread-local") == 0) {
        options.capture_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
      } else if (std::strcmp(mode, "relaxed") == 0) {
        options.capture_mode = CU_STREAM_CAPTURE_MODE_RELAXED;
      } else {
        std::fprintf(stderr, "%s: --capture-mode wants global, thread-local or relaxed, got '%s'\n", program, mode);
        std::exit(2);
      }
    } else if (defaults.capture && std::strcmp(arg, "--graphs") == 0) {
      const char* shape = value();
      if (std::strcmp(shape, "whole") == 0) {
        options.shape = GraphShape::whole;
      } else if (std::strcmp(shape, "split") == 0) {
        options.shape = GraphShape::split;
      } else {
        std::fprintf(stderr, "%s: --graphs wants whole or split, got '%s'\n", program, shape);
        std::exit(2);
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  options.common = parse_options(static_cast<int>(rest.size()), rest.data(), defaults.common);
  return options;
}

}  // namespace apps::graphed
