// The graphed apps' options: the common ones (common/options.hpp) and what the graph programs add.
#pragma once

#include "../common/options.hpp"

#include <cuda.h>

namespace apps::graphed {

enum class GraphShape { whole, split };

struct GraphOptions {
  Options common;
  CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  GraphShape shape = GraphShape::whole;
  int hidden = 64;       // width of the first hidden layer (the second is half)
  int warmup = 3;        // eager steps before the capture (what torch.cuda.graph's docs ask for)
  int update_every = 4;  // xla_train: rebuild the graph and cuGraphExecUpdate every N steps
  bool eager = false;    // xla_train: the same work launched without a graph
};

struct GraphOptionDefaults {
  OptionDefaults common;
  bool capture;  // accepts --capture-mode and --graphs
};

// Parses argv: the graph options here, the rest by parse_options; exits 2 on a bad value.
GraphOptions parse_graph_options(int argc, char** argv, const GraphOptionDefaults& defaults);

}  // namespace apps::graphed
