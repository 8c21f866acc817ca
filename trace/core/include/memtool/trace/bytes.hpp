// Byte quantities as people write and read them: the one grammar of every size memtool is
// given (each MEMTOOL_* size variable, each size flag of the `memtool` command), and the one
// way memtool prints a size.
//
// The grammar (README.md, "Sizes"): a number, whole or decimal ("512", "1.5"), then at once
// an optional unit, in any case:
//   K, M, G, T and KiB, MiB, GiB, TiB   powers of 1024 (1.5G = 1,610,612,736 bytes)
//   KB, MB, GB, TB                      powers of 1000 (55GB = 55,000,000,000 bytes)
//   B                                   bytes
// rounded down to a whole byte, at most 2^62 (kMaxAccountedBytes). Where the caller has a
// total (a device's memory, an iteration's peak), a share of it: "60%", above 0 and at most
// 100. Where the caller reads a rate, a trailing "/s" ("55GB/s"). Where 0 means nothing, it
// is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memtool::trace {

// A size as given: bytes, or a share of a total the caller knows.
struct ByteSize {
  std::uint64_t bytes = 0;
  double percent = 0;  // above 0: the size is this share of the total (bytes is then 0)

  [[nodiscard]] bool is_share() const { return percent > 0; }
};

// What a caller accepts beyond whole sizes.
struct ByteGrammar {
  std::string_view share_of;  // non-empty: "60%" allowed, a share of this (named in errors)
  bool zero = true;           // false: 0 is refused (it would mean nothing)
  bool rate = false;          // a trailing "/s" allowed (bytes per second)
};

// The size `text` says, or nullopt with *error (when given) saying what was expected, in one
// line without the value (the caller names the option and the value).
[[nodiscard]] std::optional<ByteSize> parse_bytes(std::string_view text, const ByteGrammar& grammar = {},
                                                  std::string* error = nullptr);

// "1.50 GiB": binary units, three significant digits ("512 B" below 1 KiB).
[[nodiscard]] std::string human_bytes(std::uint64_t bytes);

}  // namespace memtool::trace
