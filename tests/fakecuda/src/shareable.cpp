// Reaching the files other processes share with us, and the small I/O helpers around them.
#include "shareable.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>

namespace fakecuda {

std::uint64_t random_nonce() {
  std::random_device rd;
  std::uint64_t n = 0;
  while (n == 0) {
    n = (std::uint64_t{rd()} << 32) ^ rd();
  }
  return n;
}

int open_foreign_fd(pid_t pid, int fd) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(pid), fd);
  int out = open(path, O_RDWR | O_CLOEXEC);
  if (out >= 0) {
    return out;
  }
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    out = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
    close(pidfd);
    if (out >= 0) {
      fcntl(out, F_SETFD, FD_CLOEXEC);
      return out;
    }
  }
#endif
  return -1;
}

bool file_size_allowed(std::uint64_t bytes) {
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return true;
  }
  return bytes <= static_cast<std::uint64_t>(limit.rlim_cur);
}

int reopen_fd(int fd) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  return open(path, O_RDWR | O_CLOEXEC);
}

bool read_at(int fd, void* data, std::size_t bytes, std::uint64_t offset) {
  auto* out = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = pread(fd, out, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    out += n;
    bytes -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool write_at(int fd, const void* data, std::size_t bytes, std::uint64_t offset) {
  const auto* in = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = pwrite(fd, in, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    in += n;
    bytes -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

}  // namespace fakecuda
