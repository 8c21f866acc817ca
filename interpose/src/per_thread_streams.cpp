// The ids of per-thread default streams (see per_thread_streams.hpp).
#include "memtool/interpose/per_thread_streams.hpp"

#include <atomic>

namespace memtool::interpose {
namespace {
std::atomic<std::uint64_t> g_next_thread{1};
thread_local std::uint64_t t_per_thread_stream = 0;
}  // namespace

std::uint64_t own_per_thread_stream() noexcept {
  if (t_per_thread_stream == 0) {
    const std::uint64_t n = g_next_thread.fetch_add(1, std::memory_order_relaxed);
    t_per_thread_stream = kPerThreadStreamTag | (n & ~kPerThreadStreamTagMask);
  }
  return t_per_thread_stream;
}

}  // namespace memtool::interpose
