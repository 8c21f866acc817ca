// Branch and bound over placement orders (decision version: everything under a capacity C), as
// MiniMalloc's solver explores it (same tree, same order, same node counts), with two bounds of
// our own that only cut dead branches sooner.
//
// Canonical solutions: push every buffer down as far as it goes (to 0 or onto the top of a
// conflicting buffer, alignment kept) and list the buffers by (offset, preorder rank). Placing
// them in that order, each lands exactly at its *minimum offset* (the aligned top of the placed
// buffers it conflicts with), so a search over orders in which each next buffer goes to its
// minimum offset, with (offset, rank) increasing, reaches every canonical solution once.
//
// At each node the unplaced buffers are taken by (minimum offset, preorder rank) and:
//  - order: a buffer behind the last placement in (offset, rank) cannot come next;
//  - dominance: a buffer at or above the lowest top any unplaced buffer could reach from its
//    minimum offset would leave that one a gap below it that nothing later can fill (offsets
//    only rise along the order): skipped, and every later candidate with it;
//  - section bound (MiniMalloc's inference with the unallocated floor): in every section the
//    unplaced bytes stack up from the highest of the section's floor, the last placement's
//    offset and the least minimum offset of the unplaced buffers there (found for all sections
//    at once by painting spans in candidate order); that must fit under C. Ours also ends a
//    branch where one buffer's lowest offset (its minimum offset raised to the last placement's)
//    plus its size exceeds C. A child that fails these is not counted as a node, as MiniMalloc
//    checks before it descends;
//  - hatless: when nothing unplaced conflicts with the buffer just placed and the rest fails,
//    the node fails (where that buffer goes constrains nobody);
//  - decomposition: once no unplaced buffer crosses a section boundary, the two sides are
//    solved separately, each with its own preorder (T from the bytes still unplaced).
// A child node re-sorts only the candidates whose minimum offset rose and merges them into its
// parent's sorted list. The state is unwound on the way back up, success included; offsets are
// recorded as buffers are placed.
// Recursion: one dfs frame per placed buffer plus one split_and_solve frame per decomposition,
// so the buffer limit (decision_problem.cpp) bounds the depth (6 000 buffers: a few MB of stack
// at most; the candidate lists live on the heap).
#include "branch_and_bound.hpp"

#include <algorithm>
#include <bit>
#include <deque>
#include <numeric>

namespace memtool::planner::detail {

namespace {

enum class Outcome { found, infeasible, node_limit, budget };

using Candidate = std::pair<std::uint64_t, std::uint32_t>;  // (minimum offset, rank)

class Decision {
 public:
  Decision(const DecisionProblem& d, std::uint64_t capacity, const std::string& keys, std::uint64_t node_limit,
           SearchBudget& budget)
      : d_(d), capacity_(capacity), keys_(keys), nodes_left_(node_limit), budget_(budget) {
    const std::size_t m = d_.size();
    min_offset_.assign(m, 0);
    solution_.assign(m, 0);
    placed_.assign(m, 0);
    floor_.assign(d_.section_count, 0);
    total_ = d_.load;
    effective_.assign(d_.section_count, 0);
    painted_.assign(d_.section_count / 64 + 1, 0);
    most_unplaced_.assign(m, 0);
    budget_.spend(2 * m + 4 * d_.section_count);
  }

  Outcome run() {
    // Boundaries between sections t and t+1 that some buffer's hull crosses.
    cuts_.assign(d_.section_count, 0);
    std::vector<std::int64_t> delta(d_.section_count + 1, 0);
    for (std::uint32_t c = 0; c < d_.size(); ++c) {
      const Span h = d_.hull(c);
      if (h.end - h.first >= 2) {
        ++delta[h.first];
        --delta[h.end - 1];
      }
    }
    std::int64_t running = 0;
    for (std::uint32_t t = 0; t < d_.section_count; ++t) {
      running += delta[t];
      cuts_[t] = static_cast<std::uint32_t>(running);
    }
    Partition whole;
    whole.end_section = d_.section_count;
    whole.by_rank.resize(d_.size());
    std::iota(whole.by_rank.begin(), whole.by_rank.end(), 0U);
    budget_.spend(3 * d_.size() + 2 * d_.section_count);
    return split_and_solve(whole, 0, d_.section_count, 0);
  }
  [[nodiscard]] const std::vector<std::uint64_t>& solution() const { return solution_; }

 private:
  // Unplaced buffers that no other unplaced buffer connects to the rest of the timeline form
  // an independent subproblem (MiniMalloc's dynamic decomposition).
  struct Partition {
    std::uint32_t first_section = 0;
    std::uint32_t end_section = 0;
    std::vector<std::uint32_t> by_rank;  // its buffers (locals), in preorder
  };

  // Splits `partition` at the boundaries in [first, end) that no unplaced buffer crosses any
  // more and solves each piece on its own.
  Outcome split_and_solve(const Partition& partition, std::uint32_t first, std::uint32_t end, std::size_t depth) {
    std::vector<std::uint32_t> cutpoints{partition.first_section};
    const std::uint32_t from = std::max(first, partition.first_section);
    const std::uint32_t to = std::min(end, partition.end_section);
    for (std::uint32_t t = from; t + 1 < to; ++t) {
      if (cuts_[t] == 0) cutpoints.push_back(t + 1);
    }
    cutpoints.push_back(partition.end_section);
    budget_.spend(to - from + 1);
    for (std::size_t k = 0; k + 1 < cutpoints.size(); ++k) {
      Partition piece;
      piece.first_section = cutpoints[k];
      piece.end_section = cutpoints[k + 1];
      for (std::uint32_t c : partition.by_rank) {
        if (placed_[c]) continue;
        const Span h = d_.hull(c);
        if (h.first < piece.end_section && piece.first_section < h.end) piece.by_rank.push_back(c);
      }
      budget_.spend(partition.by_rank.size());
      if (piece.by_rank.empty()) continue;
      preorder(piece.by_rank);
      std::uint64_t min_height = 0;
      if (!enter(piece, 0, nullptr, order_at(depth), min_height)) return Outcome::infeasible;
      const Outcome outcome = explore(piece, depth, 0, 0, min_height);
      if (outcome != Outcome::found) return outcome;
    }
    return Outcome::found;
  }

  // Sorts a piece's buffers by the preorder keys, T (the most unplaced bytes in any of the
  // buffer's sections) taken now, ties by buffer index.
  void preorder(std::vector<std::uint32_t>& locals) {
    std::uint64_t work = 0;
    if (keys_.find('T') != std::string::npos) {
      for (std::uint32_t c : locals) {
        std::uint64_t most = 0;
        const Span* spans = d_.spans_of(c);
        for (std::uint32_t k = 0; k < d_.span_count(c); ++k) {
          for (std::uint32_t t = spans[k].first; t < spans[k].end; ++t) most = std::max(most, total_[t]);
          work += spans[k].end - spans[k].first;
        }
        most_unplaced_[c] = most;
      }
    }
    std::sort(locals.begin(), locals.end(), [&](std::uint32_t x, std::uint32_t y) {
      for (const char key : keys_) {
        switch (key) {
          case 'W':
            if (d_.width[x] != d_.width[y]) return d_.width[x] > d_.width[y];
            break;
          case 'C':
            if (d_.sections[x] != d_.sections[y]) return d_.sections[x] > d_.sections[y];
            break;
          case 'A':
            if (d_.area[x] != d_.area[y]) return d_.area[x] > d_.area[y];
            break;
          case 'T':
            if (most_unplaced_[x] != most_unplaced_[y]) return most_unplaced_[x] > most_unplaced_[y];
            break;
          default:
            break;
        }
      }
      return x < y;
    });
    budget_.spend(work + locals.size() * (4 + 2 * std::bit_width(locals.size())));
  }

  // A node's candidates and the bounds checked before it counts as a node (MiniMalloc checks
  // them before it descends): the unplaced buffers of `partition` by (minimum offset, rank)
  // into `order`, and the lowest top one of them could reach from its minimum offset into
  // `min_height`. `parent`: the parent node's sorted candidates, when this node places one more
  // buffer of the same partition: only the buffers whose minimum offset rose need sorting, then
  // merging. False when a bound fails.
  // `floors_checked`: the parent has checked floors_fit for this offset already.
  bool enter(const Partition& partition, std::uint64_t last_offset, const std::vector<Candidate>* parent,
             std::vector<Candidate>& order, std::uint64_t& min_height, bool floors_checked = false) {
    order.clear();
    min_height = UINT64_MAX;
    if (!floors_checked && !floors_fit(partition, last_offset)) return false;
    if (parent != nullptr) {
      // Written through pointers into vectors sized for the worst case: this loop is most of
      // the search's time.
      order.resize(parent->size());
      raised_.resize(parent->size());
      Candidate* kept = order.data();
      Candidate* rose = raised_.data();
      for (const auto& [off, r] : *parent) {
        const std::uint32_t c = partition.by_rank[r];
        if (placed_[c]) continue;
        const std::uint64_t min_offset = min_offset_[c];
        if (std::max(min_offset, last_offset) + d_.footprint[c] > capacity_) return false;
        min_height = std::min(min_height, min_offset + d_.footprint[c]);
        *(min_offset == off ? kept++ : rose++) = {min_offset, r};
      }
      std::size_t i = static_cast<std::size_t>(kept - order.data());
      std::size_t j = static_cast<std::size_t>(rose - raised_.data());
      raised_.resize(j);
      std::sort(raised_.begin(), raised_.end());
      // Merge from the back: the unchanged ones are already in order.
      order.resize(i + j);
      for (std::size_t k = i + j; j > 0;) {
        if (i > 0 && order[i - 1] > raised_[j - 1]) {
          order[--k] = order[--i];
        } else {
          order[--k] = raised_[--j];
        }
      }
      budget_.spend(parent->size() * 3 + raised_.size() * (4 + std::bit_width(raised_.size())));
    } else {
      for (std::uint32_t r = 0; r < partition.by_rank.size(); ++r) {
        const std::uint32_t c = partition.by_rank[r];
        if (placed_[c]) continue;
        if (std::max(min_offset_[c], last_offset) + d_.footprint[c] > capacity_) return false;
        min_height = std::min(min_height, min_offset_[c] + d_.footprint[c]);
        order.emplace_back(min_offset_[c], r);
      }
      std::sort(order.begin(), order.end());  // ranks are distinct: a total order
      budget_.spend(partition.by_rank.size() * 2 + order.size() * (4 + std::bit_width(order.size())));
    }
    return order.empty() || stacked_sections_fit(partition, order, last_offset);
  }

  // The candidates vector of dfs depth `depth` (kept, so no allocation per node once the
  // search has been that deep; a deque, so deeper frames leave it in place).
  std::vector<Candidate>& order_at(std::size_t depth) {
    while (orders_.size() <= depth) orders_.emplace_back();
    return orders_[depth];
  }

  // A node that passed enter(): its candidates are order_at(depth).
  Outcome explore(const Partition& partition, std::size_t depth, std::uint64_t last_offset, std::uint32_t last_rank,
                  std::uint64_t min_height) {
    if (budget_.exhausted()) return Outcome::budget;
    if (nodes_left_ == 0) return Outcome::node_limit;
    --nodes_left_;
    const std::vector<Candidate>& order = order_at(depth);
    if (order.empty()) return Outcome::found;
    std::vector<Candidate>& child = order_at(depth + 1);
    const std::uint64_t highest = highest_offset(partition);
    for (const auto& [off, r] : order) {
      if (off < last_offset || (off == last_offset && r < last_rank)) continue;  // not canonical
      if (off >= min_height) break;  // dominated (and so is every later one)
      if (off > highest) break;      // the child fails floors_fit (and so does every later one)
      const std::uint32_t c = partition.by_rank[r];
      // Hatless: nothing unplaced conflicts with c, so where c goes constrains nobody; if the
      // rest fails with c at its lowest offset, it fails with c anywhere else too.
      bool hatless = true;
      for (std::uint32_t n : d_.neighbours[c]) {
        if (!placed_[n]) {
          hatless = false;
          break;
        }
      }
      const std::size_t min_mark = min_trail_.size();
      const std::size_t floor_mark = floor_trail_.size();
      place(c, off);
      Outcome outcome = Outcome::infeasible;
      std::uint64_t child_height = 0;
      if (enter(partition, off, &order, child, child_height, /*floors_checked=*/true)) {
        const Span h = d_.hull(c);
        bool split = false;
        for (std::uint32_t t = h.first; t + 1 < h.end; ++t) split |= --cuts_[t] == 0;
        budget_.spend(h.end - h.first);
        outcome = split ? split_and_solve(partition, h.first, h.end, depth + 1)
                        : explore(partition, depth + 1, off, r, child_height);
        for (std::uint32_t t = h.first; t + 1 < h.end; ++t) ++cuts_[t];
      }
      unplace(c, min_mark, floor_mark);
      if (outcome != Outcome::infeasible) return outcome;
      if (hatless) break;
    }
    return Outcome::infeasible;
  }

  void place(std::uint32_t c, std::uint64_t off) {
    const std::uint64_t top = off + d_.footprint[c];
    placed_[c] = 1;
    solution_[c] = off;
    for (std::uint32_t n : d_.neighbours[c]) {
      if (placed_[n]) continue;
      const std::uint64_t raised = align_up(top, d_.alignment[n]);
      if (min_offset_[n] < raised) {
        min_trail_.emplace_back(n, min_offset_[n]);
        min_offset_[n] = raised;
      }
    }
    std::uint64_t work = d_.neighbours[c].size() + 1;
    const Span* spans = d_.spans_of(c);
    for (std::uint32_t k = 0; k < d_.span_count(c); ++k) {
      for (std::uint32_t t = spans[k].first; t < spans[k].end; ++t) {
        floor_trail_.emplace_back(t, floor_[t]);
        floor_[t] = top;
        total_[t] -= d_.footprint[c];
      }
      work += 2 * (spans[k].end - spans[k].first);
    }
    budget_.spend(work);
  }

  void unplace(std::uint32_t c, std::size_t min_mark, std::size_t floor_mark) {
    while (min_trail_.size() > min_mark) {
      min_offset_[min_trail_.back().first] = min_trail_.back().second;
      min_trail_.pop_back();
    }
    while (floor_trail_.size() > floor_mark) {
      floor_[floor_trail_.back().first] = floor_trail_.back().second;
      floor_trail_.pop_back();
    }
    const Span* spans = d_.spans_of(c);
    for (std::uint32_t k = 0; k < d_.span_count(c); ++k) {
      for (std::uint32_t t = spans[k].first; t < spans[k].end; ++t) total_[t] += d_.footprint[c];
    }
    placed_[c] = 0;
  }

  // The cheap part of the section bound, first: every unplaced byte of a section lies above
  // the section's floor and the last placement's offset. O(sections), no sorting.
  [[nodiscard]] bool floors_fit(const Partition& partition, std::uint64_t last_offset) {
    const std::uint32_t lo = partition.first_section;
    const std::uint32_t hi = partition.end_section;
    budget_.spend(hi - lo);
    for (std::uint32_t t = lo; t < hi; ++t) {
      if (total_[t] != 0 && std::max(floor_[t], last_offset) + total_[t] > capacity_) return false;
    }
    return true;
  }

  // The highest offset the next placement can take and still pass floors_fit in the child.
  // Placing c at its minimum offset `off` (at or above every floor in c's sections, since the
  // buffers there conflict with c) turns each section's max(floor, last) + unplaced bytes into
  // max(floor, off) + unplaced bytes, the section's own sections included — whatever c is. So
  // the child's check depends on `off` alone, grows with it, and fails exactly when some
  // section has off > max(floor, C - unplaced bytes): one pass per node instead of per child.
  [[nodiscard]] std::uint64_t highest_offset(const Partition& partition) {
    const std::uint32_t lo = partition.first_section;
    const std::uint32_t hi = partition.end_section;
    budget_.spend(hi - lo);
    std::uint64_t highest = UINT64_MAX;
    for (std::uint32_t t = lo; t < hi; ++t) {
      if (total_[t] == 0) continue;
      const std::uint64_t room = total_[t] >= capacity_ ? 0 : capacity_ - total_[t];
      highest = std::min(highest, std::max(floor_[t], room));
    }
    return highest;
  }

  // The node's section bound: in each section the unplaced bytes stack up from the least lower
  // bound on an unplaced buffer there (its minimum offset, raised to the last placement's
  // offset, since offsets never fall). With the candidates sorted by minimum offset, painting
  // their spans in that order, each section once (a bitmap of painted sections, scanned a word
  // at a time, skips painted runs), gives those least bounds in O(sections + spans) instead of
  // a pass over every section of every span. Painting stops once every section is painted.
  [[nodiscard]] bool stacked_sections_fit(const Partition& partition, const std::vector<Candidate>& order,
                                          std::uint64_t last_offset) {
    const std::uint32_t lo = partition.first_section;
    const std::uint32_t hi = partition.end_section;
    for (std::uint32_t w = lo / 64; w <= (hi - 1) / 64; ++w) painted_[w] = 0;
    std::uint32_t left = hi - lo;
    std::uint64_t work = 2 * (hi - lo) + (hi - lo) / 16 + 2;
    for (const auto& [off, r] : order) {
      const std::uint32_t c = partition.by_rank[r];
      const std::uint64_t base = std::max(off, last_offset);
      const Span* spans = d_.spans_of(c);
      for (std::uint32_t k = 0; k < d_.span_count(c); ++k) {
        const std::uint32_t end = std::min(spans[k].end, hi);
        std::uint32_t t = std::max(spans[k].first, lo);
        while (t < end) {
          const std::uint32_t w = t / 64;
          const std::uint64_t free = ~painted_[w] & (~std::uint64_t{0} << (t % 64));
          if (free == 0) {
            t = (w + 1) * 64;
            ++work;
            continue;
          }
          t = w * 64 + static_cast<std::uint32_t>(std::countr_zero(free));
          if (t >= end) break;
          effective_[t] = base;
          painted_[w] |= std::uint64_t{1} << (t % 64);
          --left;
          ++t;
          ++work;
        }
        ++work;
      }
      if (left == 0) break;
    }
    budget_.spend(work);
    for (std::uint32_t t = lo; t < hi; ++t) {
      if (total_[t] == 0) continue;
      const bool painted = (painted_[t / 64] >> (t % 64)) & 1U;
      const std::uint64_t base = std::max(floor_[t], painted ? effective_[t] : last_offset);
      if (base + total_[t] > capacity_) return false;
    }
    return true;
  }

  const DecisionProblem& d_;
  std::uint64_t capacity_;
  const std::string& keys_;
  std::uint64_t nodes_left_;
  SearchBudget& budget_;
  std::vector<std::uint64_t> min_offset_, solution_, floor_, total_, effective_;
  std::vector<std::uint64_t> most_unplaced_;  // preorder's T, per local
  std::vector<std::uint8_t> placed_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> min_trail_, floor_trail_;
  std::vector<std::uint32_t> cuts_;            // unplaced buffers crossing the boundary after section t
  std::vector<std::uint64_t> painted_;         // stacked_sections_fit: a bit per section
  std::deque<std::vector<Candidate>> orders_;  // per depth: order_at()
  std::vector<Candidate> raised_;              // enter(): candidates whose minimum offset rose
};

}  // namespace

bool branch_and_bound_applies(const Prepared& p) { return decision_problem_applies(p); }

const std::vector<std::string>& preorder_portfolio() {
  static const std::vector<std::string> portfolio{"WAT", "TAW", "TWA", "CAT"};
  return portfolio;
}

DecisionSearch::DecisionSearch(const Prepared& prepared, std::shared_ptr<const DecisionProblem> problem,
                               std::uint64_t capacity, std::vector<std::string> preorders)
    : prepared_(prepared), problem_(std::move(problem)), capacity_(capacity), preorders_(std::move(preorders)) {
  node_limit_ = 2 * std::max<std::uint64_t>(1, problem_->size());  // MiniMalloc's first limit
}

SearchResult DecisionSearch::step(SearchBudget& budget) {
  if (settled_) return answer_;
  const DecisionProblem& d = *problem_;
  if (prepared_.lower_bound > capacity_) {
    settled_ = true;
    answer_.exhausted_space = true;
    return answer_;
  }
  if (budget.exhausted()) return {};
  Decision decision(d, capacity_, preorders_[turn_], node_limit_, budget);
  const Outcome outcome = decision.run();
  if (outcome == Outcome::found) {
    settled_ = true;
    answer_.improved = true;
    answer_.offsets.assign(prepared_.items.size(), 0);
    for (std::uint32_t a = 0; a < d.size(); ++a) {
      const std::uint32_t i = d.items[a];
      answer_.offsets[i] = decision.solution()[a];
      answer_.pool = std::max(answer_.pool, answer_.offsets[i] + d.footprint[a]);
    }
    return answer_;
  }
  if (outcome == Outcome::infeasible) {  // the whole space searched without the node limit biting
    settled_ = true;
    answer_.exhausted_space = true;
    return answer_;
  }
  if (outcome == Outcome::node_limit && ++turn_ == preorders_.size()) {
    turn_ = 0;
    node_limit_ *= 2;
    ++cycles_;
  }
  return {};
}

SearchResult DecisionSearch::resume(SearchBudget& budget) {
  SearchResult result;
  while (!settled_ && !budget.exhausted()) result = step(budget);
  return settled_ ? answer_ : result;
}

SearchResult branch_and_bound(const Prepared& prepared, std::uint64_t capacity, SearchBudget& budget) {
  auto problem = std::make_shared<DecisionProblem>();
  if (!build_decision_problem(prepared, *problem)) return {};
  budget.spend(problem->spans.size() + problem->size());
  DecisionSearch search(prepared, std::move(problem), capacity);
  return search.resume(budget);
}

}  // namespace memtool::planner::detail
