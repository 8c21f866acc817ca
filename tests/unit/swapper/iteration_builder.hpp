// Hand-made iterations for the swapper tests: ops of given durations and buffers with their
// accesses, written the way the examples in the tests read.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "memtool/swapper/iteration.hpp"
#include "memtool/swapper/schedule.hpp"

namespace memtool::test {

inline swapper::Iteration ops_of(std::size_t count, std::uint64_t duration_ns) {
  swapper::Iteration it;
  it.ops.assign(count, swapper::Op{duration_ns, 0, swapper::OpKind::launch});
  return it;
}

// A buffer live from op `alloc` to op `free`, read and written by the ops listed.
inline std::uint32_t add_buffer(swapper::Iteration& it, std::uint64_t size, std::uint32_t alloc, std::uint32_t free,
                                std::initializer_list<std::uint32_t> accesses) {
  swapper::Buffer b;
  b.id = it.buffers.size();
  b.size = size;
  b.alloc_before_op = alloc;
  b.free_after_op = free;
  for (const std::uint32_t op : accesses) b.accesses.push_back({op, swapper::AccessMode::read_write});
  it.buffers.push_back(b);
  return static_cast<std::uint32_t>(it.buffers.size() - 1);
}

inline std::uint32_t add_persistent(swapper::Iteration& it, std::uint64_t size,
                                    std::initializer_list<std::uint32_t> accesses) {
  const std::uint32_t b = add_buffer(it, size, 0, 0, accesses);
  it.buffers[b].persistent = true;
  return b;
}

// A link of `bytes_per_ns` both ways, no latency, no duplex penalty: copy times are exact.
inline swapper::Link simple_link(double bytes_per_ns = 1.0) {
  swapper::Link link;
  link.d2h_bytes_per_ns = link.h2d_bytes_per_ns = bytes_per_ns;
  link.d2h_latency_ns = link.h2d_latency_ns = 0;
  link.duplex_factor = 1.0;
  return link;
}

inline swapper::Swap swap(std::uint32_t buffer, std::uint32_t after_access, std::uint64_t from, std::uint64_t to,
                          std::uint64_t out_after, std::uint64_t in_at, std::uint64_t out_wait = swapper::kNoWait) {
  swapper::Swap s;
  s.gap = {buffer, after_access, from, to};
  s.out_after_op = out_after;
  s.in_at_op = in_at;
  s.out_wait_op = out_wait;
  return s;
}

// 5 ops of 1 us. A: 5000 B persistent; B: 1000 B, used by ops 0 and 4; C: 500 B during op 2.
struct OneGap {
  swapper::Iteration it = ops_of(5, 1000);
  std::uint32_t b = 0;
  OneGap() {
    add_persistent(it, 5000, {2});
    b = add_buffer(it, 1000, 0, 4, {0, 4});
    add_buffer(it, 500, 2, 2, {2});
  }
};

}  // namespace memtool::test
