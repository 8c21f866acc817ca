// Room under the budget (MEMTOOL_BUDGET): the swap policy's device bytes against what the budget
// leaves once the memory below it (the stack's own allocations, the driver's stream-ordered pools,
// graph memory) is counted, and room made by sending resident buffers out, farthest next use
// first, with the rule the simulator runs too (memtool/swapper/eviction_rule.hpp). Committed bytes
// leave out what comes back with a wait, not a copy (copies out under way, frees not reached):
// nothing resident is sent out for them, and they are waited for only when the bytes are needed
// now, and then only the oldest copies until the bytes fit (frees.hpp). While the host may not
// wait (HostWaits: a stream waits for a value), what does not fit is held off the device instead
// (held). The pools below are trimmed (every pool's figures read from the driver) once a work
// item at most while over the budget, and again within one only after something that may have
// changed them (trim_due). Falling short of the budget, or reaching the host limit, is said once.
// Not thread-safe: the swap policy's lock (below_changed excepted).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "memtool/engine/log.hpp"
#include "memtool/engine/resource.hpp"
#include "memtool/engine/resources.hpp"
#include "memtool/swapper/eviction_rule.hpp"
#include "swap/buffer_names.hpp"
#include "swap/frees.hpp"
#include "swap/in_flight.hpp"
#include "swap/move_context.hpp"
#include "swap/oracle.hpp"
#include "swap/swap_out.hpp"

namespace memtool::engine::detail {

class Room {
 public:
  // How make() ends: `wait` — the bytes are needed now, so copies still under way are waited
  // for; `warn` — falling short of the budget is said (once); `quiet` — the caller gives up when
  // there is no room (a swap-in ahead, leaving early).
  enum class Mode : std::uint8_t { wait, warn, quiet };

  // `below`: the resource under the policy (its memory counts against the budget, its pools are
  // trimmed before any buffer leaves). `iteration_begin`: the policy's work item count at the
  // iteration's start (the oracle counts from it).
  Room(const SwapOptions& options, MoveContext& moves, DeferredFrees& frees, SwapOut& out,
       std::map<DevicePtr, SwapBuffer>& buffers, const InFlightItems& in_flight, const IterationOracle& oracle,
       Resource& below, const std::uint64_t& iteration_begin)
      : options_(options),
        moves_(moves),
        frees_(frees),
        out_(out),
        buffers_(buffers),
        in_flight_(in_flight),
        oracle_(oracle),
        below_(below),
        iteration_begin_(iteration_begin) {}
  Room(const Room&) = delete;
  Room& operator=(const Room&) = delete;

  // Host bytes no copy out may pass.
  [[nodiscard]] static std::uint64_t host_limit(const SwapOptions& options) {
    return options.host_limit_bytes == 0 ? std::numeric_limits<std::uint64_t>::max() : options.host_limit_bytes;
  }

  // What the budget leaves for swapped buffers once the memory below is counted.
  [[nodiscard]] std::uint64_t device_budget() const {
    const std::uint64_t others = below_.memory_use().reserved;
    return options_.budget_bytes > others ? options_.budget_bytes - others : 0;
  }

  // Device bytes once the copies under way have finished and the GPU has reached the frees
  // queued so far: memory that comes back without a copy, only a wait, so nothing resident is
  // sent out for it (the program's own synchronous free would have waited there too).
  [[nodiscard]] std::uint64_t committed() const {
    const std::uint64_t held = moves_.mover.device_bytes() - moves_.mover.leaving_bytes();
    return held - std::min(held, frees_.device_bytes());
  }

  // Swap out resident buffers, farthest next use first, until `incoming` more bytes fit in the
  // budget once their copies are done; only buffers needed later than `needed_in` (work items
  // from now) and not used by a work item still being issued (in_flight, which holds the
  // current one's) go.
  void make(std::uint64_t incoming, std::uint64_t needed_in, Mode mode) {
    if (options_.budget_bytes == 0) return;
    std::uint64_t budget = device_budget();
    // What the driver's stream-ordered pools keep after reached frees goes before any buffer does
    // (and their figures are asked again: a synchronisation may have released some), if that
    // may give back more than the last trim did (trim_due).
    if (committed() + incoming > budget && trim_due()) {
      (void)below_.trim_pools(Resource::PoolTrim::beyond_threshold);
      trimmed();
      budget = device_budget();
    }
    if (committed() + incoming <= budget) {
      // Enough once the copies out under way are done: wait for them if the bytes are needed now.
      if (mode == Mode::wait) settle_until_fits(incoming, budget);
      return;
    }
    send_out(incoming, needed_in, mode, budget);
    // Needed now and nothing else can leave: the pools keep nothing, whatever the program asked.
    if (needed_in == 0 && committed() + incoming > budget) {
      (void)below_.trim_pools(Resource::PoolTrim::all);
      trimmed();
      budget = device_budget();
      // (pool frees) The bytes are needed now: the pools' frees the GPU has not reached yet are
      // waited for, then trimmed (pool_frees.hpp; not at each work item's check, Mode::warn).
      if (mode != Mode::warn && committed() + incoming > budget && moves_.host_waits.allowed()) {
        (void)below_.trim_pools(Resource::PoolTrim::all_after_frees);
        budget = device_budget();
      }
    }
    if (mode == Mode::quiet) return;
    // Device memory still held by copies out under way, or by frees the GPU has not reached.
    if (mode == Mode::wait && (moves_.mover.leaving_bytes() != 0 || !frees_.empty())) {
      settle_until_fits(incoming, budget);
    }
    if (committed() + incoming > budget && !said_over_budget_) {
      said_over_budget_ = true;
      log(LogLevel::warn,
          fmt::format("memtool swap: the budget of {} B cannot be met here ({} B must stay on the device); "
                      "memory beyond it is used as the device allows",
                      options_.budget_bytes, committed() + incoming + below_.memory_use().reserved));
    }
  }

  // `incoming` more device bytes are needed now: the oldest copies out (and the frees they reach)
  // are waited for only until they fit in `budget`, not every copy under way (swap/frees.hpp):
  // waiting for the newest drains the GPU's queue (bench/RESULTS.md, the simulator against the
  // process).
  void settle_until_fits(std::uint64_t incoming, std::uint64_t budget) {
    if (moves_.mover.device_bytes() + incoming <= budget) return;
    frees_.settle_until(budget - std::min(budget, incoming));
  }

  // Whether `footprint` more device bytes would pass the budget while the host may not wait
  // (HostWaits: a stream waits for a value). The room copies out under way hold is then out of
  // reach until that value is written (they are ordered after every stream, the waiting one
  // included), so what does not fit stays off the device: a new buffer starts on the host, one
  // that is out is read there, across the link (slower, never wrong), and the budget holds.
  bool held(std::uint64_t footprint) {
    if (options_.budget_bytes == 0 || moves_.mover.device_bytes_with(footprint) <= device_budget() ||
        moves_.host_waits.allowed()) {
      return false;
    }
    ++moves_.counters.held_for_value_waits;
    if (!said_held_) {
      said_held_ = true;
      log(LogLevel::info,
          "memtool swap: a stream waits for a value the program has not written yet, so memtool "
          "cannot wait for room; what does not fit the budget until then is served from host "
          "memory (swap_held_for_value_waits)");
    }
    return true;
  }

  // What memtool never moves (allocations under MEMTOOL_SWAP_MIN_BYTES, pitched ones, the
  // program's pools) is past the budget by itself: no swapping can meet it (MEMTOOL_BUDGET=1 with
  // the default 1M). Said once, with the option to change.
  void say_unmovable_over_budget() {
    const std::uint64_t unmovable = below_.memory_use().reserved;
    if (unmovable <= options_.budget_bytes || said_over_budget_) return;
    said_over_budget_ = true;
    log(LogLevel::warn,
        fmt::format("memtool swap: the budget of {} B cannot be met: {} B are in allocations memtool never moves "
                    "(smaller than MEMTOOL_SWAP_MIN_BYTES={} B, pitched, or from the program's pools); memory beyond "
                    "it is used as the device allows",
                    options_.budget_bytes, unmovable, options_.min_bytes));
  }

  // The memory below changed in a way that may change its pools' figures: an allocation or free
  // passed down (a stream-ordered pool's among them), or a reclaim. The one call made without the
  // policy's lock (a free passed down after it was let go).
  void below_changed() { below_changed_.store(true, std::memory_order_relaxed); }

 private:
  using Issuing = InFlightItems::Issuing;

  // Whether a trim of the pools below may give back more than the last one did, or find their
  // figures changed. They change only with an allocation or free passed down (below_changed), a
  // host wait (the GPU reached frees; a synchronisation releases what a pool keeps beyond its
  // threshold) and the GPU reaching stream-ordered frees as it runs, which is asked about once a
  // work item: make() runs several times an item (the rule's check, each swap-in ahead, leaving
  // early), and asking each time read every pool's attributes from the driver each time.
  [[nodiscard]] bool trim_due() const {
    return below_changed_.load(std::memory_order_relaxed) || moves_.work != trimmed_work_ ||
           moves_.host_waits.stall_ns() != trimmed_stall_ns_;
  }
  void trimmed() {
    below_changed_.store(false, std::memory_order_relaxed);
    trimmed_work_ = moves_.work;
    trimmed_stall_ns_ = moves_.host_waits.stall_ns();  // grows with every host wait
  }

  // The rule's candidates (eviction_rule.hpp) sent out until `incoming` fits `budget`: those a
  // work item being issued touches stay, and so do those it may reach when the caller gives up
  // without room; one needed within `needed_in` is left out here (the rule stops only at one that
  // does not leave at once).
  void send_out(std::uint64_t incoming, std::uint64_t needed_in, Mode mode, std::uint64_t budget) {
    using swapper::EvictionRule;
    const std::uint64_t now = moves_.work - iteration_begin_;
    victims_.clear();
    for (const auto& [ptr, b] : buffers_) {
      if (!b.resident || b.pinned) continue;
      const Issuing use = in_flight_.issuing(ptr);
      if (use == Issuing::touched || (use == Issuing::reached && mode == Mode::quiet)) continue;
      const std::uint64_t distance = oracle_.next_use(BufferNames::key_of(ptr, b), now);
      if (EvictionRule::needed_within(distance, needed_in)) continue;
      victims_.push_back(swapper::RuleCandidate{distance, b.last_work, ptr, b.size, ptr, use == Issuing::reached});
    }
    EvictionRule::make_heap(victims_);
    const std::uint64_t limit = host_limit(options_);
    const auto fits = [&] { return committed() + incoming <= budget; };
    const auto host_room = [&] { return limit - std::min(limit, moves_.counters.host_bytes_now); };
    const EvictionRule::Pass pass =
        EvictionRule::send_out(victims_, needed_in, fits, host_room, [&](const swapper::RuleCandidate& v) {
          const DevicePtr ptr = v.handle;
          SwapBuffer& b = buffers_.at(ptr);
          // Leaving under work that may reach it: the copy (after all work queued so far) lands and the
          // address maps the host copy before that work is queued. Slow, never wrong. (While a stream
          // waits for a value, swap_out starts nothing: it stays.)
          if (!out_.send(ptr, b)) return swapper::Offer::dropped;
          if (v.at_once) {
            frees_.settle(true);
            // That work reads the host copy through the address: no copy back may remap it under
            // the work (swap_out forgot the buffer's streams; table_train --table global faulted).
            const InFlight* mine = in_flight_.mine();
            if (mine != nullptr) moves_.user_marks.user(b, mine->stream);
          }
          return swapper::Offer::sent;
        });
    if (pass.host_full && !said_host_limit_) {
      said_host_limit_ = true;
      log(LogLevel::warn, fmt::format("memtool swap: the host limit of {} B is reached (MEMTOOL_HOST_LIMIT); "
                                      "buffers that would pass it stay on the device",
                                      options_.host_limit_bytes));
    }
  }

  const SwapOptions& options_;
  MoveContext& moves_;
  DeferredFrees& frees_;
  SwapOut& out_;
  std::map<DevicePtr, SwapBuffer>& buffers_;
  const InFlightItems& in_flight_;
  const IterationOracle& oracle_;
  Resource& below_;
  const std::uint64_t& iteration_begin_;
  std::vector<swapper::RuleCandidate> victims_;  // scratch: the rule's candidates to send out
  bool said_over_budget_ = false;
  bool said_host_limit_ = false;
  bool said_held_ = false;
  std::atomic<bool> below_changed_{true};  // since the last trim (none yet: due)
  std::uint64_t trimmed_work_ = 0;         // the work item of the last trim
  std::uint64_t trimmed_stall_ns_ = 0;     // the host waits' stall count then
};

}  // namespace memtool::engine::detail
