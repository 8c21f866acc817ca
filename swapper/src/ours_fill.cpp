// Our strategy's constructive plan (ours_context.hpp): fill the ideal load down to a target.
//
// The ideal load is the live bytes per op with every chosen buffer out wherever it can be. Each
// candidate's worth is the byte-time above the target it removes from that load per nanosecond
// of link time, over the ops it can be out without stalling anything (after its copy-out, before
// a copy-in that arrives in time, at the link's uncontended speed). Candidates are taken in order
// of worth, re-evaluated lazily (a worth only falls as the load falls), until the ideal load is
// within the target; if hidden transfers do not get there, the rest are weighed over their whole
// gap (their transfers will cost stall). Then each chosen swap gets what the target needs of it:
// its copy-out waited for at the first op where the load with it would exceed the target, its
// swap-in held back until after the last such op, both re-timed by the shared re-timing, and the
// simulation says what that costs.
#include <algorithm>
#include <queue>

#include "ours_context.hpp"
#include "range_load.hpp"

namespace memtool::swapper::detail {
namespace {

// The fill's deterministic work limit: ops summed by worth() while candidates are re-ranked (a
// long iteration's many overlapping gaps made that quadratic). None of the shared problems comes
// near it (tests/unit/swapper/test_schedule_golden.cpp); a step of 100,000 ops reaches it.
constexpr std::uint64_t kEvaluationLimit = std::uint64_t{1} << 28;

using Pick = FillPick;

class Filler {
 public:
  Filler(OursContext& context, std::uint64_t target)
      : c_(context),
        t_(context.input.timeline),
        target_(static_cast<std::int64_t>(target)),
        load_(context.input.load.begin(), context.input.load.end()),
        peaks_(load_),
        picked_(context.candidates.size(), false) {
    durations_.reserve(load_.size());
    for (std::size_t i = 0; i < load_.size(); ++i) durations_.push_back(c_.duration(i));
  }

  std::vector<Pick> choose() {
    fill(true);
    if (peak() > target_) fill(false);
    return picks_;
  }

  [[nodiscard]] std::int64_t load_at(std::uint64_t u) const { return load_[u % load_.size()]; }

 private:
  [[nodiscard]] std::int64_t peak() const { return peaks_.peak(); }

  // Ops of the gap the candidate can be out of: hidden transfers only, or the whole gap.
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> window(const Candidate& c, bool hidden) const {
    const std::uint64_t first = c.gap.from_op + 1;
    const std::uint64_t last = c.gap.to_op - 1;
    if (!hidden) return {first, c.gap.to_op};
    const double out_done = t_.end(c.gap.from_op) + c.out_ns;
    const double in_start = t_.start(c.gap.to_op) - c.in_ns;
    std::uint64_t begin = t_.op_at(out_done, first, last);
    if (t_.start(begin) < out_done) ++begin;
    std::uint64_t end = t_.op_at(in_start, first, last);
    if (t_.end(end) <= in_start) ++end;
    return {begin, std::max(begin, end)};
  }

  // The same sum, term by term in the same order, as a scan of load_at(u) over the window; the
  // ops are walked period by period without a division per op.
  [[nodiscard]] double worth(const Candidate& c, std::pair<std::uint64_t, std::uint64_t> w) {
    double removed = 0;
    const auto size = static_cast<std::int64_t>(c.size);
    const std::size_t n = load_.size();
    if (w.second > w.first) evaluated_ += w.second - w.first;
    for (std::uint64_t u = w.first; u < w.second;) {
      const std::size_t first = u % n;
      const std::size_t last = static_cast<std::size_t>(std::min<std::uint64_t>(n, first + (w.second - u)));
      for (std::size_t i = first; i < last; ++i) {
        const std::int64_t above = std::min(size, load_[i] - target_);
        if (above > 0) removed += static_cast<double>(above) * durations_[i];
      }
      u += last - first;
    }
    return removed / (c.out_ns + c.in_ns);
  }

  void fill(bool hidden) {
    using Entry = std::pair<double, std::uint32_t>;
    std::priority_queue<Entry> heap;
    for (std::uint32_t k = 0; k < c_.candidates.size(); ++k) {
      if (picked_[k]) continue;
      const double w = worth(c_.candidates[k], window(c_.candidates[k], hidden));
      if (w > 0) heap.emplace(w, k);
    }
    while (!heap.empty() && peak() > target_) {
      const auto [heap_worth, k] = heap.top();
      heap.pop();
      const Candidate& c = c_.candidates[k];
      const auto w = window(c, hidden);
      // Past the work limit, a candidate is taken at the worth it was ranked by.
      const double now = evaluated_ < kEvaluationLimit ? worth(c, w) : heap_worth;
      if (now <= 0) continue;
      if (!heap.empty() && now < heap.top().first) {
        heap.emplace(now, k);
        continue;
      }
      picked_[k] = true;
      picks_.push_back({k, w.first, w.second});
      const std::size_t n = load_.size();
      for (std::uint64_t u = w.first; u < w.second;) {  // period by period
        const std::size_t first = u % n;
        const std::size_t last = static_cast<std::size_t>(std::min<std::uint64_t>(n, first + (w.second - u)));
        for (std::size_t i = first; i < last; ++i) load_[i] -= static_cast<std::int64_t>(c.size);
        peaks_.add(u, u + (last - first), -static_cast<std::int64_t>(c.size));
        u += last - first;
      }
    }
  }

  OursContext& c_;
  const BaseTimeline& t_;
  std::int64_t target_;
  std::vector<std::int64_t> load_;
  RangeLoad peaks_;                // load_ again, for its peak
  std::vector<double> durations_;  // per op
  std::uint64_t evaluated_ = 0;    // ops summed by worth()
  std::vector<bool> picked_;
  std::vector<Pick> picks_;
};

// Each chosen swap gets what the target needs of it, from the ideal load with every pick out.
State time_picks(OursContext& context, const State& base, const std::vector<Pick>& picks, std::uint64_t target) {
  std::vector<std::int64_t> load(context.input.load.begin(), context.input.load.end());
  const std::uint64_t n = load.size();
  for (const Pick& pick : picks) {
    const auto size = static_cast<std::int64_t>(context.candidates[pick.candidate].size);
    for (std::uint64_t u = pick.begin; u < pick.end;) {  // period by period
      const std::size_t first = u % n;
      const std::size_t last = static_cast<std::size_t>(std::min<std::uint64_t>(n, first + (pick.end - u)));
      for (std::size_t i = first; i < last; ++i) load[i] -= size;
      u += last - first;
    }
  }
  const auto limit = static_cast<std::int64_t>(target);
  RangeLoad tree(load);
  State state;
  for (const Pick& pick : picks) {
    Planned p = context.plain(pick.candidate);
    const Gap& gap = p.swap.gap;
    const auto size = static_cast<std::int64_t>(context.candidates[pick.candidate].size);
    // Where the load with this buffer back would exceed the target: it must be out there. A gap
    // covers each op once (it is shorter than the iteration), so the tree answers for it.
    std::uint64_t first_needed = gap.to_op;
    std::uint64_t last_needed = gap.from_op;
    if (gap.to_op - gap.from_op <= n) {
      tree.add(pick.begin, pick.end, size);
      const std::uint64_t first = tree.first_over(gap.from_op + 1, gap.to_op, limit);
      if (first < gap.to_op) {
        first_needed = first;
        last_needed = tree.last_over(gap.from_op + 1, gap.to_op, limit);
      }
      tree.add(pick.begin, pick.end, -size);
    } else {
      for (std::uint64_t u = gap.from_op + 1; u < gap.to_op; ++u) {
        const bool out_here = u >= pick.begin && u < pick.end;
        if (load[u % n] + (out_here ? size : 0) <= limit) continue;
        first_needed = std::min(first_needed, u);
        last_needed = u;
      }
    }
    if (first_needed < gap.to_op) {
      // A copy-out moved past an op reaching every buffer (OursContext::plain) is waited for by none before it.
      if (first_needed > p.swap.out_after_op) p.swap.out_wait_op = first_needed;
      p.earliest_in = last_needed + 1;
    }
    state.planned.push_back(p);
  }
  context.evaluate(state, base, target);
  context.add_waits(state);
  return state;
}

}  // namespace

State fill_to_target(OursContext& context, const State& base, std::uint64_t target, FillMemo& memo) {
  auto known = std::find_if(memo.begin(), memo.end(), [&](const auto& entry) { return entry.first == target; });
  if (known == memo.end()) {
    Filler filler(context, target);
    memo.emplace_back(target, filler.choose());
    known = memo.end() - 1;
  }
  State state = time_picks(context, base, known->second, target);
  state.construction = "fill";
  return state;
}

}  // namespace memtool::swapper::detail
