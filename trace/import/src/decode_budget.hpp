// DecodeBudget: the memory a PyTorch snapshot may take while we decode it, a fixed multiple of
// its size.
//
// Bounding work per opcode is not enough: the pickle memo and DUP let one byte stand for a whole
// value (a dict DUP'd N times is N entries for N bytes), so everything that grows with the
// decoded document charges its bytes here — the value tree (values, container slots, text), the
// schema walk's entries, interned strings and stacks, and the events it will deliver (at what a
// consumer such as TraceModel keeps per event). The decoders turn an overdraft into one
// InputError at the offset where it happened. Real snapshots are charged 4 to 9 bytes per input
// byte (tests/unit/trace_import/test_memory_bounds.cpp measures them), under half the limit.
// What is charged is what the structures hold; the heap they take is within about twice that
// (vector growth), plus the input itself.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <string>

namespace memtool::trace::detail {

class DecodeBudget {
 public:
  static constexpr std::uint64_t kBytesPerInputByte = 24;
  static constexpr std::uint64_t kBaseBytes = std::uint64_t{16} << 20;
  // What a consumer keeps per delivered event (TraceModel: a 48-byte event, and for an
  // allocation a buffer record and its entry in the index of live buffers).
  static constexpr std::uint64_t kDeliveredEventBytes = 160;

  // Thrown by the value tree, which knows no file name or offset; the decoders catch it.
  struct Exceeded : std::exception {
    [[nodiscard]] const char* what() const noexcept override { return "decode budget exceeded"; }
  };

  explicit DecodeBudget(std::uint64_t input_bytes)
      : input_bytes_(input_bytes),
        limit_(input_bytes > (~std::uint64_t{0} - kBaseBytes) / kBytesPerInputByte
                   ? ~std::uint64_t{0}
                   : input_bytes * kBytesPerInputByte + kBaseBytes) {}

  // False (and nothing charged) when `bytes` more would pass the limit.
  [[nodiscard]] bool try_charge(std::uint64_t bytes) {
    if (bytes > limit_ - used_) return false;
    used_ += bytes;
    return true;
  }
  void charge(std::uint64_t bytes) {
    if (!try_charge(bytes)) throw Exceeded{};
  }

  [[nodiscard]] std::uint64_t used() const { return used_; }
  [[nodiscard]] std::uint64_t limit() const { return limit_; }

  [[nodiscard]] std::string message() const {
    return fmt::format(
        "decoding it would take more than {} MiB of memory, the most a {}-byte snapshot may take ({} bytes "
        "per input byte + {} MiB): repeated references (pickle memo, DUP) multiply what it holds",
        limit_ >> 20, input_bytes_, kBytesPerInputByte, kBaseBytes >> 20);
  }

 private:
  std::uint64_t input_bytes_;
  std::uint64_t limit_;
  std::uint64_t used_ = 0;
};

}  // namespace memtool::trace::detail
