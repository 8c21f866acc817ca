// The running values that trace format v1 delta-encodes against. Writer and reader keep one
// each and update it field by field in the same order, so a reader that starts at the header
// and walks the records in file order always reconstructs the exact values — including for
// any prefix of the file, which is what truncation recovery needs.
#pragma once

#include <cstdint>

namespace memtool::trace::wire {

struct DeltaState {
  std::uint64_t seq = 0;      // last event's seq
  std::uint64_t time_ns = 0;  // last event's timestamp
  std::uint64_t thread = 0;   // last event's thread
  std::uint64_t address = 0;  // last alloc/free address (copies, memsets, launches read it)
  std::uint64_t stream = 0;   // last stream field of any event
  // Used and updated by gpu_time records only (older readers skip those whole, so the values
  // above mean what they always meant).
  std::uint64_t gpu_seq = 0;    // last gpu_time record's event seq (records that name one)
  std::uint64_t gpu_start = 0;  // last gpu_time record's start
};

}  // namespace memtool::trace::wire
