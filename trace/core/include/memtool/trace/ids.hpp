// Strong id types: a buffer, a string (kernel name, file), a stack, a thread or a stream
// cannot be mixed up with a bare integer or with each other.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace memtool::trace {

template <class Tag, class Rep>
class StrongId {
 public:
  using rep_type = Rep;
  static constexpr Rep kInvalid = std::numeric_limits<Rep>::max();

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}

  [[nodiscard]] constexpr Rep value() const { return value_; }
  [[nodiscard]] constexpr bool valid() const { return value_ != kInvalid; }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  Rep value_ = kInvalid;
};

using BufferId = StrongId<struct BufferIdTag, std::uint64_t>;    // stable id given offline
using StringId = StrongId<struct StringIdTag, std::uint32_t>;    // interned string (kernel name, ...)
using StackId = StrongId<struct StackIdTag, std::uint32_t>;      // interned call stack
using ThreadId = StrongId<struct ThreadIdTag, std::uint32_t>;    // OS thread id (gettid)
using StreamHandle = StrongId<struct StreamTag, std::uint64_t>;  // CUstream value; 0 = legacy default

}  // namespace memtool::trace

template <class Tag, class Rep>
struct std::hash<memtool::trace::StrongId<Tag, Rep>> {
  std::size_t operator()(const memtool::trace::StrongId<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
