// Branch and bound over placement orders (decision version: everything under a capacity C).
//
// Canonical solutions: push every buffer down as far as it goes (to 0 or onto the top of a
// conflicting buffer, alignment kept) and list the buffers by (offset, preorder rank). Placing
// them in that order, each lands exactly at its *minimum offset* (the aligned top of the placed
// buffers it conflicts with), so a search over orders in which each next buffer goes to its
// minimum offset, with (offset, rank) increasing, reaches every canonical solution once.
//
// At each node the unplaced buffers are taken by (minimum offset, preorder rank) and:
//  - a buffer whose minimum offset + size exceeds C ends the branch (offsets only rise);
//  - order: a buffer behind the last placement in (offset, rank) cannot come next;
//  - dominance: a buffer at or above the lowest top any unplaced buffer could reach would leave
//    that one a gap it can never fill (it would have to go higher still): skipped;
//  - section bound: in every section, the unplaced bytes live there stack up from the highest
//    of the section's floor, the last placement's offset and (for small pieces) the least
//    minimum offset of the unplaced buffers there; that must fit under C;
//  - hatless: when nothing unplaced conflicts with the buffer just placed and the rest fails,
//    the node fails (where that buffer goes constrains nobody);
//  - decomposition: once no unplaced buffer crosses a section boundary, the two sides are
//    solved separately.
// A portfolio of static preorders (see preorder()) runs round-robin with node limits that double each round, so one
// unlucky early choice cannot eat the whole budget.
#include "branch_and_bound.hpp"

#include <algorithm>
#include <numeric>

#include "interval_index.hpp"

namespace memtool::planner::detail {

namespace {

constexpr std::uint32_t kMaxItems = 6000;
constexpr std::uint64_t kMaxConflictEntries = 40'000'000;
constexpr std::size_t kEffectiveFloorItems = 256;

struct Shared {
  std::vector<std::uint32_t> items;                    // local -> item
  std::vector<std::vector<std::uint32_t>> neighbours;  // local -> conflicting locals
};

enum class Outcome { found, infeasible, aborted };

class Decision {
 public:
  Decision(const Prepared& p, const Shared& shared, std::uint64_t capacity, std::vector<std::uint32_t> rank,
           std::uint64_t node_limit, SearchBudget& budget)
      : p_(p), s_(shared), capacity_(capacity), rank_(std::move(rank)), nodes_left_(node_limit), budget_(budget) {
    const std::size_t m = s_.items.size();
    min_offset_.assign(m, 0);
    offset_.assign(m, 0);
    placed_.assign(m, 0);
    floor_.assign(p_.section_count, 0);
    total_ = p_.load;
    effective_.assign(p_.section_count, UINT64_MAX);
    by_rank_.resize(m);
    for (std::uint32_t i = 0; i < m; ++i) by_rank_[rank_[i]] = i;
  }

  Outcome run() {
    Partition whole;
    whole.first_section = 0;
    whole.end_section = p_.section_count;
    for (std::uint32_t r = 0; r < by_rank_.size(); ++r) whole.by_rank.push_back(by_rank_[r]);
    // Boundaries between sections t and t+1 that some buffer's hull crosses.
    cuts_.assign(p_.section_count + 1, 0);
    std::vector<std::int64_t> delta(p_.section_count + 2, 0);
    for (std::uint32_t c = 0; c < s_.items.size(); ++c) {
      const auto [first, end] = hull(c);
      if (end - first >= 2) {
        ++delta[first];
        --delta[end - 1];
      }
    }
    std::int64_t running = 0;
    for (std::uint32_t t = 0; t < p_.section_count; ++t) {
      running += delta[t];
      cuts_[t] = static_cast<std::uint32_t>(running);
    }
    return split_and_solve(whole, 0, p_.section_count);
  }
  [[nodiscard]] const std::vector<std::uint64_t>& offsets() const { return offset_; }

 private:
  // Unplaced buffers that no other unplaced buffer connects to the rest of the timeline form
  // an independent subproblem (MiniMalloc's dynamic decomposition).
  struct Partition {
    std::uint32_t first_section = 0;
    std::uint32_t end_section = 0;
    std::vector<std::uint32_t> by_rank;  // its buffers (locals), in preorder
  };

  [[nodiscard]] const Item& item(std::uint32_t local) const { return p_.items[s_.items[local]]; }
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> hull(std::uint32_t c) const {
    const Span* spans = p_.spans_of(s_.items[c]);
    return {spans[0].first, spans[item(c).span_count - 1].end};
  }

  // Splits `partition` at the boundaries in [first, end) that no unplaced buffer crosses any
  // more and solves each piece on its own; each piece restarts the canonical order.
  Outcome split_and_solve(const Partition& partition, std::uint32_t first, std::uint32_t end) {
    std::vector<std::uint32_t> cutpoints{partition.first_section};
    for (std::uint32_t t = std::max(first, partition.first_section); t + 1 < std::min(end, partition.end_section); ++t) {
      if (cuts_[t] == 0) cutpoints.push_back(t + 1);
    }
    cutpoints.push_back(partition.end_section);
    if (cutpoints.size() == 2) return dfs(partition, 0, 0);
    for (std::size_t k = 0; k + 1 < cutpoints.size(); ++k) {
      Partition piece;
      piece.first_section = cutpoints[k];
      piece.end_section = cutpoints[k + 1];
      for (std::uint32_t c : partition.by_rank) {
        if (placed_[c]) continue;
        const auto [hf, he] = hull(c);
        if (hf < piece.end_section && piece.first_section < he) piece.by_rank.push_back(c);
      }
      budget_.spend(partition.by_rank.size());
      if (piece.by_rank.empty()) continue;
      const Outcome outcome = dfs(piece, 0, 0);
      if (outcome != Outcome::found) return outcome;
    }
    return Outcome::found;
  }

  Outcome dfs(const Partition& partition, std::uint64_t last_offset, std::uint32_t last_rank) {
    if (nodes_left_ == 0 || budget_.exhausted()) return Outcome::aborted;
    --nodes_left_;
    // Unplaced buffers by (minimum offset, rank); the lowest top any of them could reach.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> order;  // (min offset, rank)
    order.reserve(partition.by_rank.size());
    std::uint64_t min_height = UINT64_MAX;
    for (std::uint32_t c : partition.by_rank) {
      const std::uint32_t r = rank_[c];
      if (placed_[c]) continue;
      const std::uint64_t top = min_offset_[c] + item(c).footprint;
      if (top > capacity_) return Outcome::infeasible;
      min_height = std::min(min_height, top);
      order.emplace_back(min_offset_[c], r);
    }
    if (order.empty()) return Outcome::found;
    std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    budget_.spend(order.size() * 2);
    bool aborted = false;
    for (const auto& [off, r] : order) {
      if (off < last_offset || (off == last_offset && r < last_rank)) continue;  // not canonical
      if (off >= min_height) break;  // dominated (and so is every later one)
      const std::uint32_t c = by_rank_[r];
      // Hatless: nothing unplaced conflicts with c, so where c goes constrains nobody; if the
      // rest fails with c at its lowest offset, it fails with c anywhere else too.
      bool hatless = true;
      for (std::uint32_t n : s_.neighbours[c]) {
        if (!placed_[n]) {
          hatless = false;
          break;
        }
      }
      const std::size_t min_mark = min_trail_.size();
      const std::size_t floor_mark = floor_trail_.size();
      place(c, off);
      Outcome outcome = Outcome::infeasible;
      if (sections_fit(partition, off)) {
        const auto [hf, he] = hull(c);
        bool split = false;
        for (std::uint32_t t = hf; t + 1 < he; ++t) split |= --cuts_[t] == 0;
        outcome = split ? split_and_solve(partition, hf, he) : dfs(partition, off, r);
        for (std::uint32_t t = hf; t + 1 < he; ++t) ++cuts_[t];
      }
      unplace(c, min_mark, floor_mark);
      if (outcome == Outcome::found) return outcome;
      if (outcome == Outcome::aborted) {
        aborted = true;
        break;
      }
      if (hatless) break;
    }
    return aborted ? Outcome::aborted : Outcome::infeasible;
  }

  void place(std::uint32_t c, std::uint64_t off) {
    const Item& it = item(c);
    const std::uint64_t top = off + it.footprint;
    placed_[c] = 1;
    offset_[c] = off;
    for (std::uint32_t n : s_.neighbours[c]) {
      if (placed_[n]) continue;
      const std::uint64_t raised = align_up(top, item(n).alignment);
      if (min_offset_[n] < raised) {
        min_trail_.emplace_back(n, min_offset_[n]);
        min_offset_[n] = raised;
      }
    }
    const Span* spans = p_.spans_of(s_.items[c]);
    for (std::uint32_t k = 0; k < it.span_count; ++k) {
      for (std::uint32_t t = spans[k].first; t < spans[k].end; ++t) {
        floor_trail_.emplace_back(t, floor_[t]);
        floor_[t] = top;
        total_[t] -= it.footprint;
      }
      budget_.spend(spans[k].end - spans[k].first);
    }
    budget_.spend(s_.neighbours[c].size() + 1);
  }

  void unplace(std::uint32_t c, std::size_t min_mark, std::size_t floor_mark) {
    const Item& it = item(c);
    while (min_trail_.size() > min_mark) {
      min_offset_[min_trail_.back().first] = min_trail_.back().second;
      min_trail_.pop_back();
    }
    while (floor_trail_.size() > floor_mark) {
      floor_[floor_trail_.back().first] = floor_trail_.back().second;
      total_[floor_trail_.back().first] += it.footprint;
      floor_trail_.pop_back();
    }
    placed_[c] = 0;
  }

  // Every unplaced buffer live in a section sits at or above its own minimum offset and the
  // last placement's offset; stacked there, the section's unplaced bytes must fit under C.
  [[nodiscard]] bool sections_fit(const Partition& partition, std::uint64_t last_offset) {
    const std::uint32_t lo = partition.first_section;
    const std::uint32_t hi = partition.end_section;
    std::fill(effective_.begin() + lo, effective_.begin() + hi, UINT64_MAX);
    std::uint64_t work = hi - lo;
    // The minimum-offset floors cost a pass over every unplaced span: only for small pieces.
    const bool effective = partition.by_rank.size() <= kEffectiveFloorItems;
    for (std::uint32_t c : partition.by_rank) {
      if (!effective) break;
      if (placed_[c]) continue;
      const Span* spans = p_.spans_of(s_.items[c]);
      for (std::uint32_t k = 0; k < item(c).span_count; ++k) {
        for (std::uint32_t t = spans[k].first; t < spans[k].end; ++t) effective_[t] = std::min(effective_[t], min_offset_[c]);
        work += spans[k].end - spans[k].first;
      }
    }
    budget_.spend(work);
    for (std::uint32_t t = lo; t < hi; ++t) {
      if (total_[t] == 0) continue;
      const std::uint64_t base = std::max({floor_[t], last_offset, effective_[t]});
      if (base + total_[t] > capacity_) return false;
    }
    return true;
  }

  const Prepared& p_;
  const Shared& s_;
  std::uint64_t capacity_;
  std::vector<std::uint32_t> rank_;     // local -> preorder rank
  std::vector<std::uint32_t> by_rank_;  // rank -> local
  std::uint64_t nodes_left_;
  SearchBudget& budget_;
  std::vector<std::uint64_t> min_offset_, offset_, floor_, total_, effective_;
  std::vector<std::uint8_t> placed_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> min_trail_, floor_trail_;
  std::vector<std::uint32_t> cuts_;  // unplaced buffers crossing the boundary after section t
};

// Conflict lists among items with a footprint, or false when they would be too large.
bool build_shared(const Prepared& p, Shared& shared) {
  std::vector<std::uint32_t> local(p.items.size(), UINT32_MAX);
  for (std::uint32_t i = 0; i < p.items.size(); ++i) {
    if (p.items[i].footprint == 0) continue;
    local[i] = static_cast<std::uint32_t>(shared.items.size());
    shared.items.push_back(i);
  }
  IntervalIndex index(p.section_count);
  for (std::uint32_t i : shared.items) {
    const Span* spans = p.spans_of(i);
    for (std::uint32_t k = 0; k < p.items[i].span_count; ++k) index.insert(i, spans[k]);
  }
  shared.neighbours.assign(shared.items.size(), {});
  std::vector<std::uint32_t> stamp(p.items.size(), UINT32_MAX);
  std::uint64_t entries = 0;
  for (std::uint32_t a = 0; a < shared.items.size(); ++a) {
    const std::uint32_t i = shared.items[a];
    const Span* spans = p.spans_of(i);
    for (std::uint32_t k = 0; k < p.items[i].span_count; ++k) {
      index.for_each_intersecting(spans[k], [&](std::uint32_t other) {
        if (other == i || stamp[other] == a) return;
        stamp[other] = a;
        shared.neighbours[a].push_back(local[other]);
      });
    }
    entries += shared.neighbours[a].size();
    if (entries > kMaxConflictEntries) return false;
  }
  return true;
}

// Preorder ranks, each a priority list over: W, sections spanned (width in time); A, area
// (size × live time); T, the most bytes live in any section the buffer spans. The three
// orders WAT, TAW and TWA make the portfolio.
std::vector<std::uint32_t> preorder(const Prepared& p, const Shared& s, int kind) {
  const std::size_t m = s.items.size();
  std::vector<std::uint64_t> total(m, 0), width(m, 0);
  std::vector<long double> area(m, 0);
  for (std::size_t a = 0; a < m; ++a) {
    const Item& it = p.items[s.items[a]];
    const Span* spans = p.spans_of(s.items[a]);
    for (std::uint32_t k = 0; k < it.span_count; ++k) {
      width[a] += spans[k].end - spans[k].first;
      for (std::uint32_t t = spans[k].first; t < spans[k].end; ++t) total[a] = std::max(total[a], p.load[t]);
    }
    area[a] = static_cast<long double>(it.footprint) * static_cast<long double>(it.live_time);
  }
  static constexpr const char* kOrders[] = {"WAT", "TAW", "TWA"};
  const char* keys = kOrders[kind % 3];
  std::vector<std::uint32_t> order(m);
  std::iota(order.begin(), order.end(), 0U);
  std::sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    for (const char* k = keys; *k != 0; ++k) {
      if (*k == 'W' && width[x] != width[y]) return width[x] > width[y];
      if (*k == 'A' && area[x] != area[y]) return area[x] > area[y];
      if (*k == 'T' && total[x] != total[y]) return total[x] > total[y];
    }
    return x < y;
  });
  std::vector<std::uint32_t> rank(m);
  for (std::uint32_t r = 0; r < m; ++r) rank[order[r]] = r;
  return rank;
}

}  // namespace

bool branch_and_bound_applies(const Prepared& p) {
  std::uint32_t m = 0;
  for (const Item& it : p.items) m += it.footprint != 0 ? 1U : 0U;
  return m <= kMaxItems;
}

SearchResult branch_and_bound(const Prepared& p, std::uint64_t capacity, SearchBudget& budget) {
  SearchResult result;
  Shared shared;
  if (!build_shared(p, shared)) return result;
  budget.spend(shared.items.size());
  if (p.lower_bound > capacity) {
    result.exhausted_space = true;
    return result;
  }
  constexpr int kPreorders = 3;
  std::vector<std::vector<std::uint32_t>> ranks;
  for (int k = 0; k < kPreorders; ++k) ranks.push_back(preorder(p, shared, k));
  for (std::uint64_t node_limit = std::max<std::uint64_t>(2, shared.items.size()); !budget.exhausted(); node_limit *= 2) {
    bool any_aborted = false;
    for (int k = 0; k < kPreorders && !budget.exhausted(); ++k) {
      Decision decision(p, shared, capacity, ranks[k], node_limit, budget);
      const Outcome outcome = decision.run();
      if (outcome == Outcome::found) {
        result.improved = true;
        result.offsets.assign(p.items.size(), 0);
        for (std::size_t a = 0; a < shared.items.size(); ++a) {
          const std::uint32_t i = shared.items[a];
          result.offsets[i] = decision.offsets()[a];
          result.pool = std::max(result.pool, result.offsets[i] + p.items[i].footprint);
        }
        return result;
      }
      if (outcome == Outcome::infeasible) {
        result.exhausted_space = true;  // the whole space searched without the node limit biting
        return result;
      }
      any_aborted = true;
    }
    if (!any_aborted) break;
  }
  return result;
}

}  // namespace memtool::planner::detail
