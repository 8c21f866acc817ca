// push_external_id / pop_external_id (correlation.hpp): CUPTI's functions, installed by the
// tracer before it sets detail::g_correlating and never changed afterwards (the library stays
// loaded), so the hot path needs no lock.
#include "memtool/cupti/correlation.hpp"

#include <atomic>

#include "correlation_install.hpp"
#include "record_join.hpp"

namespace memtool::cupti {
namespace {
// Atomics only so that a hook racing a (test's) restart reads a whole pointer; relaxed loads
// cost what plain ones do.
std::atomic<detail::PushExternalId> g_push{nullptr};
std::atomic<detail::PopExternalId> g_pop{nullptr};
}  // namespace

void detail::install_correlation(PushExternalId push, PopExternalId pop) noexcept {
  g_push.store(push, std::memory_order_release);
  g_pop.store(pop, std::memory_order_release);
}

void push_external_id(std::uint64_t id) noexcept {
  if (!detail::g_pushed_since_flush.load(std::memory_order_relaxed)) {
    detail::g_pushed_since_flush.store(true, std::memory_order_relaxed);
  }
  if (const auto push = g_push.load(std::memory_order_acquire); push != nullptr) (void)push(detail::kExternalKind, id);
}

void pop_external_id() noexcept {
  std::uint64_t last = 0;
  if (const auto pop = g_pop.load(std::memory_order_acquire); pop != nullptr) (void)pop(detail::kExternalKind, &last);
}

}  // namespace memtool::cupti
