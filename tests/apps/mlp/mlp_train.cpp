// mlp_train: the MLP test app linked against libcuda.so.1 (fakecuda in tests, the driver on a GPU).
#include "mlp_model.hpp"

int main(int argc, char** argv) {
  const apps::Options options = apps::parse_options(argc, argv, apps::mlp_defaults);
  return apps::train_mlp(apps::linked_driver_api(), options);
}
