// FailOpen: an internal failure of a strategy disables it and leaves the program on the real
// allocator (DESIGN.md invariant 4; see resources.hpp).
#include <atomic>
#include <exception>

#include <fmt/format.h>

#include "memtool/engine/log.hpp"
#include "memtool/engine/resources.hpp"

namespace memtool::engine {
namespace {

class FailOpen final : public Resource {
 public:
  FailOpen(std::unique_ptr<Resource> primary, std::unique_ptr<Resource> fallback)
      : primary_(std::move(primary)), fallback_(std::move(fallback)) {}

  std::string_view name() const override { return "fail-open"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    if (!failed()) {
      try {
        return primary_->allocate(request, out);
      } catch (const std::exception& e) {
        fail(e.what());
      } catch (...) {
        fail("unknown failure in an allocation");
      }
    }
    return fallback_->allocate(request, out);
  }

  // Even after a failure: pooled buffers still live must go back to their pool.
  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    try {
      return primary_->deallocate(ptr, kind, stream);
    } catch (const std::exception& e) {
      fail(e.what());
    } catch (...) {
      fail("unknown failure in a free");
    }
    return fallback_->deallocate(ptr, kind, stream);
  }

  void before_item(const WorkItem& item) override {
    guarded("ordering a stream", [&] { primary_->before_item(item); });
  }
  void on_host_sync(StreamId stream, std::uint64_t waited_ns) override {
    guarded("a synchronisation", [&] { primary_->on_host_sync(stream, waited_ns); });
  }
  void on_boundary(const Boundary& boundary) override {
    if (!failed()) guarded("an iteration boundary", [&] { primary_->on_boundary(boundary); });
  }
  bool wants_windows() const override { return !failed() && primary_->wants_windows(); }
  bool wants_accesses() const override { return primary_->wants_accesses(); }
  MemoryUse memory_use() const override {
    try {
      return primary_->memory_use();
    } catch (...) {
      return {};
    }
  }
  void summarize(Summary& summary) const override {
    try {
      primary_->summarize(summary);
    } catch (...) {}
    if (failed()) summary.state = "disabled";
  }
  std::optional<BufferExtent> extent_of(DevicePtr ptr) const override {
    try {
      return primary_->extent_of(ptr);
    } catch (...) {
      return std::nullopt;
    }
  }
  ExportPin pin_for_export(DevicePtr ptr) override {
    try {
      return primary_->pin_for_export(ptr);
    } catch (...) {
      return ExportPin::not_served;
    }
  }
  // What the one that would serve the request would take.
  std::uint64_t growth_of(const AllocationRequest& request) const override {
    if (!failed()) {
      try {
        return primary_->growth_of(request);
      } catch (...) {
        // Its allocation would fail open too: the fallback serves then.
      }
    }
    return fallback_->growth_of(request);
  }
  std::uint64_t reclaim() override {
    std::uint64_t freed = 0;
    guarded("reclaiming memory", [&] { freed = primary_->reclaim(); });
    return freed;
  }
  std::uint64_t trim_pools(PoolTrim how) override {
    std::uint64_t freed = 0;
    guarded("trimming pools", [&] { freed = primary_->trim_pools(how); });
    return freed;
  }
  void set_graph_memory(std::uint64_t bytes) override {
    guarded("counting graph memory", [&] { primary_->set_graph_memory(bytes); });
    fallback_->set_graph_memory(bytes);
  }
  void shutdown(bool release_memory) override {
    guarded("shutting down", [&] { primary_->shutdown(release_memory); });
  }

 private:
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  void fail(std::string_view reason) noexcept {
    if (failed_.exchange(true)) return;
    log(LogLevel::error, fmt::format("strategy disabled, new allocations pass through to the driver: {}", reason));
    try {
      primary_->shutdown(false);
    } catch (...) {
      // It refuses even to stop: allocations bypass it from now on all the same.
    }
  }

  template <class Step>
  void guarded(const char* what, Step step) noexcept {
    try {
      step();
    } catch (const std::exception& e) {
      fail(e.what());
    } catch (...) {
      fail(fmt::format("unknown failure {}", what));
    }
  }

  std::unique_ptr<Resource> primary_;
  std::unique_ptr<Resource> fallback_;
  std::atomic<bool> failed_{false};
};

}  // namespace

std::unique_ptr<Resource> make_fail_open(std::unique_ptr<Resource> primary, std::unique_ptr<Resource> fallback) {
  return std::make_unique<FailOpen>(std::move(primary), std::move(fallback));
}

}  // namespace memtool::engine
