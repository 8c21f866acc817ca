// The bytes of a file, opened and read once, for readers that parse in place: mmap for regular
// files (no copy, the kernel reads ahead), a plain read into memory for anything that cannot be
// mapped (pipes, FIFOs, /dev/stdin, empty files). Whoever needs to look at a file more than once
// (sniff its kind, then parse it) keeps one of these: a pipe cannot be opened twice.
//
// A stream is never read whole on trust: the caller's HeadCheck sees its first kHeadBytes (a
// regular file's too) and refuses by throwing before any more is read, so /dev/zero or a pipe of
// garbage costs kHeadBytes; and a stream that passes is read up to kMaxStreamBytes at most.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memtool::trace {

class MappedFile {
 public:
  // How much of the input a HeadCheck sees (less when the input is shorter).
  static constexpr std::size_t kHeadBytes = 4096;
  // Called with the input's first bytes before the rest of a stream is read; throws to refuse.
  using HeadCheck = std::function<void(std::string_view head)>;

  // Throws InputError(path, 0, ...) when the file cannot be opened or read, and InputError when a
  // stream passes kMaxStreamBytes(); `check` (when set) may throw what it likes.
  explicit MappedFile(const std::string& path, const HeadCheck& check = {});
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  [[nodiscard]] std::span<const std::byte> bytes() const { return {data_, size_}; }
  [[nodiscard]] std::string_view text() const { return {reinterpret_cast<const char*>(data_), size_}; }

  // The most a stream (pipe, FIFO, device) is read into memory: half the machine's physical
  // memory, so a stream that never ends is an error message instead of bad_alloc.
  [[nodiscard]] static std::size_t max_stream_bytes();

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  void* mapping_ = nullptr;  // non-null when data_ is an mmap
  std::vector<std::byte> copy_;
};

}  // namespace memtool::trace
