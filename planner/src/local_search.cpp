// Iterated greedy. Each round builds a new order from the incumbent one by one of two moves,
// alternating:
//  - promote the peak: buffers whose range reaches the pool's top are the ones that set the pool
//    size; moving them (and a few pseudo-random others) to the front of the order gives them
//    first choice of addresses, as TelaMalloc's backtracking does for contended buffers;
//  - shake: swap pseudo-random pairs of nearby positions.
// A greedy run that exceeds the incumbent stops early, so failed rounds are cheap. Orders with
// an equal pool are accepted too, to move along plateaus.
#include "local_search.hpp"

#include <algorithm>

namespace memtool::planner::detail {

namespace {

// splitmix64: small, fast and the same everywhere.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
  [[nodiscard]] std::uint64_t state() const { return state_; }

 private:
  std::uint64_t state_;
};

std::vector<std::uint32_t> promote_peak(const Prepared& p, const std::vector<std::uint32_t>& order,
                                        const std::vector<std::uint64_t>& offsets, std::uint64_t pool, Random& rng) {
  std::vector<std::uint8_t> promoted(p.items.size(), 0);
  std::vector<std::uint32_t> front;
  for (std::uint32_t i : order) {
    const Item& it = p.items[i];
    if (it.footprint != 0 && offsets[i] + it.footprint == pool) promoted[i] = 1;
  }
  // A few random companions, so that repeated promotions do not cycle.
  const std::uint64_t extra = 1 + rng.below(4);
  for (std::uint64_t k = 0; k < extra && !order.empty(); ++k) promoted[order[rng.below(order.size())]] = 1;
  std::vector<std::uint32_t> rest;
  for (std::uint32_t i : order) (promoted[i] ? front : rest).push_back(i);
  front.insert(front.end(), rest.begin(), rest.end());
  return front;
}

std::vector<std::uint32_t> shake(std::vector<std::uint32_t> order, Random& rng) {
  if (order.size() < 2) return order;
  const std::uint64_t swaps = 1 + rng.below(std::max<std::uint64_t>(2, order.size() / 50));
  const std::uint64_t reach = 1 + rng.below(std::max<std::uint64_t>(2, order.size() / 10));
  for (std::uint64_t k = 0; k < swaps; ++k) {
    const std::uint64_t a = rng.below(order.size());
    const std::uint64_t b = std::min<std::uint64_t>(order.size() - 1, a + 1 + rng.below(reach));
    std::swap(order[a], order[b]);
  }
  return order;
}

}  // namespace

IteratedGreedy::IteratedGreedy(const Prepared& p, GreedyPlacer& placer, std::vector<std::uint32_t> order, Fit fit,
                               GreedyResult start)
    : prepared_(p),
      placer_(placer),
      fit_(fit),
      order_(std::move(order)),
      offsets_(std::move(start.offsets)),
      pool_(start.pool),
      rng_state_(0x6d656d746f6f6cULL ^ p.items.size() ^ (p.lower_bound << 1)) {}

bool IteratedGreedy::improve(SearchBudget& budget) {
  Random rng(rng_state_);
  bool lowered = false;
  while (!lowered && pool_ > prepared_.lower_bound && !budget.exhausted()) {
    auto candidate = round_++ % 2 == 0 ? promote_peak(prepared_, order_, offsets_, pool_, rng) : shake(order_, rng);
    // The new order (built with a pass or two over the old one and the offsets, at random)
    // and the offsets kept: O(n), charged with the run.
    const std::uint64_t copies = 8 * prepared_.items.size();
    auto run =
        placer_.place(candidate, fit_, {.above = pool_, .work = budget.left() > copies ? budget.left() - copies : 0});
    budget.spend(run.work + copies);
    if (run.pool <= pool_) {
      lowered = run.pool < pool_;
      pool_ = run.pool;
      offsets_ = std::move(run.offsets);
      order_ = std::move(candidate);
    }
  }
  rng_state_ = rng.state();
  return lowered;
}

}  // namespace memtool::planner::detail
