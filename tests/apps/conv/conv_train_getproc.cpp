// conv_train_getproc: conv_train with every driver function resolved through dlopen +
// cuGetProcAddress_v2 (so the async allocation and _ptsz paths are exercised through the resolver).
#include "conv_model.hpp"

int main(int argc, char** argv) {
  apps::OptionDefaults defaults = apps::conv_defaults;
  defaults.program = "conv_train_getproc";
  defaults.getproc = true;
  const apps::Options options = apps::parse_options(argc, argv, defaults);
  const apps::DriverApi api = apps::getproc_driver_api({options.cuda_version, options.per_thread_default_stream});
  return apps::train_conv(api, options);
}
