// The fallbacks of glibc_compat.cpp, callable on their own (for tests: on the development
// machine the real functions exist, so the fallbacks would otherwise never run).
#pragma once

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <cstddef>
#include <cstdint>

namespace memtool::compat {

// arc4random() without arc4random: getrandom(2), else /dev/urandom.
std::uint32_t random_u32() noexcept;

// _dl_find_object() without _dl_find_object: the loaded object whose PT_LOAD segments contain
// `address`, found with dl_iterate_phdr (map bounds, link map, PT_GNU_EH_FRAME). 0 on
// success, -1 when no object contains `address`.
int find_object(void* address, dl_find_object* result) noexcept;

// getrandom() (GLIBC_2.25) as the system call itself: bytes written, or -1 with errno.
long random_bytes(void* buffer, std::size_t length, unsigned flags) noexcept;

// getentropy() (GLIBC_2.25): `length` (at most 256) random bytes, 0; else -1 with errno (EIO).
int entropy(void* buffer, std::size_t length) noexcept;

// pthread_cond_clockwait() (GLIBC_2.30) without it: the CLOCK_MONOTONIC deadline becomes a
// CLOCK_REALTIME one for pthread_cond_timedwait (what libstdc++ itself does without it). A
// realtime clock step during the wait makes it end early or late: a spurious wakeup or a late
// one, which condition_variable's callers already handle. EINVAL for other clocks.
int cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock, const timespec* deadline) noexcept;

// __cxa_thread_atexit_impl() (GLIBC_2.18) without it: `destructor(object)` runs when the calling
// thread exits (a pthread key's destructor; at exit() for the main thread), the last
// registered first. 0, or -1 when out of memory. `dso` is not used: glibc pins the object that
// registered until then, and ours are the program itself or libmemtool.so (-z nodelete).
int thread_atexit(void (*destructor)(void*), void* object, void* dso) noexcept;

}  // namespace memtool::compat
