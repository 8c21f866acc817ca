// The tracer's part of every hooked launch, copy and memset: before the real driver call the
// hook pushes the seq of the event the recorder just wrote as CUPTI's external correlation id,
// and pops it after, so that the GPU record CUPTI later delivers names memtool's own event.
// CUDA-free and cheap to include: the preload's wrappers check `correlating()` (one relaxed
// load) and only then pay for the push and pop.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace memtool::cupti {

// Entry points whose real call puts work on the GPU that CUPTI times (kernel launches, graph
// launches, copies, memsets): the hooks that push an external correlation id.
[[nodiscard]] constexpr bool is_gpu_work_symbol(std::string_view symbol) {
  return symbol.starts_with("cuLaunch") || symbol.starts_with("cuGraphLaunch") || symbol.starts_with("cuMemcpy") ||
         symbol.starts_with("cuMemset");
}

namespace detail {
inline std::atomic<bool> g_correlating{false};  // set by the tracer once CUPTI is tracing
// Set by a push, cleared by each flush: a flush after pushes that gets no buffer back means
// another tool registered its own buffers (the tracer then stops pushing). Read-mostly.
inline std::atomic<bool> g_pushed_since_flush{false};
}  // namespace detail

// True while a tracer is running and wants ids pushed.
[[nodiscard]] inline bool correlating() noexcept { return detail::g_correlating.load(std::memory_order_relaxed); }

// CUPTI's external correlation stack of the calling thread (kind CUSTOM2: kineto uses CUSTOM0
// and CUSTOM1). Call only while correlating(); a push is always matched by a pop.
void push_external_id(std::uint64_t id) noexcept;
void pop_external_id() noexcept;

}  // namespace memtool::cupti
