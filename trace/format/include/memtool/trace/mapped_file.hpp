// The bytes of a file, opened and read once, for readers that parse in place: mmap for regular
// files (no copy, the kernel reads ahead), a plain read into memory for anything that cannot be
// mapped (pipes, FIFOs, /dev/stdin, empty files). Whoever needs to look at a file more than once
// (sniff its kind, then parse it) keeps one of these: a pipe cannot be opened twice.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memtool::trace {

class MappedFile {
 public:
  // Throws InputError(path, 0, ...) when the file cannot be opened or read.
  explicit MappedFile(const std::string& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  [[nodiscard]] std::span<const std::byte> bytes() const { return {data_, size_}; }
  [[nodiscard]] std::string_view text() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  void* mapping_ = nullptr;  // non-null when data_ is an mmap
  std::vector<std::byte> copy_;
};

}  // namespace memtool::trace
