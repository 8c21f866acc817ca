// Branch and bound over placement orders (decision version: everything under a capacity C).
//
// Canonical solutions: push every buffer down as far as it goes (to 0 or onto the top of a
// conflicting buffer, alignment kept) and list the buffers by (offset, preorder rank). Placing
// them in that order, each lands exactly at its *minimum offset* (the aligned top of the placed
// buffers it conflicts with), so a search over orders in which each next buffer goes to its
// minimum offset, with (offset, rank) increasing, reaches every canonical solution once.
//
// At each node the unplaced buffers are taken by (minimum offset, preorder rank) and:
//  - a buffer's lowest possible offset is its minimum offset raised to the last placement's
//    (offsets only rise); one whose lowest offset + size exceeds C ends the branch;
//  - order: a buffer behind the last placement in (offset, rank) cannot come next;
//  - dominance: a buffer at or above the lowest top any unplaced buffer could reach would leave
//    that one a gap it can never fill (it would have to go higher still): skipped;
//  - section bound: in every section, the unplaced bytes live there stack up from the highest
//    of the section's floor and the least lowest offset of the unplaced buffers there (found
//    for all sections at once by painting spans in candidate order); that must fit under C;
//  - hatless: when nothing unplaced conflicts with the buffer just placed and the rest fails,
//    the node fails (where that buffer goes constrains nobody);
//  - decomposition: once no unplaced buffer crosses a section boundary, the two sides are
//    solved separately.
// A portfolio of static preorders (see preorder()) runs round-robin with node limits that
// double each round, so one unlucky early choice cannot eat the whole budget. A child node
// re-sorts only the candidates whose minimum offset rose and merges them into its parent's
// sorted list.
// Recursion: one dfs frame (about 260 bytes at -O2) per placed buffer plus one split_and_solve
// frame per decomposition, so kMaxItems bounds the depth (6 000 buffers: about 3 MB of stack
// at most; the candidate lists live on the heap).
#include "branch_and_bound.hpp"

#include <algorithm>
#include <deque>
#include <numeric>

#include "interval_index.hpp"

namespace memtool::planner::detail {

namespace {

constexpr std::uint32_t kMaxItems = 6000;
constexpr std::uint64_t kMaxConflictEntries = 40'000'000;

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
    next_.assign(p_.section_count + 1, 0);
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

  // `parent`: the parent node's sorted candidates, when this node places one more buffer of
  // the same partition: only the buffers whose minimum offset rose need sorting, then merging.
  Outcome dfs(const Partition& partition, std::uint64_t last_offset, std::uint32_t last_rank,
              const std::vector<std::pair<std::uint64_t, std::uint32_t>>* parent = nullptr) {
    if (nodes_left_ == 0 || budget_.exhausted()) return Outcome::aborted;
    --nodes_left_;
    // Unplaced buffers by (minimum offset, rank), in a vector kept per depth (no allocation per
    // node once the search has been that deep; a deque, so deeper frames leave it in place);
    // the lowest top any of them could reach. Offsets never fall along the canonical order, so
    // a buffer's lowest offset is its minimum offset raised to the last placement's.
    if (depth_ == orders_.size()) orders_.emplace_back();
    auto& order = orders_[depth_];
    order.clear();
    const DepthGuard guard(depth_);
    std::uint64_t min_height = UINT64_MAX;
    if (parent != nullptr) {
      raised_.clear();
      for (const auto& [off, r] : *parent) {
        const std::uint32_t c = by_rank_[r];
        if (placed_[c]) continue;
        const std::uint64_t top = std::max(min_offset_[c], last_offset) + item(c).footprint;
        if (top > capacity_) return Outcome::infeasible;
        min_height = std::min(min_height, top);
        (min_offset_[c] == off ? order : raised_).emplace_back(min_offset_[c], r);
      }
      std::sort(raised_.begin(), raised_.end());
      // Merge from the back: the unchanged ones are already in order.
      std::size_t i = order.size();
      std::size_t j = raised_.size();
      order.resize(i + j);
      for (std::size_t k = order.size(); j > 0;) {
        if (i > 0 && order[i - 1] > raised_[j - 1]) {
          order[--k] = order[--i];
        } else {
          order[--k] = raised_[--j];
        }
      }
      budget_.spend(parent->size() * 2 + raised_.size() * 4);
    } else {
      for (std::uint32_t c : partition.by_rank) {
        if (placed_[c]) continue;
        const std::uint64_t top = std::max(min_offset_[c], last_offset) + item(c).footprint;
        if (top > capacity_) return Outcome::infeasible;
        min_height = std::min(min_height, top);
        order.emplace_back(min_offset_[c], rank_[c]);
      }
      std::sort(order.begin(), order.end());  // ranks are distinct: a total order
      budget_.spend(partition.by_rank.size() + order.size() * 8);
    }
    if (order.empty()) return Outcome::found;
    if (!stacked_sections_fit(partition, order, last_offset)) return Outcome::infeasible;
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
        outcome = split ? split_and_solve(partition, hf, he) : dfs(partition, off, r, &order);
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

  // Cheap check before descending: every unplaced byte of a section lies above the section's
  // floor and the last placement's offset.
  [[nodiscard]] bool sections_fit(const Partition& partition, std::uint64_t last_offset) {
    const std::uint32_t lo = partition.first_section;
    const std::uint32_t hi = partition.end_section;
    budget_.spend(hi - lo);
    for (std::uint32_t t = lo; t < hi; ++t) {
      if (total_[t] != 0 && std::max(floor_[t], last_offset) + total_[t] > capacity_) return false;
    }
    return true;
  }

  // The node's section bound: in each section the unplaced bytes stack up from the least lower
  // bound on an unplaced buffer there (its minimum offset, raised to the last placement's
  // offset, since offsets never fall). With the candidates sorted by minimum offset, painting
  // their spans in that order, each section once (next_ skips painted runs), gives those least
  // bounds in O(sections + spans) instead of a pass over every section of every span.
  [[nodiscard]] bool stacked_sections_fit(const Partition& partition,
                                          const std::vector<std::pair<std::uint64_t, std::uint32_t>>& order,
                                          std::uint64_t last_offset) {
    const std::uint32_t lo = partition.first_section;
    const std::uint32_t hi = partition.end_section;
    for (std::uint32_t t = lo; t <= hi; ++t) next_[t] = t;
    std::uint64_t work = 2 * (hi - lo) + order.size();
    for (const auto& [off, r] : order) {
      const std::uint32_t c = by_rank_[r];
      const std::uint64_t base = std::max(off, last_offset);
      const Span* spans = p_.spans_of(s_.items[c]);
      for (std::uint32_t k = 0; k < item(c).span_count; ++k) {
        const std::uint32_t end = std::min(spans[k].end, hi);
        for (std::uint32_t t = unpainted(std::max(spans[k].first, lo)); t < end; t = unpainted(t + 1)) {
          effective_[t] = base;
          next_[t] = t + 1;
          ++work;
        }
        ++work;
      }
    }
    budget_.spend(work + hops_);
    hops_ = 0;
    for (std::uint32_t t = lo; t < hi; ++t) {
      if (total_[t] == 0) continue;
      const std::uint64_t base = next_[t] == t ? floor_[t] : std::max(floor_[t], effective_[t]);
      if (base + total_[t] > capacity_) return false;
    }
    return true;
  }

  // The first unpainted section at or after t (path halving keeps the chains short).
  [[nodiscard]] std::uint32_t unpainted(std::uint32_t t) {
    while (next_[t] != t) {
      next_[t] = next_[next_[t]];
      t = next_[t];
      ++hops_;
    }
    return t;
  }

  // Counts the depth of dfs frames, for the per-depth candidate vectors.
  struct DepthGuard {
    explicit DepthGuard(std::size_t& depth) : depth_(depth) { ++depth_; }
    ~DepthGuard() { --depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    std::size_t& depth_;
  };

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
  std::vector<std::uint32_t> next_;  // stacked_sections_fit: first unpainted section at or after t
  std::deque<std::vector<std::pair<std::uint64_t, std::uint32_t>>> orders_;  // per dfs depth
  std::size_t depth_ = 0;
  std::uint64_t hops_ = 0;  // unpainted(): steps taken, counted as work
  std::vector<std::pair<std::uint64_t, std::uint32_t>> raised_;  // dfs: candidates whose minimum offset rose
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
