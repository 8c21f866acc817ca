// The strategies behind plan() (plan.hpp), one file each, and what they share.
#pragma once

#include <cstdint>
#include <vector>

#include "memtool/swapper/candidates.hpp"
#include "memtool/swapper/plan.hpp"

namespace memtool::swapper::detail {

enum class PaperScore : std::uint8_t { doa, aoa, wdoa, vote };

// Everything a strategy needs about the iteration without swapping.
struct PlanInput {
  const Iteration& iteration;
  const Link& link;
  std::uint64_t budget_bytes;
  const PlanOptions& options;
  BaseTimeline timeline;
  std::vector<std::uint64_t> load;  // live bytes per op
  std::uint32_t peak_op = 0;        // first op with the highest load
  std::vector<Gap> gaps;            // find_gaps
};

// The unrolled position of the peak op inside a gap (from_op, to_op), if the gap spans it.
[[nodiscard]] bool spans_peak(const PlanInput& input, const Gap& gap, std::uint64_t* position = nullptr);

// Simulates `schedule` and fills the result.
[[nodiscard]] PlanResult evaluate(const PlanInput& input, Schedule schedule, Simulator& simulator);

[[nodiscard]] PlanResult plan_paper(const PlanInput& input, PaperScore score);
// plan_paper's schedule, not simulated (ours simulates it its own way).
[[nodiscard]] Schedule paper_schedule(const PlanInput& input, PaperScore score);
[[nodiscard]] PlanResult plan_save_on_cpu(const PlanInput& input);
[[nodiscard]] PlanResult plan_ours(const PlanInput& input);

}  // namespace memtool::swapper::detail
