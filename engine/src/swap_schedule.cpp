// SwapSchedule and plan_async (see swap_schedule.hpp).
#include "swap_schedule.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>

#include <fmt/format.h>

#include "memtool/swapper/problem.hpp"

namespace memtool::engine::detail {
namespace {

// MEMTOOL_SWAP_DUMP: the problem as planned, whole or not at all (written aside, then renamed
// over the last one). What happened, for the planning message.
std::string write_problem_file(const PlanRequest& request) {
  const std::string aside = request.problem_path + ".partial";
  {
    std::ofstream out(aside, std::ios::binary | std::ios::trunc);
    if (out) swapper::write_problem(out, {request.input.iteration, request.link, request.budget_bytes, request.host});
    if (!out || !out.flush()) {
      std::remove(aside.c_str());
      return fmt::format("; the problem could not be written to {} (MEMTOOL_SWAP_DUMP)", request.problem_path);
    }
  }
  if (std::rename(aside.c_str(), request.problem_path.c_str()) != 0) {
    const int error = errno;
    std::remove(aside.c_str());
    return fmt::format("; the problem could not be written to {}: {} (MEMTOOL_SWAP_DUMP)", request.problem_path,
                       std::strerror(error));
  }
  return fmt::format("; the problem is in {} (memtool simulate reads it)", request.problem_path);
}

}  // namespace

SwapSchedule::SwapSchedule(swapper::Schedule schedule, std::vector<BufferName> names, std::uint32_t items,
                           std::vector<std::uint64_t> signature, std::uint64_t predicted_peak)
    : schedule_(std::move(schedule)),
      names_(std::move(names)),
      items_(items),
      signature_(std::move(signature)),
      predicted_peak_(predicted_peak) {
  rebuild();
}

namespace {

// Where an unrolled position fires, and the buffer's name there; false past the next iteration.
bool place(const BufferName& born, std::uint64_t position, std::uint32_t items, std::uint32_t& item, BufferName& name) {
  if (position >= 2 * std::uint64_t{items}) return false;
  item = static_cast<std::uint32_t>(position % items);
  name = born;
  if (position >= items && born.birth == Birth::current) name.birth = Birth::previous;
  return true;
}

// Trigger lists per item, as offsets into one array.
void lay_out(std::vector<std::pair<std::uint32_t, SwapSchedule::Trigger>>& at, std::uint32_t items,
             std::vector<std::uint32_t>& begin, std::vector<SwapSchedule::Trigger>& out) {
  std::stable_sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  begin.assign(items + 1, 0);
  for (const auto& [item, t] : at) ++begin[item + 1];
  for (std::uint32_t i = 0; i < items; ++i) begin[i + 1] += begin[i];
  out.clear();
  for (const auto& entry : at) out.push_back(entry.second);
}

}  // namespace

void SwapSchedule::rebuild() {
  if (!dirty_) return;
  std::vector<std::pair<std::uint32_t, Trigger>> outs, ins;
  for (std::uint32_t s = 0; s < schedule_.swaps.size(); ++s) {
    const swapper::Swap& swap = schedule_.swaps[s];
    const BufferName& born = names_.at(swap.gap.buffer);
    std::uint32_t item = 0;
    BufferName name;
    if (place(born, swap.out_after_op + 1, items_, item, name)) outs.emplace_back(item, Trigger{name, s});
    if (place(born, swap.in_at_op, items_, item, name)) ins.emplace_back(item, Trigger{name, s});
  }
  lay_out(outs, items_, out_begin_, outs_);
  lay_out(ins, items_, in_begin_, ins_);
  dirty_ = false;
}

std::span<const SwapSchedule::Trigger> SwapSchedule::outs_at(std::uint32_t item) const {
  if (item >= items_) return {};
  return {outs_.data() + out_begin_[item], out_begin_[item + 1] - out_begin_[item]};
}

std::span<const SwapSchedule::Trigger> SwapSchedule::ins_at(std::uint32_t item) const {
  if (item >= items_) return {};
  return {ins_.data() + in_begin_[item], in_begin_[item + 1] - in_begin_[item]};
}

std::uint64_t SwapSchedule::lead(std::uint32_t swap) const {
  const swapper::Swap& s = schedule_.swaps.at(swap);
  return s.gap.to_op - s.in_at_op;
}

bool SwapSchedule::expects(std::uint64_t ordinal, std::uint64_t footprint) const {
  return ordinal < signature_.size() && signature_[ordinal] == footprint;
}

void SwapSchedule::late(std::uint32_t swap, double late_ns) {
  if (!learning_) return;
  if (swap < planned_late_ns_.size() && late_ns <= planned_late_ns_[swap] * (1 + kPlannedLateSlack)) return;
  swapper::Swap& s = schedule_.swaps.at(swap);
  const std::uint64_t lead = std::max<std::uint64_t>(1, s.gap.to_op - s.in_at_op);
  const std::uint64_t earliest = s.out_after_op + 1;
  const std::uint64_t moved = s.in_at_op > earliest + lead ? s.in_at_op - lead : earliest;
  if (moved != s.in_at_op) {
    s.in_at_op = moved;
    dirty_ = true;
  }
}

std::vector<std::uint64_t> SwapSchedule::copy_ins() const {
  std::vector<std::uint64_t> at;
  at.reserve(schedule_.swaps.size());
  for (const swapper::Swap& s : schedule_.swaps) at.push_back(s.in_at_op);
  return at;
}

void SwapSchedule::restore_copy_ins(const std::vector<std::uint64_t>& at) {
  learning_ = false;
  if (at.size() != schedule_.swaps.size()) return;
  for (std::size_t s = 0; s < at.size(); ++s) {
    if (schedule_.swaps[s].in_at_op != at[s]) dirty_ = true;
    schedule_.swaps[s].in_at_op = at[s];
  }
}

StepPrediction predict_step(const PlanRequest& request, const swapper::Schedule& schedule,
                            std::vector<double>* lateness_ns) {
  // As `memtool simulate --as-executor` predicts the process.
  swapper::SimulateOptions held = swapper::SimulateOptions::as_executor(request.budget_bytes, request.host);
  held.rule_lookahead_ops = request.rule_lookahead_ops;
  const swapper::Simulation sim = swapper::simulate(request.input.iteration, schedule, request.link, held);
  if (lateness_ns != nullptr) {
    lateness_ns->clear();
    for (const swapper::SwapTiming& t : sim.swaps) lateness_ns->push_back(std::max(0.0, t.lateness_ns));
  }
  return {sim.time_ns, static_cast<double>(sim.rule_swaps), static_cast<double>(sim.copies_issued)};
}

namespace {

// Every candidate's step and the rule alone's, as the executor runs them; the message's account
// of them. A simulation that fails leaves the predictions out (timed in turn instead).
std::string predict_steps(const PlanRequest& request, PlanReply& reply) {
  try {
    const auto said = [](const StepPrediction& p) {
      return fmt::format("{:.1f} ms ({:.0f} copies, {:.0f} out by the rule)", p.step_ns / 1e6, p.copies, p.rule_swaps);
    };
    // Each candidate with the lateness its copy-ins are planned with (what learning leaves alone).
    const auto predict = [&](SwapSchedule& candidate) {
      std::vector<double> lateness;
      candidate.set_prediction(predict_step(request, candidate.schedule(), &lateness));
      candidate.set_planned_lateness(std::move(lateness));
    };
    predict(*reply.schedule);
    std::string out = fmt::format("; as the executor runs them: schedule {}", said(reply.schedule->prediction()));
    for (std::size_t i = 0; i < reply.runners_up.size(); ++i) {
      SwapSchedule& up = *reply.runners_up[i];
      predict(up);
      out += fmt::format(", runner-up {} {}", i + 1, said(up.prediction()));
    }
    reply.rule_alone = predict_step(request, swapper::Schedule{});
    return out + fmt::format(", the rule alone {}", said(reply.rule_alone));
  } catch (const std::exception& e) {
    reply.schedule->set_prediction({});
    reply.schedule->set_planned_lateness({});
    for (auto& up : reply.runners_up) {
      up->set_prediction({});
      up->set_planned_lateness({});
    }
    reply.rule_alone = {};
    return fmt::format("; no step predicted as the executor runs it ({})", e.what());
  }
}

}  // namespace

std::future<PlanReply> plan_async(PlanRequest request) {
  return std::async(std::launch::async, [request = std::move(request)]() mutable {
    PlanReply reply;
    try {
      const std::string dumped = request.problem_path.empty() ? std::string() : write_problem_file(request);
      if (!request.host_times) request.input.iteration.host_timed = false;
      swapper::PlanResult result =
          swapper::plan(request.input.iteration, request.link, request.budget_bytes, request.strategy, request.options);
      const swapper::Simulation& sim = result.simulation;
      reply.message = fmt::format(
          "{} swaps ({}), predicted peak {} B against {} B{}, {:.1f}% slowdown ({:.1f} ms an iteration, {:.1f} ms "
          "without swapping), {} B out per iteration",
          result.schedule.swaps.size(), result.construction, sim.peak_bytes, request.budget_bytes,
          result.budget_met ? "" : " (not met)", 100.0 * sim.slowdown, sim.time_ns / 1e6, sim.base_time_ns / 1e6,
          sim.bytes_out);
      for (swapper::PlanResult::Alternative& alt : result.alternatives) {
        const std::size_t n = reply.runners_up.size() + 1;
        reply.message +=
            fmt::format("; runner-up {} ({}): {} swaps, predicted peak {} B, {:.1f}% slowdown", n, alt.construction,
                        alt.schedule.swaps.size(), alt.simulation.peak_bytes, 100.0 * alt.simulation.slowdown);
        auto& up = reply.runners_up.emplace_back(std::make_unique<SwapSchedule>(
            std::move(alt.schedule), request.input.names, request.items, request.signature, alt.simulation.peak_bytes));
        up->set_label(fmt::format("{} runner-up {} ({})", request.strategy, n, alt.construction));
      }
      reply.schedule = std::make_unique<SwapSchedule>(std::move(result.schedule), request.input.names, request.items,
                                                      request.signature, sim.peak_bytes);
      reply.schedule->set_label(fmt::format("{} schedule", request.strategy));
      reply.message += predict_steps(request, reply) + dumped;
    } catch (const std::exception& e) {
      reply.schedule.reset();
      reply.runners_up.clear();
      reply.message = e.what();
    }
    return reply;
  });
}

}  // namespace memtool::engine::detail
