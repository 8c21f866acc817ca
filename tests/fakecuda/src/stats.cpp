// Counters, the JSON written at exit (FAKECUDA_STATS=FILE) and the fakecuda_stats_* control API.
#include "stats.hpp"

#include "devices.hpp"
#include "driver.hpp"
#include "fakecuda/control.h"
#include "mem_pool.hpp"
#include "memory.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fakecuda {
namespace {

struct KernelCounters {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<std::atomic<std::uint64_t>>> by_name;
};

KernelCounters& kernel_counters() {
  static auto* k = new KernelCounters;  // leaked: read by the exit hook
  return *k;
}

void write_json_string(std::FILE* out, const std::string& text) {
  std::fputc('"', out);
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      std::fprintf(out, "\\%c", c);
    } else if (u < 0x20) {
      std::fprintf(out, "\\u%04x", u);
    } else {
      std::fputc(c, out);
    }
  }
  std::fputc('"', out);
}

fakecuda_device_stats device_figures(int device) {
  fakecuda_device_stats d{};
  d.capacity_bytes = device_capacity(device);
  d.bytes_in_use = device_gauges(device).bytes_in_use.load();
  d.peak_bytes_in_use = device_gauges(device).peak_bytes_in_use.load();
  if (check_init() == CUDA_SUCCESS) {
    for (MemPool* pool : pools_of_device(device)) {
      d.pool_reserved_bytes += memory().pool_figure(*pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
      d.pool_used_bytes += memory().pool_figure(*pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    }
  }
  return d;
}

int write_json(const char* path) {
  std::FILE* out = std::fopen(path, "w");
  if (out == nullptr) {
    return -1;
  }
  Stats& s = stats();
  std::fprintf(out, "{\n  \"capacity_bytes\": %llu", static_cast<unsigned long long>(config().capacity_bytes));
#define FAKECUDA_WRITE(name) \
  std::fprintf(out, ",\n  \"" #name "\": %llu", static_cast<unsigned long long>(s.name.load()));
  FAKECUDA_GAUGES(FAKECUDA_WRITE)
  FAKECUDA_EVENT_COUNTERS(FAKECUDA_WRITE)
#undef FAKECUDA_WRITE
  std::fprintf(out, ",\n  \"devices\": [");
  for (int d = 0; d < device_count(); ++d) {
    const fakecuda_device_stats f = device_figures(d);
    std::fprintf(out,
                 "%s\n    {\"ordinal\": %d, \"capacity_bytes\": %llu, \"bytes_in_use\": %llu, "
                 "\"peak_bytes_in_use\": %llu, \"pool_reserved_bytes\": %llu, \"pool_used_bytes\": %llu}",
                 d == 0 ? "" : ",", d, f.capacity_bytes, f.bytes_in_use, f.peak_bytes_in_use, f.pool_reserved_bytes,
                 f.pool_used_bytes);
  }
  std::fprintf(out, "\n  ]");
  std::fprintf(out, ",\n  \"kernel_launches\": {");
  {
    KernelCounters& k = kernel_counters();
    std::lock_guard<std::mutex> lock(k.mutex);
    const char* sep = "";
    for (const auto& [name, counter] : k.by_name) {
      std::fprintf(out, "%s\n    ", sep);
      write_json_string(out, name);
      std::fprintf(out, ": %llu", static_cast<unsigned long long>(counter->load()));
      sep = ",";
    }
    std::fprintf(out, "%s}\n}\n", k.by_name.empty() ? "" : "\n  ");
  }
  return std::fclose(out) == 0 ? 0 : -1;
}

// FAKECUDA_STATS is read when the library loads so a program that never calls cuInit still
// leaves a (zero) report, and a forked child never overwrites its parent's.
const char* g_stats_path = nullptr;

__attribute__((constructor)) void read_stats_env() {
  if (const char* path = std::getenv("FAKECUDA_STATS"); path != nullptr && *path != '\0') {
    g_stats_path = strdup(path);
  }
}

__attribute__((destructor)) void write_stats_at_exit() {
  if (g_stats_path != nullptr && !is_forked_child()) {
    // The process's teardown releases what the pools keep for reuse: what stays in use is what the
    // program never freed.
    if (check_init() == CUDA_SUCCESS) {
      for (int d = 0; d < device_count(); ++d) {
        for (MemPool* pool : pools_of_device(d)) {
          memory().trim_pool(*pool, 0);
        }
      }
    }
    if (write_json(g_stats_path) != 0) {
      std::fprintf(stderr, "fakecuda: cannot write FAKECUDA_STATS file %s\n", g_stats_path);
    }
  }
}

}  // namespace

Stats& stats() noexcept {
  static auto* s = new Stats;  // leaked: workers and the exit hook may outlive statics
  return *s;
}

std::atomic<std::uint64_t>* kernel_launch_counter(const std::string& name) {
  KernelCounters& k = kernel_counters();
  std::lock_guard<std::mutex> lock(k.mutex);
  auto& slot = k.by_name[name];
  if (!slot) {
    slot = std::make_unique<std::atomic<std::uint64_t>>(0);
  }
  return slot.get();
}

}  // namespace fakecuda

extern "C" __attribute__((visibility("default"))) size_t fakecuda_stats_snapshot(fakecuda_stats* out, size_t size) {
  if (out == nullptr) {
    return 0;
  }
  fakecuda_stats full{};
  fakecuda::Stats& s = fakecuda::stats();
  full.capacity_bytes = fakecuda::config().capacity_bytes;
#define FAKECUDA_COPY(name) full.name = s.name.load();
  FAKECUDA_GAUGES(FAKECUDA_COPY)
  FAKECUDA_EVENT_COUNTERS(FAKECUDA_COPY)
#undef FAKECUDA_COPY
  const size_t n = size < sizeof full ? size : sizeof full;
  std::memcpy(out, &full, n);
  return n;
}

extern "C" __attribute__((visibility("default"))) void fakecuda_stats_reset(void) {
  fakecuda::Stats& s = fakecuda::stats();
#define FAKECUDA_ZERO(name) s.name.store(0);
  FAKECUDA_EVENT_COUNTERS(FAKECUDA_ZERO)
#undef FAKECUDA_ZERO
  s.peak_bytes_in_use.store(s.bytes_in_use.load());
  for (int d = 0; d < fakecuda::kMaxDevices; ++d) {
    fakecuda::DeviceGauges& g = fakecuda::device_gauges(d);
    g.peak_bytes_in_use.store(g.bytes_in_use.load());
  }
  fakecuda::KernelCounters& k = fakecuda::kernel_counters();
  std::lock_guard<std::mutex> lock(k.mutex);
  for (auto& entry : k.by_name) {
    entry.second->store(0);
  }
}

extern "C" __attribute__((visibility("default"))) int fakecuda_stats_write_json(const char* path) {
  return path == nullptr ? -1 : fakecuda::write_json(path);
}

extern "C" __attribute__((visibility("default"))) unsigned long long fakecuda_kernel_launches(const char* name) {
  if (name == nullptr) {
    return 0;
  }
  fakecuda::KernelCounters& k = fakecuda::kernel_counters();
  std::lock_guard<std::mutex> lock(k.mutex);
  const auto it = k.by_name.find(name);
  return it == k.by_name.end() ? 0 : it->second->load();
}

extern "C" __attribute__((visibility("default"))) size_t fakecuda_device_stats_snapshot(int ordinal,
                                                                                        fakecuda_device_stats* out,
                                                                                        size_t size) {
  if (out == nullptr || fakecuda::check_init() != CUDA_SUCCESS || ordinal < 0 || ordinal >= fakecuda::device_count()) {
    return 0;
  }
  const fakecuda_device_stats full = fakecuda::device_figures(ordinal);
  const size_t n = size < sizeof full ? size : sizeof full;
  std::memcpy(out, &full, n);
  return n;
}
