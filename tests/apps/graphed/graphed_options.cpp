// Parsing of the graph options; everything else goes on to the common parser.
#include "graphed_options.hpp"

#include "../common/arguments.hpp"

#include <cstdio>
#include <vector>

namespace apps::graphed {

GraphOptions parse_graph_options(int argc, char** argv, const GraphOptionDefaults& defaults) {
  GraphOptions options;
  const char* program = defaults.common.program;
  std::vector<char*> rest{argv[0]};
  Arguments args(program, argc, argv);
  while (args.next()) {
    if (args.is_help()) {
      std::printf("%s: graph options: --hidden H (default 64, even) --warmup N (default 3)%s%s\n", program,
                  defaults.capture ? " --capture-mode global|thread-local|relaxed --graphs whole|split" : "",
                  defaults.capture ? "" : " --update-every N (default 4) --eager");
      rest.push_back(args.current());
    } else if (args.is("--hidden")) {
      options.hidden = static_cast<int>(args.integer(2, 8192));
      if (options.hidden % 2 != 0) args.fail("--hidden wants an even width");
    } else if (args.is("--warmup")) {
      options.warmup = static_cast<int>(args.integer(0, 1000));
    } else if (!defaults.capture && args.is("--eager")) {
      options.eager = true;
    } else if (!defaults.capture && args.is("--update-every")) {
      options.update_every = static_cast<int>(args.integer(1, 1000000));
    } else if (defaults.capture && args.is("--capture-mode")) {
      options.capture_mode = args.choice<CUstreamCaptureMode>({{"global", CU_STREAM_CAPTURE_MODE_GLOBAL},
                                                               {"thread-local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL},
                                                               {"relaxed", CU_STREAM_CAPTURE_MODE_RELAXED}});
    } else if (defaults.capture && args.is("--graphs")) {
      options.shape = args.choice<GraphShape>({{"whole", GraphShape::whole}, {"split", GraphShape::split}});
    } else {
      rest.push_back(args.current());
    }
  }
  options.common = parse_options(static_cast<int>(rest.size()), rest.data(), defaults.common);
  return options;
}

}  // namespace apps::graphed
