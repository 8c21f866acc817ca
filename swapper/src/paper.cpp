// AutoSwap's strategies (Zhang et al. 2019, SINGA's SwapGPU), as published, on our op sequence.
//
// The paper's time axis is its record index with a host timestamp each; here it is the op index
// with the base timeline's start times, and its transfer model (linear in size, fitted to the
// link) is the Link. Steps, as in the implementation:
//   1. candidates: gaps of buffers >= 1 MiB whose two accesses lie on either side of the peak op;
//   2. scores: DOA (idle time), AOA ((DOA - out - in) * size, or / size when negative), WDOA (the
//      load above the limit summed over the gap's ops), vote (the sum of the three ranks);
//   3. selection: in score order, subtract each buffer from the load over its whole gap, stop
//      once the peak of that ideal load is below the limit (the budget);
//   4. schedule: swap-outs in order of their last access, each starting when its buffer is idle
//      and the previous swap-out has ended (by the transfer model), synchronised at the first op
//      after its estimated end; swap-ins in reverse order of their next access, each ending by
//      that access or by the next swap-in's start. No-overhead keeps the swaps that hide
//      entirely; stick-to-limit moves a swap-out's synchronisation before the first op still
//      over the limit and a swap-in after the last one, paying the stall.
// Published intent where the implementation differs (docs/swapper.md): WDOA is computed (the
// implementation adds to a copy, so it stays 0), DOA subtracts the swap-out and the swap-in time
// (the implementation: the swap-out time twice), and a gap that crosses the iteration boundary is
// a candidate like any other (the implementation stops looking at the first one). paper_bugs
// restores those three. The implementation's index offsets (a swap-out 6 records after the last
// access, its off-by-one over-limit range) belong to its instrumentation, not to the method, and
// are not reproduced.
#include <algorithm>
#include <numeric>

#include "range_load.hpp"
#include "strategies.hpp"

namespace memtool::swapper::detail {
namespace {

struct Candidate {
  Gap gap;
  std::uint64_t size = 0;
  std::uint64_t peak_position = 0;  // unrolled peak op inside the gap
  double doa_origin = 0;
  double doa = 0;
  double aoa = 0;
  double wdoa = 0;
  std::size_t vote = 0;
  std::size_t order = 0;  // position in the candidate list (ties)
  // The schedule, in unrolled positions.
  std::uint64_t out_after = 0;
  std::uint64_t out_sync = 0;
  std::uint64_t in_at = 0;
};

// The paper's load: one value per op, ranges in unrolled positions taken modulo n (a segment
// tree: the selection and the stick-to-limit schedule ask for its peak and its first and last
// op over the limit once per chosen swap).
using Load = RangeLoad;

// Sums of the load above a limit over unrolled ranges, from prefix sums: WDOA for every
// candidate without a scan of its gap. The sums are exact (integers, in a long double's 64-bit
// mantissa), as the scan's were wherever it summed below 2^53.
class ExcessSums {
 public:
  ExcessSums(const std::vector<std::uint64_t>& load, std::int64_t limit) : prefix_(load.size() + 1, 0) {
    for (std::size_t i = 0; i < load.size(); ++i) {
      const std::int64_t above = std::max<std::int64_t>(0, static_cast<std::int64_t>(load[i]) - limit);
      prefix_[i + 1] = prefix_[i] + static_cast<long double>(above);
    }
  }
  // Over unrolled positions [begin, end).
  [[nodiscard]] double over(std::uint64_t begin, std::uint64_t end) const {
    const std::uint64_t n = prefix_.size() - 1;
    if (n == 0 || end <= begin) return 0;
    return static_cast<double>(upto(end) - upto(begin));
  }

 private:
  // Sum over unrolled positions [0, u).
  [[nodiscard]] long double upto(std::uint64_t u) const {
    const std::uint64_t n = prefix_.size() - 1;
    return static_cast<long double>(u / n) * prefix_[n] + prefix_[u % n];
  }
  std::vector<long double> prefix_;
};

std::vector<Candidate> candidates(const PlanInput& input) {
  const std::size_t n = input.iteration.ops.size();
  std::vector<Candidate> list;
  for (const Gap& gap : input.gaps) {
    const std::uint64_t size = input.iteration.buffers[gap.buffer].size;
    std::uint64_t peak = 0;
    if (size < input.options.paper_min_bytes || !spans_peak(input, gap, &peak)) continue;
    if (input.options.paper_bugs && gap.wraps(n)) break;  // the implementation's `break`
    Candidate c;
    c.gap = gap;
    c.size = size;
    c.peak_position = peak;
    c.order = list.size();
    list.push_back(c);
  }
  return list;
}

void score(const PlanInput& input, std::vector<Candidate>& list, std::uint64_t limit_bytes) {
  const ExcessSums excess(input.load, static_cast<std::int64_t>(limit_bytes));
  for (Candidate& c : list) {
    const double out = input.link.d2h_ns(c.size);
    const double in = input.link.h2d_ns(c.size);
    c.doa_origin = input.timeline.start(c.gap.to_op) - input.timeline.start(c.gap.from_op);
    c.doa = c.doa_origin - out - (input.options.paper_bugs ? out : in);
    const auto size = static_cast<double>(c.size);
    c.aoa = c.doa >= 0 ? c.doa * size : c.doa / size;
    c.wdoa = input.options.paper_bugs ? 0.0 : excess.over(c.gap.from_op, c.gap.to_op);
  }
}

template <typename Key>
void sort_descending(std::vector<Candidate>& list, Key key) {
  std::stable_sort(list.begin(), list.end(), [&](const Candidate& a, const Candidate& b) {
    if (key(a) != key(b)) return key(a) > key(b);
    return a.order < b.order;
  });
}

void rank(std::vector<Candidate>& list, PaperScore by) {
  switch (by) {
    case PaperScore::doa:
      sort_descending(list, [](const Candidate& c) { return c.doa_origin; });
      return;
    case PaperScore::aoa:
      sort_descending(list, [](const Candidate& c) { return c.aoa; });
      return;
    case PaperScore::wdoa:
      sort_descending(list, [](const Candidate& c) { return c.wdoa; });
      return;
    case PaperScore::vote:
      break;
  }
  for (Candidate& c : list) c.vote = 0;
  const auto add_ranks = [&] {
    for (std::size_t i = 0; i < list.size(); ++i) list[i].vote += i;
  };
  sort_descending(list, [](const Candidate& c) { return c.doa_origin; });
  add_ranks();
  sort_descending(list, [](const Candidate& c) { return c.aoa; });
  add_ranks();
  sort_descending(list, [](const Candidate& c) { return c.wdoa; });
  add_ranks();
  std::stable_sort(list.begin(), list.end(), [](const Candidate& a, const Candidate& b) {
    if (a.vote != b.vote) return a.vote < b.vote;
    return a.order < b.order;
  });
}

// Greedy in rank order until the ideal load (every chosen buffer out over its whole gap) is
// below the limit.
std::vector<Candidate> select(const PlanInput& input, const std::vector<Candidate>& ranked, std::uint64_t limit_bytes) {
  Load load(input.load);
  const auto limit = static_cast<std::int64_t>(limit_bytes);
  std::vector<Candidate> chosen;
  for (const Candidate& c : ranked) {
    load.add(c.gap.from_op + 1, c.gap.to_op, -static_cast<std::int64_t>(c.size));
    chosen.push_back(c);
    if (load.peak() < limit) break;
  }
  return chosen;
}

// Periods past which no swap-out is followed (see schedule_swap_outs).
constexpr std::uint64_t kUnreachablePeriods = 4;

void schedule_swap_outs(const PlanInput& input, std::vector<Candidate>& chosen, Load* load) {
  const BaseTimeline& t = input.timeline;
  const auto limit = static_cast<std::int64_t>(input.budget_bytes);
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const Candidate& a, const Candidate& b) { return a.gap.from_op < b.gap.from_op; });
  // Past every gap's next access (unrolled positions stay below two periods): a swap-out that
  // ends there is dropped as it would be wherever it ended, so the search stops there.
  const std::uint64_t unreachable_op = kUnreachablePeriods * t.op_count();
  std::uint64_t previous_end = 0;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    Candidate& c = chosen[i];
    std::uint64_t ready = c.gap.from_op;
    if (i > 0) ready = std::max(ready, previous_end);
    c.out_after = std::max(c.gap.from_op, ready == 0 ? 0 : ready - 1);  // starts at t(ready) = end(ready - 1)
    const double done = std::max(t.start(ready), t.end(c.gap.from_op)) + input.link.d2h_ns(c.size);
    ready = t.first_starting_at(done, ready, unreachable_op);
    if (load != nullptr) {  // stick-to-limit: free by the peak, and before the first op over the limit
      ready = std::min(ready, c.peak_position);
      load->add(ready, c.gap.to_op, -static_cast<std::int64_t>(c.size));
      const std::uint64_t over = load->first_over(c.out_after + 1, ready, limit);
      if (over < ready) {
        load->add(over, ready, -static_cast<std::int64_t>(c.size));
        ready = over;
      }
    }
    c.out_sync = ready;
    previous_end = ready;
  }
}

void schedule_swap_ins(const PlanInput& input, std::vector<Candidate>& chosen, Load* load) {
  const BaseTimeline& t = input.timeline;
  const auto limit = static_cast<std::int64_t>(input.budget_bytes);
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const Candidate& a, const Candidate& b) { return a.gap.to_op > b.gap.to_op; });
  std::uint64_t previous_start = 0;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    Candidate& c = chosen[i];
    std::uint64_t need = c.gap.to_op;
    if (i > 0) need = std::min(need, previous_start);
    const double prepare = t.start(need) - input.link.h2d_ns(c.size);
    need = t.op_at(prepare, 0, need);  // the last op that starts by `prepare`, else 0
    if (load != nullptr) {             // stick-to-limit: not before the peak, and after the last op over the limit
      need = std::max(need, c.peak_position + 1);
      load->add(need, c.gap.to_op, static_cast<std::int64_t>(c.size));
      const std::uint64_t over = load->last_over(need, c.gap.to_op, limit);
      if (over < c.gap.to_op) {
        load->add(need, over + 1, -static_cast<std::int64_t>(c.size));
        need = over + 1;
      }
    }
    c.in_at = need;
    previous_start = need;
  }
}

}  // namespace

Schedule paper_schedule(const PlanInput& input, PaperScore by) {
  std::vector<Candidate> list = candidates(input);
  score(input, list, input.budget_bytes);
  rank(list, by);
  std::vector<Candidate> chosen = select(input, list, input.budget_bytes);

  const bool stick = input.options.mode == ScheduleMode::stick_to_limit;
  Load load(input.load);
  schedule_swap_outs(input, chosen, stick ? &load : nullptr);
  schedule_swap_ins(input, chosen, stick ? &load : nullptr);

  Schedule schedule;
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const Candidate& a, const Candidate& b) { return a.gap.from_op < b.gap.from_op; });
  for (const Candidate& c : chosen) {
    Swap swap;
    swap.gap = c.gap;
    swap.out_after_op = c.out_after;
    swap.out_wait_op = c.out_sync;
    swap.in_at_op = c.in_at;
    // Keep what the executor can run: in order inside the gap. No-overhead keeps only the swaps
    // whose transfers hide (the swap-in starts after the swap-out's synchronisation); a swap that
    // cannot be out by the peak does nothing for it.
    const bool ordered = swap.out_after_op < swap.out_wait_op && swap.out_wait_op <= c.gap.to_op &&
                         swap.out_after_op < swap.in_at_op && swap.in_at_op <= c.gap.to_op;
    const bool useful = stick ? swap.out_wait_op <= c.peak_position : swap.in_at_op >= swap.out_wait_op;
    if (ordered && useful) schedule.swaps.push_back(swap);
  }
  return schedule;
}

PlanResult plan_paper(const PlanInput& input, PaperScore by) {
  Simulator simulator;
  return evaluate(input, paper_schedule(input, by), simulator);
}

}  // namespace memtool::swapper::detail
