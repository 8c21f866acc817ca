// The link model (link.hpp): its configuration from the environment and the control API, the two
// copy engines (FIFO ticket queues) and the paced transfer loop that holds an engine for the
// modelled time while moving the bytes chunk by chunk.
#include "link.hpp"

#include "driver.hpp"
#include "stats.hpp"
#include "work_observer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace fakecuda {
namespace {

using Clock = std::chrono::steady_clock;

// The unit the bytes move in: small enough that the data lands progressively and the duplex
// factor follows the other direction's state, large enough that pacing costs nothing.
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
constexpr double kMaxLatencyUs = 1e6;

constexpr fakecuda_link_config kDefaultConfig{0.0, 0.0, 1.0, 0.5};

bool valid(const fakecuda_link_config& c) {
  const auto factor_ok = [](double f) { return std::isfinite(f) && f > 0.0 && f <= 1.0; };
  return std::isfinite(c.gbps) && c.gbps >= 0.0 && std::isfinite(c.latency_us) && c.latency_us >= 0.0 &&
         c.latency_us <= kMaxLatencyUs && factor_ok(c.duplex_factor) && factor_ok(c.pageable_factor);
}

// One direction's engine: transfers take tickets and hold the engine in ticket order, whichever
// stream they come from.
class Engine {
 public:
  void acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t ticket = next_ticket_++;
    turn_.wait(lock, [&] { return serving_ == ticket; });
    busy_.store(true, std::memory_order_release);
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_.store(false, std::memory_order_release);
      ++serving_;
    }
    turn_.notify_all();
  }
  bool busy() const noexcept { return busy_.load(std::memory_order_acquire); }

 private:
  std::mutex mutex_;
  std::condition_variable turn_;
  std::uint64_t next_ticket_ = 0;
  std::uint64_t serving_ = 0;
  std::atomic<bool> busy_{false};
};

struct Link {
  std::mutex config_mutex;
  fakecuda_link_config config = kDefaultConfig;
  std::atomic<bool> modelled{false};  // the fast path's one check
  Engine engines[2];
  std::atomic<int> kernels_running{0};
  std::atomic<std::uint64_t> kernels_started{0};
};

Link& link_state() {
  static auto* l = new Link;  // leaked: stream workers may transfer during static destruction
  return *l;
}

void store(Link& l, const fakecuda_link_config& c) {
  std::lock_guard<std::mutex> lock(l.config_mutex);
  l.config = c;
  l.modelled.store(c.gbps > 0.0 || c.latency_us > 0.0, std::memory_order_release);
}

// A whole-string number; "inf" and "unlimited" are infinity.
bool parse_number(const char* text, double& out) {
  if (std::strcmp(text, "unlimited") == 0) {
    out = INFINITY;
    return true;
  }
  char* end = nullptr;
  out = std::strtod(text, &end);
  return end != text && *end == '\0' && !std::isnan(out);
}

// Reads one variable into `field` when it is set and acceptable; otherwise one warning and the
// default stays.
template <class Accept>
void read_variable(const char* name, double& field, Accept accept, const char* expected) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return;
  }
  double value = 0.0;
  if (parse_number(text, value) && accept(value)) {
    field = value;
    return;
  }
  std::fprintf(stderr, "fakecuda: %s=\"%s\" is not %s; using the default\n", name, text, expected);
}

void sleep_until(Clock::time_point t) {
  if (Clock::now() < t) {
    std::this_thread::sleep_until(t);
  }
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

}  // namespace

void load_link_config_from_env() {
  fakecuda_link_config c = kDefaultConfig;
  read_variable(
      "FAKECUDA_LINK_GBPS", c.gbps, [](double v) { return v >= 0.0; },
      "a bandwidth in GB/s (a positive number; 0 or unlimited: no limit)");
  if (std::isinf(c.gbps)) {
    c.gbps = 0.0;
  }
  read_variable(
      "FAKECUDA_LINK_LATENCY_US", c.latency_us, [](double v) { return v >= 0.0 && v <= kMaxLatencyUs; },
      "a latency in microseconds (0 to 1000000)");
  const auto factor = [](double v) { return v > 0.0 && v <= 1.0; };
  read_variable("FAKECUDA_LINK_DUPLEX_FACTOR", c.duplex_factor, factor, "a factor in (0, 1]");
  read_variable("FAKECUDA_LINK_PAGEABLE_FACTOR", c.pageable_factor, factor, "a factor in (0, 1]");
  store(link_state(), c);
}

bool set_link_config(const fakecuda_link_config& config) {
  if (!valid(config)) {
    return false;
  }
  store(link_state(), config);
  return true;
}

fakecuda_link_config link_config() {
  Link& l = link_state();
  std::lock_guard<std::mutex> lock(l.config_mutex);
  return l.config;
}

bool link_modelled() noexcept { return link_state().modelled.load(std::memory_order_acquire); }

void link_transfer(LinkDirection direction, std::size_t bytes, bool pinned,
                   const std::function<void(std::size_t, std::size_t)>& move) {
  Link& l = link_state();
  if (!l.modelled.load(std::memory_order_acquire) || bytes == 0) {
    move(0, bytes);
    return;
  }
  const fakecuda_link_config c = link_config();
  const int mine = direction == LinkDirection::h2d ? 0 : 1;
  Engine& engine = l.engines[mine];
  const Engine& other = l.engines[1 - mine];

  const Clock::time_point queued = Clock::now();
  engine.acquire();
  const Clock::time_point start = Clock::now();
  note_work_started();
  const int kernels_at_start = l.kernels_running.load(std::memory_order_acquire);
  const std::uint64_t started_before = l.kernels_started.load(std::memory_order_acquire);

  // Bytes per second; 0: latency only. Elapsed model time is kept as one sum from `start`, so
  // a late wake-up is made up by the next chunk instead of accumulating.
  const double rate = c.gbps * 1e9 * (pinned ? 1.0 : c.pageable_factor);
  double modelled_s = c.latency_us * 1e-6;
  sleep_until(start + seconds(modelled_s));
  if (rate <= 0.0) {
    move(0, bytes);
  } else {
    for (std::size_t at = 0; at < bytes;) {
      const std::size_t n = std::min(kChunkBytes, bytes - at);
      move(at, at + n);
      modelled_s += static_cast<double>(n) / (other.busy() ? rate * c.duplex_factor : rate);
      sleep_until(start + seconds(modelled_s));
      at += n;
    }
  }
  const Clock::time_point end = Clock::now();
  engine.release();

  Stats& s = stats();
  count(mine == 0 ? s.link_bytes_h2d : s.link_bytes_d2h, bytes);
  count(mine == 0 ? s.link_busy_ns_h2d : s.link_busy_ns_d2h, ns_between(start, end));
  count(s.link_queued_ns, ns_between(queued, start));
  count(s.link_transfers);
  if (!pinned) {
    count(s.link_pageable_transfers);
  }
  if (kernels_at_start > 0 || l.kernels_started.load(std::memory_order_acquire) != started_before) {
    count(s.link_transfers_beside_kernels);
  }
}

void link_migrate(std::size_t to_device, std::size_t to_host) {
  if (!link_modelled()) {
    return;
  }
  const auto nothing = [](std::size_t, std::size_t) {};
  if (to_host > 0) {
    link_transfer(LinkDirection::d2h, to_host, true, nothing);  // evictions make room first
  }
  if (to_device > 0) {
    link_transfer(LinkDirection::h2d, to_device, true, nothing);
  }
}

KernelRunning::KernelRunning() noexcept {
  Link& l = link_state();
  l.kernels_started.fetch_add(1, std::memory_order_acq_rel);
  l.kernels_running.fetch_add(1, std::memory_order_acq_rel);
}

KernelRunning::~KernelRunning() { link_state().kernels_running.fetch_sub(1, std::memory_order_acq_rel); }

}  // namespace fakecuda

FAKECUDA_API int fakecuda_link_configure(const fakecuda_link_config* config) {
  return config != nullptr && fakecuda::set_link_config(*config) ? 0 : -1;
}

FAKECUDA_API void fakecuda_link_get(fakecuda_link_config* out) {
  if (out != nullptr) {
    *out = fakecuda::link_config();
  }
}
