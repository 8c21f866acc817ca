// Functions younger than the 2.17 floor that our carried binaries need (the static libstdc++
// calls them): hidden definitions that take every reference in the link and use the running
// glibc's own function when it has one, else compat's reimplementation (glibc_compat.hpp):
//   __cxa_thread_atexit_impl (GLIBC_2.18) thread_local destructors
//   getrandom, getentropy    (GLIBC_2.25) std::random_device; the system call itself always
//   pthread_cond_clockwait   (GLIBC_2.30) condition_variable waits on steady_clock
// Built only with MEMTOOL_GLIBC_PINS (compat/CMakeLists.txt), x86_64 only.
#include <pthread.h>
#include <sys/random.h>

#include "glibc_compat.hpp"

namespace {
using ClockWait = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);
using ThreadAtExit = int (*)(void (*)(void*), void*, void*);
ClockWait g_real_clockwait = nullptr;
ThreadAtExit g_real_thread_atexit = nullptr;

// Looked up once, before the program's own constructors (as glibc_compat.cpp does); a
// registration earlier than this takes the reimplementation, which works as well.
__attribute__((constructor(101))) void find_real_backported_functions() {
  g_real_clockwait = reinterpret_cast<ClockWait>(dlvsym(RTLD_DEFAULT, "pthread_cond_clockwait", "GLIBC_2.30"));
  g_real_thread_atexit = reinterpret_cast<ThreadAtExit>(dlvsym(RTLD_DEFAULT, "__cxa_thread_atexit_impl", "GLIBC_2.18"));
}
}  // namespace

extern "C" {

__attribute__((visibility("hidden"))) int pthread_cond_clockwait(pthread_cond_t* __restrict cond,
                                                                 pthread_mutex_t* __restrict mutex, clockid_t clock,
                                                                 const struct timespec* __restrict deadline) {
  return g_real_clockwait != nullptr ? g_real_clockwait(cond, mutex, clock, deadline)
                                     : memtool::compat::cond_clockwait(cond, mutex, clock, deadline);
}

__attribute__((visibility("hidden"))) int __cxa_thread_atexit_impl(void (*destructor)(void*), void* object,
                                                                   void* dso) noexcept {
  return g_real_thread_atexit != nullptr ? g_real_thread_atexit(destructor, object, dso)
                                         : memtool::compat::thread_atexit(destructor, object, dso);
}

__attribute__((visibility("hidden"))) ssize_t getrandom(void* buffer, size_t length, unsigned int flags) {
  return memtool::compat::random_bytes(buffer, length, flags);
}

__attribute__((visibility("hidden"))) int getentropy(void* buffer, size_t length) {
  return memtool::compat::entropy(buffer, length);
}

}  // extern "C"
