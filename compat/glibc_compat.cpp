// Binaries we carry to other machines — libmemtool.so above all, preloaded into programs on
// GPU machines with other distributions — link libstdc++ and libgcc's unwinder statically.
// Built against glibc 2.36, those two pull in symbols younger than many GPU machines' glibc:
//   arc4random       (GLIBC_2.36) from libstdc++'s std::random_device (exceptions bring it in;
//                    nothing of ours draws random numbers from it)
//   _dl_find_object  (GLIBC_2.35) from libgcc's unwinder: exceptions and stack capture
// and the loader refuses the whole library on a glibc without them (Ubuntu 22.04 has 2.35,
// RHEL 9 has 2.34). Hidden definitions here satisfy those references inside our own binaries,
// so the system is never asked for them: the real function when the running glibc has it
// (found with dlvsym), the older way otherwise. The oldest glibc the binaries then need is
// 2.34; glibc_pins.cpp, glibc_backports.cpp and glibc_executable.cpp (MEMTOOL_GLIBC_PINS) take it
// down to 2.17 (tests/packaging/check_wheel_floor.sh checks the wheel's binaries).
#include "glibc_compat.hpp"

#include <fcntl.h>
#include <link.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace memtool::compat {

std::uint32_t random_u32() noexcept {
  std::uint32_t value = 0;
  for (;;) {
    const ssize_t n = getrandom(&value, sizeof(value), 0);
    if (n == static_cast<ssize_t>(sizeof(value))) return value;
    if (n < 0 && errno == EINTR) continue;
    break;  // ENOSYS (a very old kernel) or a short read: the device file
  }
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const ssize_t n = ::read(fd, &value, sizeof(value));
    ::close(fd);
    if (n == static_cast<ssize_t>(sizeof(value))) return value;
  }
  // No entropy source at all: what std::random_device does in that case is throw; we are
  // called from inside it only, so a fixed mix of the clock and address is an acceptable answer.
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(&value) ^ static_cast<std::uintptr_t>(getpid()));
}

namespace {

struct Search {
  std::uintptr_t address = 0;
  dl_find_object* result = nullptr;
  bool found = false;
};

int visit(dl_phdr_info* info, size_t, void* data) {
  Search& search = *static_cast<Search*>(data);
  std::uintptr_t low = UINTPTR_MAX;
  std::uintptr_t high = 0;
  std::uintptr_t eh_frame = 0;
  bool contains = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type == PT_LOAD) {
      low = start < low ? start : low;
      high = start + segment.p_memsz > high ? start + segment.p_memsz : high;
      if (search.address - start < segment.p_memsz) contains = true;
    } else if (segment.p_type == PT_GNU_EH_FRAME) {
      eh_frame = start;
    }
  }
  if (!contains) return 0;
  dl_find_object& out = *search.result;
  out.dlfo_map_start = reinterpret_cast<void*>(low);
  out.dlfo_map_end = reinterpret_cast<void*>(high);
  out.dlfo_eh_frame = reinterpret_cast<void*>(eh_frame);
  search.found = true;
  return 1;
}

}  // namespace

int find_object(void* address, dl_find_object* result) noexcept {
  std::memset(result, 0, sizeof(*result));
  Search search;
  search.address = reinterpret_cast<std::uintptr_t>(address);
  search.result = result;
  dl_iterate_phdr(visit, &search);
  if (!search.found) return -1;
  Dl_info info{};
  void* map = nullptr;
  if (dladdr1(address, &info, &map, RTLD_DL_LINKMAP) != 0) result->dlfo_link_map = static_cast<link_map*>(map);
  return 0;
}

long random_bytes(void* buffer, std::size_t length, unsigned flags) noexcept {
  return syscall(SYS_getrandom, buffer, length, flags);
}

int entropy(void* buffer, std::size_t length) noexcept {
  constexpr std::size_t kMostBytes = 256;  // getentropy's documented limit
  if (length > kMostBytes) {
    errno = EIO;
    return -1;
  }
  auto* bytes = static_cast<unsigned char*>(buffer);
  std::size_t done = 0;
  while (done < length) {
    const long n = random_bytes(bytes + done, length - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;  // ENOSYS: a kernel older than 3.17
    }
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

int cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock, const timespec* deadline) noexcept {
  constexpr long long kNanosPerSecond = 1'000'000'000;
  if (deadline->tv_nsec < 0 || deadline->tv_nsec >= kNanosPerSecond) return EINVAL;
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, deadline);
  if (clock != CLOCK_MONOTONIC) return EINVAL;
  timespec now_steady{};
  timespec now_real{};
  clock_gettime(CLOCK_MONOTONIC, &now_steady);
  clock_gettime(CLOCK_REALTIME, &now_real);
  long long remaining = (static_cast<long long>(deadline->tv_sec) - now_steady.tv_sec) * kNanosPerSecond +
                        (deadline->tv_nsec - now_steady.tv_nsec);
  if (remaining < 0) remaining = 0;
  const long long real_nanos = now_real.tv_nsec + remaining % kNanosPerSecond;
  timespec real_deadline{};
  real_deadline.tv_sec =
      static_cast<time_t>(now_real.tv_sec + remaining / kNanosPerSecond + real_nanos / kNanosPerSecond);
  real_deadline.tv_nsec = static_cast<long>(real_nanos % kNanosPerSecond);
  return pthread_cond_timedwait(cond, mutex, &real_deadline);
}

namespace {

// One thread's registered destructors, newest first, held as the value of a pthread key.
struct ThreadExitCall {
  void (*destructor)(void*);
  void* object;
  ThreadExitCall* next;
};
pthread_key_t g_thread_exit_key;
pthread_once_t g_thread_exit_once = PTHREAD_ONCE_INIT;
bool g_thread_exit_key_made = false;

// The key's destructor (glibc has already cleared the value). A destructor may register more:
// they land in the key's value again and run after this list.
void run_thread_exit_calls(void* head) {
  auto* call = static_cast<ThreadExitCall*>(head);
  while (call != nullptr) {
    call->destructor(call->object);
    ThreadExitCall* next = call->next;
    std::free(call);
    call = next;
    if (call == nullptr) {
      call = static_cast<ThreadExitCall*>(pthread_getspecific(g_thread_exit_key));
      pthread_setspecific(g_thread_exit_key, nullptr);
    }
  }
}

// Key destructors do not run for the thread that calls exit(): its list runs at exit.
void run_exiting_thread_calls() {
  void* head = pthread_getspecific(g_thread_exit_key);
  pthread_setspecific(g_thread_exit_key, nullptr);
  run_thread_exit_calls(head);
}

void make_thread_exit_key() {
  g_thread_exit_key_made = pthread_key_create(&g_thread_exit_key, run_thread_exit_calls) == 0;
  if (g_thread_exit_key_made) std::atexit(run_exiting_thread_calls);
}

}  // namespace

int thread_atexit(void (*destructor)(void*), void* object, void*) noexcept {
  pthread_once(&g_thread_exit_once, make_thread_exit_key);
  if (!g_thread_exit_key_made) return -1;
  auto* call = static_cast<ThreadExitCall*>(std::malloc(sizeof(ThreadExitCall)));
  if (call == nullptr) return -1;
  *call = ThreadExitCall{destructor, object, static_cast<ThreadExitCall*>(pthread_getspecific(g_thread_exit_key))};
  if (pthread_setspecific(g_thread_exit_key, call) != 0) {
    std::free(call);
    return -1;
  }
  return 0;
}

}  // namespace memtool::compat

// The real functions, when the running glibc has them: looked up once at load time, so the
// unwinder never calls into the loader for them. Until then (an exception in an earlier
// constructor) the fallbacks answer.
namespace {
std::uint32_t (*g_real_arc4random)() = nullptr;
int (*g_real_dl_find_object)(void*, dl_find_object*) = nullptr;

__attribute__((constructor(101))) void find_real_functions() {
  g_real_arc4random = reinterpret_cast<std::uint32_t (*)()>(dlvsym(RTLD_DEFAULT, "arc4random", "GLIBC_2.36"));
  g_real_dl_find_object =
      reinterpret_cast<int (*)(void*, dl_find_object*)>(dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35"));
}
}  // namespace

extern "C" {

__attribute__((visibility("hidden"))) std::uint32_t arc4random() noexcept {
  return g_real_arc4random != nullptr ? g_real_arc4random() : memtool::compat::random_u32();
}

__attribute__((visibility("hidden"))) int _dl_find_object(void* address, dl_find_object* result) noexcept {
  return g_real_dl_find_object != nullptr ? g_real_dl_find_object(address, result)
                                          : memtool::compat::find_object(address, result);
}

}  // extern "C"
