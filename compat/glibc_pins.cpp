// Keeps the carried binaries' glibc floor at 2.17 where the build machine's glibc (2.36) gives a
// function a newer default version than the function itself (glibc_pins.def): hidden
// definitions here take every reference in the link, ours and the static libstdc++'s, and call
// the older version, so the loader never asks the system for GLIBC_2.34 or 2.32. Also the stat
// family (2.33 made stat/fstat/lstat real functions; before, they were inline calls of
// __xstat & co., which every glibc still exports) and __libc_single_threaded (2.32: a variable
// libstdc++ reads to skip atomics; ours stays 0, "maybe threaded", which is always correct).
// No header is included: the declarations below would conflict with glibc's prototypes.
// Built only with MEMTOOL_GLIBC_PINS (compat/CMakeLists.txt), x86_64 only.

#define MEMTOOL_GLIBC_PIN(ret, name, params, args, version)           \
  extern "C" ret memtool_glibc_old_##name params;                     \
  __asm__(".symver memtool_glibc_old_" #name ", " #name "@" version); \
  extern "C" __attribute__((visibility("hidden"))) ret name params { return memtool_glibc_old_##name args; }
#include "glibc_pins.def"

// _STAT_VER on x86_64: the struct stat layout the __xstat family fills (the only one since 2.0).
constexpr int kStatVersion = 1;
MEMTOOL_GLIBC_PIN(int, __xstat, (int version, const char* path, void* buf), (version, path, buf), "GLIBC_2.2.5")
MEMTOOL_GLIBC_PIN(int, __lxstat, (int version, const char* path, void* buf), (version, path, buf), "GLIBC_2.2.5")
MEMTOOL_GLIBC_PIN(int, __fxstat, (int version, int fd, void* buf), (version, fd, buf), "GLIBC_2.2.5")
MEMTOOL_GLIBC_PIN(int, __fxstat64, (int version, int fd, void* buf), (version, fd, buf), "GLIBC_2.2.5")
#undef MEMTOOL_GLIBC_PIN

extern "C" {
__attribute__((visibility("hidden"))) int stat(const char* path, void* buf) { return __xstat(kStatVersion, path, buf); }
__attribute__((visibility("hidden"))) int lstat(const char* path, void* buf) {
  return __lxstat(kStatVersion, path, buf);
}
__attribute__((visibility("hidden"))) int fstat(int fd, void* buf) { return __fxstat(kStatVersion, fd, buf); }
__attribute__((visibility("hidden"))) int fstat64(int fd, void* buf) { return __fxstat64(kStatVersion, fd, buf); }

__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}  // extern "C"
