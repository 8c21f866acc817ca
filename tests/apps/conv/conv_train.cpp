// conv_train: the two-stream convolution test app linked against libcuda.so.1.
#include "conv_model.hpp"

int main(int argc, char** argv) {
  const apps::Options options = apps::parse_options(argc, argv, apps::conv_defaults);
  return apps::train_conv(apps::linked_driver_api(), options);
}
