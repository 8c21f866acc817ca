// graphed_train_getproc: the PyTorch-shaped graph program with every driver function from
// cuGetProcAddress_v2, as cudart (and so PyTorch) reaches the capture and graph entry points.
#include "torch_graph_train.hpp"

int main(int argc, char** argv) {
  apps::graphed::GraphOptionDefaults defaults = apps::graphed::torch_graph_defaults;
  defaults.common.program = "graphed_train_getproc";
  defaults.common.getproc = true;
  const apps::graphed::GraphOptions options = apps::graphed::parse_graph_options(argc, argv, defaults);
  const apps::DriverApi api =
      apps::getproc_driver_api({options.common.cuda_version, options.common.per_thread_default_stream});
  return apps::graphed::train_torch_graphed(api, options);
}
