// mlp_train_getproc: the MLP test app with no link to libcuda: every driver function comes from
// dlopen("libcuda.so.1") + cuGetProcAddress_v2, as cudart gets them. Prints the same lines as
// mlp_train for the same options.
#include "mlp_model.hpp"

int main(int argc, char** argv) {
  apps::OptionDefaults defaults = apps::mlp_defaults;
  defaults.program = "mlp_train_getproc";
  defaults.getproc = true;
  const apps::Options options = apps::parse_options(argc, argv, defaults);
  const apps::DriverApi api = apps::getproc_driver_api({options.cuda_version, options.per_thread_default_stream});
  return apps::train_mlp(api, options);
}
