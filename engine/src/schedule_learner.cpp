// ScheduleLearner: from logged iterations to a planned swap schedule (see schedule_learner.hpp).
#include "schedule_learner.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "memtool/engine/log.hpp"

namespace memtool::engine::detail {
namespace {

constexpr std::uint64_t kDefaultLinkBytesPerSecond = std::uint64_t{51} << 30;  // about an H200's 55 GB/s

}  // namespace

ScheduleLearner::ScheduleLearner(Device& device, SpareTimingEvents& events, std::string policy,
                                 std::uint64_t link_bytes_per_second, std::string problem_path)
    : device_(device),
      policy_(std::move(policy)),
      problem_path_(std::move(problem_path)),
      link_bytes_per_second_(link_bytes_per_second),
      timer_(device, events),
      meter_(device, events) {
  timer_.set_memtool_time([this] { return meter_.host_costs().spent_ns(); });
}

ScheduleLearner::~ScheduleLearner() {
  if (planning_.valid()) planning_.wait();
}

IterationLog& ScheduleLearner::start() {
  log_.clear();
  timer_.begin();
  logging_ = true;
  return log_;
}

void ScheduleLearner::item(StreamId stream, bool reaches_all) {
  (void)log_.item();
  if (reaches_all) log_.reaches_all();
  timer_.item(stream);
}

bool ScheduleLearner::end_iteration() {
  if (matched_) return false;
  if (logging_) {
    timer_.end();
    logging_ = false;
    if (log_.items() == learned_items_ && log_.signature() == learned_signature_) {
      matched_ = true;  // the GPU times come later (advance)
      return false;
    }
    learned_items_ = log_.items();
    learned_signature_ = log_.signature();
  }
  return true;
}

void ScheduleLearner::stop(bool forget) {
  logging_ = false;
  if (forget) {
    learned_items_ = 0;
    learned_signature_.clear();
  }
}

ScheduleLearner::Progress ScheduleLearner::advance(std::uint64_t budget_bytes, PlanReply& out, std::string& why) {
  if (!matched_) return Progress::learning;
  if (!planning_.valid()) {
    std::optional<ItemTimes> times = timer_.poll();
    if (!times) return Progress::planning;
    say_times(*times);
    std::optional<IterationLog::Input> input = log_.to_input(*times, why);
    if (!input) {
      matched_ = false;
      return Progress::failed;
    }
    PlanRequest request;
    request.input = std::move(*input);
    request.link = planning_link();
    request.host = meter_.host_costs().costs();
    if (!sync_probed_) {
      sync_probed_ = true;
      // At the program's waits when it waited (their conditions), else once now.
      const bool at_waits = waits_probe_.rounds() != 0;
      sync_cost_ = at_waits ? waits_probe_.cost() : probe_sync_cost(device_);
      engine::log(LogLevel::info,
                  sync_cost_ ? fmt::format("memtool swap: the host comes back from a wait for the GPU in {:.1f} us "
                                           "(sync probe{}, median of {} rounds from {:.1f} to {:.1f} us)",
                                           sync_cost_->median_ns / 1e3, at_waits ? " after the program's waits" : "",
                                           at_waits ? waits_probe_.rounds() : kSyncProbeRounds,
                                           sync_cost_->low_ns / 1e3, sync_cost_->high_ns / 1e3)
                             : std::string("memtool swap: sync probe: not measured (the device cannot, or a host "
                                           "wait may block now)"));
    }
    request.host.per_sync_ns = sync_cost_ ? sync_cost_->median_ns : 0;
    request.rule_lookahead_ops = rule_lookahead_ops_;
    request.budget_bytes = budget_bytes;
    request.strategy = policy_;
    request.options.mode = swapper::ScheduleMode::stick_to_limit;
    request.items = log_.items();
    request.signature = log_.signature();
    request.problem_path = problem_path_;
    request.host_times = host_times_;
    engine::log(
        LogLevel::info,
        fmt::format("memtool swap: planning {} ({} work items, {} buffers, {} GPU times) for {} B; link {:.3g} GB/s "
                    "to the host, {:.3g} GB/s back, latency {:.0f} and {:.0f} us ({}: {} and {} copies timed)",
                    policy_, request.items, request.input.iteration.buffers.size(),
                    timer_.gpu_timed() ? "measured" : "host-gap", request.budget_bytes, request.link.d2h_bytes_per_ns,
                    request.link.h2d_bytes_per_ns, static_cast<double>(request.link.d2h_latency_ns) / 1e3,
                    static_cast<double>(request.link.h2d_latency_ns) / 1e3, link_source_,
                    meter_.samples(LinkMeter::Direction::to_host), meter_.samples(LinkMeter::Direction::to_device)));
    planning_ = plan_async(std::move(request));
    return Progress::planning;
  }
  if (planning_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return Progress::planning;
  PlanReply reply = planning_.get();
  matched_ = false;
  if (!reply.schedule) {
    why = reply.message;
    return Progress::failed;
  }
  engine::log(LogLevel::info, "memtool swap: " + policy_ + " schedule: " + reply.message);
  out = std::move(reply);
  return Progress::ready;
}

// The learned iteration's time on the GPU and on the program's host (MEMTOOL_LOG=info).
void ScheduleLearner::say_times(const ItemTimes& times) {
  double gpu = 0;
  double host = 0;
  for (const double t : times.gpu_ns) gpu += t;
  for (const double t : times.host_ns) host += t;
  const auto syncs = std::count(times.syncs.begin(), times.syncs.end(), true);
  engine::log(LogLevel::info,
              fmt::format("memtool swap: learned iteration: {} work items, {:.3f} ms on the GPU, {:.3f} ms of the "
                          "program's own host time{}, {} synchronisations (its last: {:.3f} ms on the host, {:.3f} "
                          "of them memtool's, {:.3f} in synchronisations)",
                          times.gpu_ns.size(), gpu / 1e6, host / 1e6, times.host_timed ? "" : " (not used)", syncs,
                          times.wall_ns / 1e6, times.memtool_ns / 1e6, times.sync_wait_ns / 1e6));
}

// MEMTOOL_SWAP_LINK when set; else what the copies timed while learning say, each direction on
// its own (the default 51 GiB/s for one too little timed).
swapper::Link ScheduleLearner::planning_link() {
  swapper::Link link;
  if (link_bytes_per_second_ != 0) {
    link.d2h_bytes_per_ns = link.h2d_bytes_per_ns = static_cast<double>(link_bytes_per_second_) / 1e9;
    link_source_ = "MEMTOOL_SWAP_LINK";
  } else {
    link.d2h_bytes_per_ns = link.h2d_bytes_per_ns = static_cast<double>(kDefaultLinkBytesPerSecond) / 1e9;
    meter_.poll();
    bool measured = false;
    link = meter_.link(link, &measured);
    link_source_ = measured ? "measured" : "default";
  }
  link_ = link;
  return link;
}

void ScheduleLearner::release() {
  timer_.release();
  meter_.release();
}

}  // namespace memtool::engine::detail
