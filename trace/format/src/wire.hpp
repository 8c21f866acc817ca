// The wire vocabulary of trace format v1, shared by the writer and the reader: the header
// line, record tags, limits, and the varint/zigzag encoders (docs/trace-format.md is the
// normative description; keep the two in step).
//
// The writer encodes each record body through one generic lambda instantiated with three
// encoders: DirectEncoder (raw pointer, no checks: the hot path, used when the buffer has
// room for the record's compile-time bound), CountingEncoder (exact size of an oversized
// record) and a streaming encoder in writer.cpp (flushes as it goes, for records larger
// than the buffer). One body, so the three can never disagree on the layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string_view>

#include "memtool/trace/event.hpp"

namespace memtool::trace::wire {

inline constexpr std::string_view kMagic = "MEMTOOL-TRACE ";  // followed by "<version>\n"
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::string_view kHeaderV1 = "MEMTOOL-TRACE 1\n";
inline constexpr std::size_t kMaxVersionDigits = 9;

// Record tags. 0 is never valid (a zero-filled region is corruption, not a record). Events
// (0x10-) take theirs from events.def; records that are not events (0x20-) neither read nor
// change the running state beyond what their own fields say, and a reader that does not know
// them skips them.
enum class Tag : std::uint8_t {
  metadata = 0x01,
  string_def = 0x02,
  stack_def = 0x03,
  module = 0x04,
  gpu_time = 0x20,  // GPU start/end of an earlier launch, copy or memset
  end = 0x7f,
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) name = tag,
#include "memtool/trace/events.def"
};

// No two records share a tag.
inline constexpr Tag kTags[] = {
    Tag::metadata, Tag::string_def, Tag::stack_def, Tag::module, Tag::gpu_time, Tag::end,
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) Tag::name,
#include "memtool/trace/events.def"
};
[[nodiscard]] constexpr bool tags_unique() {
  for (std::size_t i = 0; i < std::size(kTags); ++i) {
    if (kTags[i] == Tag{0}) return false;
    for (std::size_t j = 0; j < i; ++j) {
      if (kTags[i] == kTags[j]) return false;
    }
  }
  return true;
}
static_assert(tags_unique(), "two record tags are the same (events.def)");

// Largest payload a reader accepts; bigger lengths are corruption (a hostile length cannot
// make us allocate or skip beyond this).
inline constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t{16} << 20;
// What the writer keeps each variable part to, so its records always stay far below
// kMaxPayloadBytes.
inline constexpr std::size_t kMaxStringBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxStackFrames = std::size_t{1} << 16;
inline constexpr std::size_t kMaxTouched = std::size_t{1} << 16;

inline constexpr std::size_t kMaxVarintBytes = 10;  // a 64-bit LEB128 value

// Flag bits in the copy / memset flags byte.
inline constexpr std::uint8_t kCopyKindMask = 0x0f;
inline constexpr std::uint8_t kAsyncFlag = 0x80;
// The flags byte of a gpu_time record: the work kind, the copy kind, and whether an event is named.
inline constexpr std::uint8_t kGpuKindMask = 0x03;
inline constexpr std::uint8_t kGpuCopyKindShift = 2;
inline constexpr std::uint8_t kGpuCopyKindMask = 0x1c;
inline constexpr std::uint8_t kGpuJoinedFlag = 0x80;

[[nodiscard]] constexpr std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
[[nodiscard]] constexpr std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
// Delta of two unsigned values, modulo 2^64, as a zigzag varint value: small in either
// direction, and exact for any pair (prev + unzigzag(delta) wraps back to cur).
[[nodiscard]] constexpr std::uint64_t delta(std::uint64_t cur, std::uint64_t prev) {
  return zigzag(static_cast<std::int64_t>(cur - prev));
}
[[nodiscard]] constexpr std::uint64_t undelta(std::uint64_t prev, std::uint64_t coded) {
  return prev + static_cast<std::uint64_t>(unzigzag(coded));
}

[[nodiscard]] constexpr std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Optional ids travel as id + 1, with 0 for "none".
template <class Id>
[[nodiscard]] constexpr std::uint64_t optional_id(Id id) {
  return id.valid() ? std::uint64_t{id.value()} + 1 : 0;
}

struct DirectEncoder {
  std::byte* pos;

  void u8(std::uint8_t v) { *pos++ = std::byte{v}; }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      *pos++ = std::byte{static_cast<std::uint8_t>(v | 0x80)};
      v >>= 7;
    }
    *pos++ = std::byte{static_cast<std::uint8_t>(v)};
  }
  void bytes(const void* data, std::size_t n) {
    if (n != 0) std::memcpy(pos, data, n);
    pos += n;
  }
};

struct CountingEncoder {
  std::size_t size = 0;

  void u8(std::uint8_t) { ++size; }
  void varint(std::uint64_t v) { size += varint_size(v); }
  void bytes(const void*, std::size_t n) { size += n; }
};

// Encodes a length-prefixed string (varint length, then the bytes).
template <class Encoder>
void put_string(Encoder& e, std::string_view s) {
  e.varint(s.size());
  e.bytes(s.data(), s.size());
}

}  // namespace memtool::trace::wire
