// The glibc shims' fallbacks give what the real functions give (both exist on the development
// machine, so the fallbacks are compared with the real thing directly or with the documented
// behaviour), and, with MEMTOOL_GLIBC_PINS, the pinned start and stat of this very program work.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "glibc_compat.hpp"

namespace {
int a_function_in_this_program() { return 42; }
}  // namespace

TEST_CASE("find_object answers as _dl_find_object does", "[compat]") {
  using Real = int (*)(void*, dl_find_object*);
  const auto real = reinterpret_cast<Real>(dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35"));
  if (real == nullptr) {
    WARN("this glibc has no _dl_find_object to compare with");
    return;
  }
  void* in_program = reinterpret_cast<void*>(&a_function_in_this_program);
  void* in_libc = dlsym(RTLD_DEFAULT, "strlen");
  REQUIRE(in_libc != nullptr);
  for (void* address : {in_program, in_libc}) {
    dl_find_object expected{};
    dl_find_object found{};
    REQUIRE(real(address, &expected) == 0);
    REQUIRE(memtool::compat::find_object(address, &found) == 0);
    CHECK(found.dlfo_map_start == expected.dlfo_map_start);
    CHECK(found.dlfo_map_end == expected.dlfo_map_end);
    CHECK(found.dlfo_eh_frame == expected.dlfo_eh_frame);
    CHECK(found.dlfo_link_map == expected.dlfo_link_map);
  }
  dl_find_object none{};
  CHECK(memtool::compat::find_object(reinterpret_cast<void*>(16), &none) == -1);
  CHECK(real(reinterpret_cast<void*>(16), &none) == -1);
  CHECK(a_function_in_this_program() == 42);
}

TEST_CASE("random_u32 draws different values", "[compat]") {
  std::set<std::uint32_t> values;
  for (int i = 0; i < 16; ++i) values.insert(memtool::compat::random_u32());
  CHECK(values.size() > 8);  // 16 draws of 32 bits: a repeat is a 1-in-10^7 event, eight are impossible
}

TEST_CASE("entropy fills the buffer and refuses more than 256 bytes", "[compat]") {
  std::vector<unsigned char> first(256, 0);
  std::vector<unsigned char> second(256, 0);
  REQUIRE(memtool::compat::entropy(first.data(), first.size()) == 0);
  REQUIRE(memtool::compat::entropy(second.data(), second.size()) == 0);
  CHECK(first != second);  // 2048 random bits twice alike: impossible
  std::vector<unsigned char> too_many(257, 0);
  errno = 0;
  CHECK(memtool::compat::entropy(too_many.data(), too_many.size()) == -1);
  CHECK(errno == EIO);
  CHECK(memtool::compat::random_bytes(first.data(), 16, 0) == 16);
}

TEST_CASE("cond_clockwait waits until a CLOCK_MONOTONIC deadline", "[compat]") {
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  constexpr long kWaitNanos = 50'000'000;
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  timespec deadline = start;
  deadline.tv_nsec += kWaitNanos;
  if (deadline.tv_nsec >= 1'000'000'000) {
    deadline.tv_nsec -= 1'000'000'000;
    deadline.tv_sec += 1;
  }
  pthread_mutex_lock(&mutex);
  int result = 0;
  do {  // a spurious wakeup is allowed; nobody signals, so the wait must end in ETIMEDOUT
    result = memtool::compat::cond_clockwait(&cond, &mutex, CLOCK_MONOTONIC, &deadline);
  } while (result == 0);
  CHECK(result == ETIMEDOUT);
  timespec end{};
  clock_gettime(CLOCK_MONOTONIC, &end);
  const long long waited = (end.tv_sec - start.tv_sec) * 1'000'000'000LL + (end.tv_nsec - start.tv_nsec);
  CHECK(waited >= kWaitNanos - 1'000'000);  // realtime clock granularity around the conversion
  CHECK(memtool::compat::cond_clockwait(&cond, &mutex, CLOCK_MONOTONIC, &start) == ETIMEDOUT);  // already past
  CHECK(memtool::compat::cond_clockwait(&cond, &mutex, CLOCK_PROCESS_CPUTIME_ID, &deadline) == EINVAL);
  timespec bad = deadline;
  bad.tv_nsec = 1'000'000'000;
  CHECK(memtool::compat::cond_clockwait(&cond, &mutex, CLOCK_MONOTONIC, &bad) == EINVAL);
  pthread_mutex_unlock(&mutex);
}

TEST_CASE("cond_clockwait wakes on a signal", "[compat]") {
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  bool ready = false;
  std::thread signaller([&] {
    pthread_mutex_lock(&mutex);
    ready = true;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&mutex);
  });
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += 30;
  pthread_mutex_lock(&mutex);
  int result = 0;
  while (!ready && result == 0) result = memtool::compat::cond_clockwait(&cond, &mutex, CLOCK_MONOTONIC, &deadline);
  pthread_mutex_unlock(&mutex);
  signaller.join();
  CHECK(result == 0);
  CHECK(ready);
}

namespace {
std::vector<int> g_thread_exit_order;
void record_one(void*) { g_thread_exit_order.push_back(1); }
void record_three(void*) { g_thread_exit_order.push_back(3); }
void record_two_and_register_three(void*) {
  g_thread_exit_order.push_back(2);
  memtool::compat::thread_atexit(record_three, nullptr, nullptr);  // registered while exiting
}
}  // namespace

TEST_CASE("thread_atexit runs a thread's destructors at its exit, newest first", "[compat]") {
  g_thread_exit_order.clear();
  std::thread thread([] {
    REQUIRE(memtool::compat::thread_atexit(record_one, nullptr, nullptr) == 0);
    REQUIRE(memtool::compat::thread_atexit(record_two_and_register_three, nullptr, nullptr) == 0);
    g_thread_exit_order.push_back(0);  // still running: nothing has run yet
  });
  thread.join();
  CHECK(g_thread_exit_order == std::vector<int>{0, 2, 1, 3});
}

#ifdef MEMTOOL_GLIBC_PINS
namespace {
int g_constructor_runs = 0;
const int g_counted = ++g_constructor_runs;
}  // namespace

TEST_CASE("the pinned __libc_start_main runs the program's constructors once", "[compat]") {
  CHECK(g_counted == 1);
  CHECK(g_constructor_runs == 1);
}

TEST_CASE("the pinned stat family answers as this glibc's own", "[compat]") {
  using Stat = int (*)(const char*, struct stat*);
  using FStat = int (*)(int, struct stat*);
  const auto real_stat = reinterpret_cast<Stat>(dlvsym(RTLD_DEFAULT, "stat", "GLIBC_2.33"));
  const auto real_lstat = reinterpret_cast<Stat>(dlvsym(RTLD_DEFAULT, "lstat", "GLIBC_2.33"));
  const auto real_fstat = reinterpret_cast<FStat>(dlvsym(RTLD_DEFAULT, "fstat", "GLIBC_2.33"));
  if (real_stat == nullptr || real_lstat == nullptr || real_fstat == nullptr) {
    WARN("this glibc has no stat@GLIBC_2.33 to compare with");
    return;
  }
  const char* link = "/proc/self/exe";  // a symbolic link to a regular file
  struct stat ours {};
  struct stat theirs {};
  REQUIRE(stat(link, &ours) == 0);
  REQUIRE(real_stat(link, &theirs) == 0);
  CHECK(S_ISREG(ours.st_mode));
  CHECK(ours.st_ino == theirs.st_ino);
  CHECK(ours.st_size == theirs.st_size);
  REQUIRE(lstat(link, &ours) == 0);
  REQUIRE(real_lstat(link, &theirs) == 0);
  CHECK(S_ISLNK(ours.st_mode));
  CHECK(ours.st_ino == theirs.st_ino);
  REQUIRE(fstat(0, &ours) == real_fstat(0, &theirs));
  CHECK(ours.st_mode == theirs.st_mode);
  errno = 0;
  CHECK(stat("/nonexistent/memtool", &ours) == -1);
  CHECK(errno == ENOENT);
}
#endif
