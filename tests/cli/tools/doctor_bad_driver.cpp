// A libcuda stand-in that misbehaves where `memtool doctor` calls it, to show that the doctor
// survives it: DOCTOR_BAD_DRIVER=hang makes cuInit never return, =crash makes it fault.
// cuDriverGetVersion answers, so the doctor gets as far as cuInit.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

extern "C" {

__attribute__((visibility("default"))) int cuDriverGetVersion(int* version) {
  *version = 12040;
  return 0;
}

__attribute__((visibility("default"))) int cuInit(unsigned) {
  const char* how = std::getenv("DOCTOR_BAD_DRIVER");
  if (how != nullptr && std::strcmp(how, "crash") == 0) std::raise(SIGSEGV);
  for (;;) pause();  // "hang", or anything else
}

}  // extern "C"
