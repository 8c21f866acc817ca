// What the host link really moves, for the swap planner: the copies the swap policy makes while
// it learns are bracketed with timing events on their streams, and each direction's bandwidth and
// latency are fitted to their GPU times. MEMTOOL_SWAP_LINK then needs no guess: a PCIe 4 or 5
// link, a GH200's NVLink-C2C or fakecuda's FAKECUDA_LINK_GBPS all read as what they are,
// contention between the two directions included.
//
// A copy's start event is recorded right before the copy is queued, after the waits that order
// it and the mover's host work (swap/side_streams.hpp: that work is the swap's host cost per
// copy, not the link's latency), but it fires when its stream reaches it, and a direction's
// copies on every stream take turns on one copy engine: a copy issued while another stream's
// copy holds the engine waits for it. Each sample is the copy's own
// time on the engine (poll): from the later of its start and the end of the copy the engine
// served before it, its direction's copies ordered by their ends on the GPU's clock. So every
// swap copy is timed, on whichever stream (swap/side_streams.hpp). Not thread-safe: the swap
// policy's lock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "memtool/engine/device.hpp"
#include "memtool/swapper/iteration.hpp"
#include "spare_events.hpp"
#include "swap/host_costs.hpp"

namespace memtool::engine::detail {

// One timed copy.
struct CopySample {
  std::uint64_t bytes = 0;
  double ns = 0;
};

// One direction's fit: ns = latency + bytes / bytes_per_ns.
struct LinkFit {
  double bytes_per_ns = 0;
  double latency_ns = 0;
};

// A robust line (Theil-Sen: the median slope over pairs of copies of different sizes, the median
// intercept, not below 0), so that a few copies that waited behind others do not bend it; when
// the sizes are too alike to separate latency from bandwidth (or the slope says nonsense), the
// median rate, latency 0. nullopt with fewer than kMinSamples samples or under kMinBytes in all.
[[nodiscard]] std::optional<LinkFit> fit_link(const std::vector<CopySample>& samples);

class LinkMeter {
 public:
  static constexpr std::size_t kMinSamples = 4;
  static constexpr std::uint64_t kMinBytes = std::uint64_t{4} << 20;
  static constexpr std::size_t kEnough = 256;  // per direction: timing stops there

  enum class Direction : std::uint8_t { to_host, to_device };

  LinkMeter(Device& device, SpareTimingEvents& events) : device_(device), events_(events) {}
  ~LinkMeter() = default;
  LinkMeter(const LinkMeter&) = delete;
  LinkMeter& operator=(const LinkMeter&) = delete;

  // Around one copy on `stream`: start() right before it is queued, finish() right after (or
  // abandon() when it was not queued).
  // start() answers 0 when this direction has enough samples or no event can be had.
  [[nodiscard]] EventId start(Direction d, StreamId stream);
  void finish(EventId start, Direction d, StreamId stream, std::uint64_t bytes);
  // The copy was not queued after all: its start event back to the spares (0: nothing).
  void abandon(EventId& start) { events_.give(start); }
  // Completed copies become samples, each its own time on its direction's engine.
  void poll();
  // The link to plan with: each direction fitted where it has enough samples, else `fallback`'s
  // figures for it; `measured` tells whether any was fitted.
  [[nodiscard]] swapper::Link link(const swapper::Link& fallback, bool* measured) const;
  [[nodiscard]] std::size_t samples(Direction d) const { return samples_[index(d)].size(); }
  // Every event back to the spares (before they are destroyed).
  void release();
  // The swap policy's own host time per work item and per copy (swap/host_costs.hpp), priced
  // beside the link: the planner's problem carries both.
  HostCostMeter& host_costs() { return host_costs_; }

 private:
  struct Pending {
    EventId start;
    EventId end;
    std::uint64_t bytes;
    Direction direction;
  };
  static std::size_t index(Direction d) { return d == Direction::to_host ? 0 : 1; }

  Device& device_;
  SpareTimingEvents& events_;
  std::vector<Pending> pending_;
  std::vector<CopySample> samples_[2];
  HostCostMeter host_costs_;
};

}  // namespace memtool::engine::detail
