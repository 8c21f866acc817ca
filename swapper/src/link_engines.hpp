// The two copy engines of the link as an exact event simulation, advanced lazily: the simulator
// enqueues copies as their triggers pass and asks for a copy's end time only when an op has to
// wait for it (and at the end, for all of them). Every copy not yet enqueued is ready no earlier
// than the time the engines have been advanced to, so advancing never runs past a copy that
// should have started.
#pragma once

#include <cstdint>
#include <vector>

namespace memtool::swapper::detail {

enum Direction : std::uint8_t { d2h = 0, h2d = 1 };

struct Copy {
  double bytes = 0;
  double ready_ns = 0;    // its trigger
  std::int32_t dep = -1;  // a copy that must end first (a swap-in's copy-out), or -1
  Direction direction = d2h;
  double start_ns = -1;
  double end_ns = -1;  // -1 until done
};

class LinkEngines {
 public:
  void reset(double d2h_bytes_per_ns, double h2d_bytes_per_ns, double d2h_latency_ns, double h2d_latency_ns,
             double duplex_factor);
  // Appends a copy to its engine's queue; returns its index.
  std::int32_t enqueue(const Copy& copy);
  // Advances until copy `index` has ended; returns its end time.
  double finish(std::int32_t index);
  // Advances through every event at or before `time` (what has ended by then has its end_ns).
  void advance_to(double time);
  // Runs every enqueued copy to its end.
  void drain();
  [[nodiscard]] const std::vector<Copy>& copies() const { return copies_; }
  // The copy enqueued last on `direction`'s engine (it ends after every one before it), or -1.
  [[nodiscard]] std::int32_t last(Direction direction) const {
    const std::vector<std::int32_t>& queue = engines_[direction].queue;
    return queue.empty() ? -1 : queue.back();
  }

 private:
  struct Engine {
    std::vector<std::int32_t> queue;
    std::size_t head = 0;
    std::int32_t active = -1;
    double data_start = 0;  // end of the active copy's latency
    double remaining = 0;   // its bytes still to move
    double bytes_per_ns = 1;
    double latency_ns = 0;
  };
  [[nodiscard]] double ready_at(std::int32_t index) const;
  [[nodiscard]] bool moving(const Engine& engine) const;
  // One event: starts what can start, moves to the next start, latency end or completion.
  // False when nothing is left to happen at or before `limit`.
  bool step(double limit);

  std::vector<Copy> copies_;
  Engine engines_[2];
  double duplex_ = 1;
  double now_ = 0;
};

}  // namespace memtool::swapper::detail
