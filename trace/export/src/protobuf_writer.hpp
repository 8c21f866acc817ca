// The few protobuf wire-format encodings a Perfetto trace needs, written by hand (no Perfetto SDK
// or protobuf library here): varints, length-delimited strings and nested messages, doubles.
// A nested message's length is a 4-byte varint patched when the message ends (as protozero
// does), so a message is written in one pass; 4 bytes bound a nested message to 256 MiB.
#pragma once

#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace memtool::trace::detail {

class ProtoMessage {
 public:
  void clear() { bytes_.clear(); }
  [[nodiscard]] const std::string& bytes() const { return bytes_; }

  void varint_field(std::uint32_t field, std::uint64_t value) {
    tag(field, 0);
    varint(value);
  }
  void int64_field(std::uint32_t field, std::int64_t value) {
    varint_field(field, static_cast<std::uint64_t>(value));  // two's complement, as int64 encodes
  }
  void bool_field(std::uint32_t field, bool value) { varint_field(field, value ? 1 : 0); }
  void double_field(std::uint32_t field, double value) {
    tag(field, 1);
    const auto bits = std::bit_cast<std::uint64_t>(value);
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
  void string_field(std::uint32_t field, std::string_view value) {
    tag(field, 2);
    varint(value.size());
    bytes_.append(value);
  }
  // Opens a nested message; pass the result to end().
  [[nodiscard]] std::size_t begin(std::uint32_t field) {
    tag(field, 2);
    const std::size_t at = bytes_.size();
    bytes_.append(4, '\0');
    return at;
  }
  void end(std::size_t at) {
    const std::size_t length = bytes_.size() - at - 4;
    if (length >= (std::size_t{1} << 28)) throw std::length_error("protobuf message over 256 MiB");
    for (int i = 0; i < 4; ++i) {
      auto byte = static_cast<std::uint8_t>((length >> (7 * i)) & 0x7f);
      if (i < 3) byte |= 0x80;  // redundant continuation bits keep the width fixed
      bytes_[at + static_cast<std::size_t>(i)] = static_cast<char>(byte);
    }
  }

  // The bytes of `field` = length-delimited `message` (an outer Trace's packet).
  static void append_length_delimited(std::string& out, std::uint32_t field, std::string_view message) {
    ProtoMessage header;
    header.string_field(field, {});
    header.bytes_.pop_back();  // drop the zero length
    header.varint(message.size());
    out.append(header.bytes_);
    out.append(message);
  }

 private:
  void tag(std::uint32_t field, std::uint32_t wire_type) { varint((std::uint64_t{field} << 3) | wire_type); }
  void varint(std::uint64_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
  }

  std::string bytes_;
};

}  // namespace memtool::trace::detail
