// The branch and bound's view of a problem, built once and shared by every decision search on
// it (every capacity, every preorder): the buffers with a footprint ("locals"), their conflict
// lists, time cut into MiniMalloc's sections and the static preorder keys.
//
// Sections here are MiniMalloc's (its sweeper's): a new section starts only where some interval
// ends, so each section is the set of buffers live just before one end time — a clique of the
// interval graph. Consecutive starts with no end between them fall into one section, which
// roughly halves the section count of Prepared's (one per endpoint) and so every per-section
// loop of the search; the bounds are the same, since a section's load is that of its last
// moment, its largest.
#pragma once

#include <cstdint>
#include <vector>

#include "prepared.hpp"

namespace memtool::planner::detail {

struct DecisionProblem {
  std::vector<std::uint32_t> items;                    // local -> item (footprint != 0)
  std::vector<std::vector<std::uint32_t>> neighbours;  // local -> conflicting locals
  std::uint32_t section_count = 0;
  std::vector<Span> spans;                // every local's spans, in section coordinates
  std::vector<std::uint32_t> first_span;  // local -> its first span; size locals + 1
  std::vector<std::uint64_t> load;        // footprint bytes live per section
  std::vector<std::uint64_t> footprint;   // per local
  std::vector<std::uint64_t> alignment;   // per local
  // Static preorder keys (MiniMalloc's names): W, the time from the first start to the last end
  // (`upper - lower`); C, the sections from the first to the last; A, footprint × W.
  std::vector<std::uint64_t> width;
  std::vector<std::uint32_t> sections;
  std::vector<long double> area;

  [[nodiscard]] std::uint32_t size() const { return static_cast<std::uint32_t>(items.size()); }
  [[nodiscard]] const Span* spans_of(std::uint32_t local) const { return spans.data() + first_span[local]; }
  [[nodiscard]] std::uint32_t span_count(std::uint32_t local) const {
    return first_span[local + 1] - first_span[local];
  }
  // Sections [first, end) from the first span's start to the last span's end.
  [[nodiscard]] Span hull(std::uint32_t local) const {
    return {spans[first_span[local]].first, spans[first_span[local + 1] - 1].end};
  }
};

// Whether the problem is small enough for the search (at most kMaxItems buffers).
[[nodiscard]] bool decision_problem_applies(const Prepared& prepared);

// False when the conflict lists would not fit in memory (too many conflicting pairs).
[[nodiscard]] bool build_decision_problem(const Prepared& prepared, DecisionProblem& out);

// What building it cost, in work units (search_budget.hpp).
[[nodiscard]] std::uint64_t decision_problem_work(const DecisionProblem& problem);

}  // namespace memtool::planner::detail
