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

MappedFile::MappedFile(const std::string& path) {
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
      return;
    }
  }
  // Not mappable: read it all. Growth is geometric and bounded by what the source delivers.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::size_t used = 0;
  for (;;) {
    if (copy_.size() - used < kChunk) copy_.resize(used + kChunk);
    const ssize_t r = ::read(fd.get(), copy_.data() + used, copy_.size() - used);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(path, used, "cannot read");
    }
    if (r == 0) break;
    used += static_cast<std::size_t>(r);
  }
  copy_.resize(used);
  data_ = copy_.data();
  size_ = used;
}

MappedFile::~MappedFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

}  // namespace memtool::trace
