// BudgetLimit: the device bytes a stack holds stay within MEMTOOL_BUDGET (see resources.hpp).
// The check is made after the upstream served the request, because only then is it known
// whether it took new device memory (a pooled hand-out takes none); one that went over is
// given back and refused, after the upstream was asked to reclaim unused memory and retried
// (and asked again after the refusal, so that a cache keeps nothing of the refused request). A
// stream-ordered request given back goes to the driver's pool: it is waited for before the pools
// are trimmed, so that memtool's own free never counts against the budget.
#include <atomic>

#include "memtool/engine/resources.hpp"

namespace memtool::engine {
namespace {

class BudgetLimit final : public Adaptor {
 public:
  BudgetLimit(std::unique_ptr<Resource> upstream, std::uint64_t budget)
      : Adaptor(std::move(upstream)), budget_(budget) {}
  std::string_view name() const override { return "budget"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    // Room first from what the driver's stream-ordered pools keep beyond their thresholds (they
    // would give it back at the next synchronisation); what the program asked them to keep goes
    // only when the request would be refused otherwise (reclaim, below).
    if (upstream().memory_use().reserved + upstream().growth_of(request) > budget_) {
      (void)upstream().trim_pools(PoolTrim::beyond_threshold);
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
      DevicePtr ptr = 0;
      const Status status = Adaptor::allocate(request, &ptr);
      if (status != kSuccess) return status;
      if (upstream().memory_use().reserved <= budget_) {
        *out = ptr;
        return kSuccess;
      }
      (void)Adaptor::deallocate(ptr, request.kind, request.stream);
      // Also after the last attempt: a caching upstream must not keep the refused bytes.
      std::uint64_t freed = upstream().reclaim();
      // That free of a stream-ordered request is memtool's own: its memory goes back to the pool
      // only when the stream gets there, and counted until then it would refuse what fits once
      // reached. So it (and the program's frees before it) is waited for where the host may
      // wait, and the pools trimmed (pool_frees.hpp).
      if (stream_ordered(request)) freed += upstream().trim_pools(PoolTrim::all_after_frees);
      if (freed == 0) break;
    }
    refusals_.fetch_add(1, std::memory_order_relaxed);
    return kOutOfMemory;
  }

  void summarize(Summary& summary) const override {
    Adaptor::summarize(summary);
    summary.budget_bytes = budget_;
    summary.budget_refusals += refusals_.load(std::memory_order_relaxed);
  }

 private:
  static bool stream_ordered(const AllocationRequest& request) {
    return request.kind == MemoryKind::async || request.memory_pool != 0;
  }

  const std::uint64_t budget_;
  std::atomic<std::uint64_t> refusals_{0};
};

}  // namespace

std::unique_ptr<Resource> make_budget_limit(std::unique_ptr<Resource> upstream, std::uint64_t budget_bytes) {
  return std::make_unique<BudgetLimit>(std::move(upstream), budget_bytes);
}

}  // namespace memtool::engine
