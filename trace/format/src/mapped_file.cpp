// MappedFile: see memtool/trace/mapped_file.hpp.
#include "memtool/trace/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memtool/trace/input_error.hpp"

namespace memtool::trace {

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void fail(const std::string& path, std::uint64_t offset, const char* what) {
  throw InputError(path, offset, std::string(what) + ": " + std::strerror(errno));
}

}  // namespace

std::size_t MappedFile::max_stream_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  constexpr std::size_t kUnknownMemory = std::size_t{1} << 32;  // when sysconf cannot say
  if (pages <= 0 || page_size <= 0) return kUnknownMemory;
  return static_cast<std::size_t>(pages) / 2 * static_cast<std::size_t>(page_size);
}

MappedFile::MappedFile(const std::string& path, const HeadCheck& check) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail(path, 0, "cannot open");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(path, 0, "cannot stat");
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (m != MAP_FAILED) {
      ::madvise(m, size, MADV_SEQUENTIAL);
      mapping_ = m;
      data_ = static_cast<const std::byte*>(m);
      size_ = size;
      if (check) check(text().substr(0, kHeadBytes));
      return;
    }
  }
  // Not mappable: read the head, let the caller judge it, then the rest up to the bound.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  const std::size_t limit = max_stream_bytes();
  std::size_t used = 0;
  bool head_checked = !check;
  for (;;) {
    const std::size_t want = head_checked ? kChunk : kHeadBytes;
    if (copy_.size() - used < want) copy_.resize(used + want);
    const ssize_t r = ::read(fd.get(), copy_.data() + used, head_checked ? copy_.size() - used : kHeadBytes - used);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(path, used, "cannot read");
    }
    used += static_cast<std::size_t>(r);
    if (!head_checked && (r == 0 || used == kHeadBytes)) {
      check(std::string_view(reinterpret_cast<const char*>(copy_.data()), used));
      head_checked = true;
    }
    if (r == 0) break;
    if (used > limit) {
      throw InputError(path, used,
                       "this stream is larger than " + std::to_string(limit >> 20) +
                           " MiB, half this machine's memory: save it to a regular file, which is mapped, not copied");
    }
  }
  copy_.resize(used);
  data_ = copy_.data();
  size_ = used;
}

MappedFile::~MappedFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

}  // namespace memtool::trace
