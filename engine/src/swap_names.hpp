// How the swap policy names a buffer across iterations (swap_observation.hpp explains the rule):
// its birth — before the first iteration or longer-lived than one (persistent, by address), the
// iteration before (previous) or this one (current) — and its allocation's ordinal there.
#pragma once

#include <cstdint>

namespace memtool::engine::detail {

enum class Birth : std::uint8_t { persistent, previous, current };

struct BufferName {
  Birth birth = Birth::persistent;
  std::uint64_t id = 0;  // the ordinal; for persistent buffers the address
  friend bool operator==(const BufferName&, const BufferName&) = default;
};

}  // namespace memtool::engine::detail
