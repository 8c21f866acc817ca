// Log sink: "memtool[pid]: level: message\n" in one write(2).
#include "memtool/interpose/log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace memtool::interpose {

std::atomic<LogLevel> Log::level_{LogLevel::warn};
std::atomic<int> Log::fd_{-1};

void Log::emit(LogLevel level, std::string_view message) noexcept {
  constexpr std::size_t kPrefixBytes = 64;  // "memtool[pid]: level: "
  char line[kMessageBytes + kPrefixBytes];
  std::size_t size = 0;
  try {  // into a fixed buffer: no allocation, but a hook must never throw
    size = fmt::format_to_n(line, sizeof(line) - 1, "memtool[{}]: {}: {}", static_cast<long>(getpid()),
                            to_string(level), message)
               .size;
  } catch (...) {
    size = message.copy(line, sizeof(line) - 1);
  }
  if (size > sizeof(line) - 1) size = sizeof(line) - 1;
  line[size++] = '\n';
  int fd = fd_.load(std::memory_order_relaxed);
  if (fd < 0) fd = STDERR_FILENO;
  const int saved_errno = errno;  // a hook must not change the program's errno
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, line + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  errno = saved_errno;
}

int Log::open_file(const std::string& path, std::string* error) noexcept {
  const int saved_errno = errno;
  auto refuse = [&](const char* why) {
    try {
      *error = why;
    } catch (...) {}
    errno = saved_errno;
    return -1;
  };
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return refuse(errno == ENXIO ? "a FIFO nobody reads, not a regular file" : std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return refuse("not a regular file (a FIFO, a device or a directory)");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  errno = saved_errno;
  return fd;
}

}  // namespace memtool::interpose
