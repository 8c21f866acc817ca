// Whole-file and head-of-file reads for the importers (see file_bytes.hpp).
#include "file_bytes.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "memtool/trace/input_error.hpp"

namespace memtool::trace::detail {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_or_throw(const std::string& path) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  return file;
}

// Reads up to `limit` bytes (everything when limit is npos) in chunks, so no size has to be
// trusted before the bytes are actually there.
std::string read_up_to(const std::string& path, std::size_t limit) {
  File file = open_or_throw(path);
  std::string bytes;
  char chunk[1 << 16];
  while (bytes.size() < limit) {
    const std::size_t want = limit - bytes.size() < sizeof chunk ? limit - bytes.size() : sizeof chunk;
    const std::size_t got = std::fread(chunk, 1, want, file.get());
    bytes.append(chunk, got);
    if (got < want) {
      if (std::ferror(file.get()) != 0) {
        throw InputError(path, bytes.size(), std::string("read failed: ") + std::strerror(errno));
      }
      break;
    }
  }
  return bytes;
}

}  // namespace

std::string read_file_bytes(const std::string& path) { return read_up_to(path, std::string::npos); }

std::string read_file_head(const std::string& path, std::size_t count) { return read_up_to(path, count); }

}  // namespace memtool::trace::detail
