// DriverApi from the symbols of the libcuda.so.1 this program is linked against.
#include "driver_api.hpp"

namespace apps {

DriverApi linked_driver_api() {
  DriverApi api;
#define APP_DRIVER_FN(symbol, request, until) api.symbol = &::symbol;
#define APP_DRIVER_FN_SINCE(symbol, request, since)  // a linked program uses the classic ABI
#include "driver_api.def"
#undef APP_DRIVER_FN
#undef APP_DRIVER_FN_SINCE
  return api;
}

}  // namespace apps
