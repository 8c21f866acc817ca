// FNV-1a over bytes: the per-iteration weight checksum. Any changed byte of any weight changes it,
// which is what "bit-identical with and without memtool" is checked with.
#pragma once

#include <cstddef>
#include <cstdint>

namespace apps {

class Checksum {
 public:
  void add(const void* bytes, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (std::size_t i = 0; i < size; ++i) {
      state_ = (state_ ^ p[i]) * 0x100000001b3ULL;
    }
  }
  std::uint64_t value() const { return state_; }

 private:
  std::uint64_t state_ = 0xcbf29ce484222325ULL;
};

}  // namespace apps
