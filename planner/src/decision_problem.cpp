// DecisionProblem: see decision_problem.hpp.
#include "decision_problem.hpp"

#include "interval_index.hpp"

namespace memtool::planner::detail {

namespace {

constexpr std::uint32_t kMaxItems = 6000;
constexpr std::uint64_t kMaxConflictEntries = 40'000'000;

// Conflict lists among the locals, from an interval index over Prepared's sections (exact:
// two buffers conflict when two of their intervals intersect).
bool build_neighbours(const Prepared& p, const std::vector<std::uint32_t>& local, DecisionProblem& d) {
  IntervalIndex index(p.section_count);
  for (std::uint32_t i : d.items) {
    const Span* spans = p.spans_of(i);
    for (std::uint32_t k = 0; k < p.items[i].span_count; ++k) index.insert(i, spans[k]);
  }
  d.neighbours.assign(d.items.size(), {});
  std::vector<std::uint32_t> stamp(p.items.size(), UINT32_MAX);
  std::uint64_t entries = 0;
  for (std::uint32_t a = 0; a < d.items.size(); ++a) {
    const std::uint32_t i = d.items[a];
    const Span* spans = p.spans_of(i);
    for (std::uint32_t k = 0; k < p.items[i].span_count; ++k) {
      index.for_each_intersecting(spans[k], [&](std::uint32_t other) {
        if (other == i || stamp[other] == a) return;
        stamp[other] = a;
        d.neighbours[a].push_back(local[other]);
      });
    }
    entries += d.neighbours[a].size();
    if (entries > kMaxConflictEntries) return false;
  }
  return true;
}

}  // namespace

std::uint64_t decision_problem_work(const DecisionProblem& d) {
  std::uint64_t entries = 0;
  for (const auto& n : d.neighbours) entries += n.size();
  return 5 * entries + 50 * d.spans.size() + 4 * std::uint64_t{d.section_count};
}

bool decision_problem_applies(const Prepared& p) {
  std::uint32_t m = 0;
  for (const Item& it : p.items) m += it.footprint != 0 ? 1U : 0U;
  return m <= kMaxItems;
}

bool build_decision_problem(const Prepared& p, DecisionProblem& d) {
  d = DecisionProblem{};
  std::vector<std::uint32_t> local(p.items.size(), UINT32_MAX);
  for (std::uint32_t i = 0; i < p.items.size(); ++i) {
    if (p.items[i].footprint == 0) continue;
    local[i] = static_cast<std::uint32_t>(d.items.size());
    d.items.push_back(i);
  }
  if (!build_neighbours(p, local, d)) return false;
  // Section of each of Prepared's: the number of end times at or before its start.
  std::vector<std::uint8_t> ends(p.times.size() + 1, 0);
  for (const Span& s : p.spans) ends[s.end] = 1;
  std::vector<std::uint32_t> section_of(p.section_count + 1, 0);
  for (std::uint32_t k = 1; k <= p.section_count; ++k) section_of[k] = section_of[k - 1] + ends[k];
  d.section_count = p.section_count == 0 ? 0 : section_of[p.section_count - 1] + 1;
  const std::size_t m = d.items.size();
  d.first_span.assign(m + 1, 0);
  d.footprint.resize(m);
  d.alignment.resize(m);
  d.width.resize(m);
  d.sections.resize(m);
  d.area.resize(m);
  std::vector<std::uint64_t> add(d.section_count + 1, 0);
  for (std::uint32_t a = 0; a < m; ++a) {
    const Item& it = p.items[d.items[a]];
    const Span* spans = p.spans_of(d.items[a]);
    d.first_span[a] = static_cast<std::uint32_t>(d.spans.size());
    for (std::uint32_t k = 0; k < it.span_count; ++k) {
      // An interval ends at an end time, so its last section closes a section here too.
      const Span s{section_of[spans[k].first], section_of[spans[k].end - 1] + 1};
      d.spans.push_back(s);
      add[s.first] += it.footprint;
      add[s.end] -= it.footprint;  // wraps and comes back: the running sum below stays exact
    }
    d.footprint[a] = it.footprint;
    d.alignment[a] = it.alignment;
    d.width[a] = p.times[spans[it.span_count - 1].end] - p.times[spans[0].first];
    d.sections[a] = d.spans.back().end - d.spans[d.first_span[a]].first;
    d.area[a] = static_cast<long double>(it.footprint) * static_cast<long double>(d.width[a]);
  }
  d.first_span[m] = static_cast<std::uint32_t>(d.spans.size());
  d.load.assign(d.section_count, 0);
  std::uint64_t live = 0;
  for (std::uint32_t t = 0; t < d.section_count; ++t) {
    live += add[t];
    d.load[t] = live;
  }
  return true;
}

}  // namespace memtool::planner::detail
