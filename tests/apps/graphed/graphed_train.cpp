// graphed_train: the PyTorch-shaped graph program linked against libcuda.so.1.
#include "torch_graph_train.hpp"

int main(int argc, char** argv) {
  const apps::graphed::GraphOptions options =
      apps::graphed::parse_graph_options(argc, argv, apps::graphed::torch_graph_defaults);
  return apps::graphed::train_torch_graphed(apps::linked_driver_api(), options);
}
