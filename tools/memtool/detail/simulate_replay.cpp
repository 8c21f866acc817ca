// simulate_trace: the event loop, and the two ways a resource is driven (see simulate_replay.hpp).
#include "detail/simulate_replay.hpp"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include "memtool/engine/baselines.hpp"
#include "memtool/engine/engine.hpp"
#include "memtool/engine/sim_device.hpp"
#include "memtool/trace/signature.hpp"

namespace memtool::cli {
namespace {

namespace me = memtool::engine;
namespace mt = memtool::trace;

constexpr std::uint64_t kProgressThresholdEvents = std::uint64_t{1} << 20;

// What the replay calls, in libmemtool.so's handlers' terms.
class Target {
 public:
  virtual ~Target() = default;
  virtual me::Status allocate(std::uint64_t size, me::MemoryKind kind, me::StreamId stream, me::DevicePtr* out) = 0;
  virtual me::Status release(me::DevicePtr ptr, me::MemoryKind kind, me::StreamId stream) = 0;
  virtual void launch(std::span<const std::uint64_t> buffers, me::StreamId stream, std::uint64_t kernel) = 0;
  virtual void transfer(me::DevicePtr dst, me::DevicePtr src, me::StreamId stream, me::AccessKind kind,
                        std::uint64_t token) = 0;
  virtual void mark() = 0;
  virtual std::optional<me::Summary> finish() = 0;
};

// A baseline: its stack called as the runtime calls one (no observer: baselines plan nothing).
class ResourceTarget final : public Target {
 public:
  ResourceTarget(std::string_view name, me::Device& device) : resource_(me::make_baseline(name, device)) {}
  me::Status allocate(std::uint64_t size, me::MemoryKind kind, me::StreamId stream, me::DevicePtr* out) override {
    return resource_->allocate(me::AllocationRequest{size, kind, kind == me::MemoryKind::async ? stream : 0, 0}, out);
  }
  me::Status release(me::DevicePtr ptr, me::MemoryKind kind, me::StreamId stream) override {
    return resource_->deallocate(ptr, kind, stream);
  }
  void launch(std::span<const std::uint64_t> buffers, me::StreamId stream, std::uint64_t) override {
    access(buffers, stream);
  }
  void transfer(me::DevicePtr dst, me::DevicePtr src, me::StreamId stream, me::AccessKind, std::uint64_t) override {
    const std::uint64_t both[2] = {dst, src};
    access(std::span<const std::uint64_t>(both, src != 0 ? 2 : 1), stream);
  }
  void mark() override {}
  std::optional<me::Summary> finish() override {
    resource_->shutdown(true);
    return std::nullopt;
  }

 private:
  void access(std::span<const std::uint64_t> buffers, me::StreamId stream) {
    if (!resource_->wants_accesses()) return;
    for (const std::uint64_t base : buffers) resource_->before_access(base, stream);
  }
  std::unique_ptr<me::Resource> resource_;
};

// The planned pool: the whole engine, deterministic (step finding and planning inline).
class EngineTarget final : public Target {
 public:
  explicit EngineTarget(me::Device& device) : engine_(device, options()) {}
  me::Status allocate(std::uint64_t size, me::MemoryKind kind, me::StreamId stream, me::DevicePtr* out) override {
    return engine_.allocate(size, kind, stream, out);
  }
  me::Status release(me::DevicePtr ptr, me::MemoryKind kind, me::StreamId stream) override {
    return engine_.release(ptr, kind, stream);
  }
  void launch(std::span<const std::uint64_t> buffers, me::StreamId stream, std::uint64_t kernel) override {
    engine_.launch(buffers, stream, kernel);
  }
  void transfer(me::DevicePtr dst, me::DevicePtr src, me::StreamId stream, me::AccessKind kind,
                std::uint64_t token) override {
    engine_.transfer(dst, src, stream, kind, token);
  }
  void mark() override { engine_.mark_iteration(); }
  std::optional<me::Summary> finish() override {
    me::Summary summary = engine_.summary();
    engine_.shutdown(true);
    return summary;
  }

 private:
  static me::EngineOptions options() {
    me::EngineOptions o;
    o.strategy.name = "pool";
    o.strategy.pool.synchronous_planning = true;
    o.observer.synchronous_detection = true;
    return o;
  }
  me::Engine engine_;
};

// For inputs with many events: "memtool: simulating NAME (N events)" at the start, then
// "memtool: simulating NAME: 40%" at most every half second.
class Progress {
 public:
  Progress(bool enabled, std::string_view name, std::size_t total)
      : enabled_(enabled && total >= kProgressThresholdEvents), name_(name), total_(total) {
    if (enabled_) fmt::print(stderr, "memtool: simulating {} ({} events)\n", name_, total_);
  }
  void at(std::size_t done) {
    if (!enabled_ || (done & 0xffff) != 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    fmt::print(stderr, "memtool: simulating {}: {:.0f}%\n", name_,
               100.0 * static_cast<double>(done) / static_cast<double>(total_));
  }

 private:
  bool enabled_;
  std::string_view name_;
  std::size_t total_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

ResourceOutcome replay(const mt::TraceModel& model, const std::string& name, const SimulationOptions& options) {
  me::SimDevice::Options device_options;
  device_options.capacity = options.capacity.value_or(~std::uint64_t{0});
  device_options.driver_granularity = true;
  me::SimDevice device(device_options);
  std::unique_ptr<Target> target;
  if (name == "planned-pool") {
    target = std::make_unique<EngineTarget>(device);
  } else {
    target = std::make_unique<ResourceTarget>(name, device);
  }

  // Buffers the model ended because their address was allocated again (never freed): freed
  // here just before that allocation, as the program must have freed them.
  std::unordered_multimap<std::uint64_t, std::uint32_t> ended_by_reuse;
  for (std::uint32_t b = 0; b < model.buffer_count(); ++b) {
    if (model.buffers()[b].ended_by_reuse) ended_by_reuse.emplace(model.buffers()[b].free_event, b);
  }

  ResourceOutcome out;
  out.name = name;
  std::vector<me::DevicePtr> address(model.buffer_count(), 0);  // 0: not live in the replay
  std::uint64_t live = 0;
  auto end_buffer = [&](mt::BufferId id, me::MemoryKind kind, me::StreamId stream) {
    me::DevicePtr& ptr = address[id.value()];
    if (ptr == 0) return;
    if (target->release(ptr, kind, stream) != me::kSuccess) {
      throw std::logic_error(fmt::format("{} refused to free a buffer it handed out", name));
    }
    ptr = 0;
    live -= model.buffer(id).size;
  };
  std::vector<std::uint64_t> words;
  auto touched_addresses = [&](std::size_t e) {
    words.clear();
    for (const mt::BufferId b : model.touched(e)) {
      if (b.valid() && address[b.value()] != 0) words.push_back(address[b.value()]);
    }
  };

  const auto events = model.events();
  const auto& steady = options.steady_iteration;
  Progress progress(options.progress, name, events.size());
  for (std::size_t e = 0; e < events.size(); ++e) {
    progress.at(e);
    const mt::ModelEvent& event = events[e];
    switch (event.kind) {
      case mt::EventKind::alloc: {
        for (auto [it, last] = ended_by_reuse.equal_range(e); it != last; ++it) {
          const mt::BufferRecord& old = model.buffers()[it->second];
          end_buffer(mt::BufferId{it->second}, old.kind, old.stream.value());
        }
        if (event.memory == mt::MemoryKind::pinned_host || !event.buffer.valid()) break;
        const me::MemoryKind kind =
            event.memory == mt::MemoryKind::async ? me::MemoryKind::async : me::MemoryKind::device;
        ++out.allocations;
        me::DevicePtr ptr = 0;
        if (target->allocate(event.bytes, kind, event.stream, &ptr) != me::kSuccess) {
          ++out.failed_allocations;
          if (!out.failed_at_event) out.failed_at_event = e;
          break;
        }
        address[event.buffer.value()] = ptr;
        live += event.bytes;
        out.peak_live_bytes = std::max(out.peak_live_bytes, live);
        break;
      }
      case mt::EventKind::free:
        if (event.buffer.valid()) {
          end_buffer(event.buffer,
                     event.memory == mt::MemoryKind::async ? me::MemoryKind::async : me::MemoryKind::device,
                     event.stream);
        }
        break;
      case mt::EventKind::launch:
        touched_addresses(e);
        target->launch(words, event.stream, event.detail);
        break;
      case mt::EventKind::copy:
        touched_addresses(e);
        target->transfer(words.empty() ? 0 : words[0], words.size() > 1 ? words[1] : 0, event.stream,
                         me::AccessKind::copy,
                         mt::SignatureBuilder::copy_token(event.bytes, static_cast<mt::CopyKind>(event.detail)));
        break;
      case mt::EventKind::memset:
        touched_addresses(e);
        target->transfer(words.empty() ? 0 : words[0], 0, event.stream, me::AccessKind::memset,
                         mt::SignatureBuilder::memset_token(event.bytes));
        break;
      case mt::EventKind::sync:
        device.synchronize();
        break;
      case mt::EventKind::iteration_mark:
        target->mark();
        break;
      default:
        break;  // stream creation, graph launches (opaque)
    }
    if (steady && e >= steady->first && e < steady->second) {
      out.steady_peak_reserved_bytes = std::max(out.steady_peak_reserved_bytes.value_or(0), device.live_bytes());
    }
  }
  out.pool = target->finish();
  out.peak_reserved_bytes = device.peak_bytes();
  return out;
}

}  // namespace

double ResourceOutcome::fragmentation() const {
  if (peak_live_bytes == 0) return 0.0;
  return static_cast<double>(peak_reserved_bytes) / static_cast<double>(peak_live_bytes);
}

std::vector<ResourceOutcome> simulate_trace(const trace::TraceModel& model, const SimulationOptions& options) {
  for (const std::string& name : options.resources) {
    if (!engine::is_simulated_resource(name)) throw std::invalid_argument(fmt::format("unknown resource '{}'", name));
  }
  std::vector<ResourceOutcome> outcomes;
  for (const std::string& name : options.resources) outcomes.push_back(replay(model, name, options));
  return outcomes;
}

}  // namespace memtool::cli
