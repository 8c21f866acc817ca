// What `memtool doctor` learns from the CUDA driver: libcuda.so.1 loaded with dlopen (never
// linked) in a child process, so that a driver that crashes or hangs costs the probe, not the
// doctor. The child answers stage by stage over a pipe; the parent reads the facts, or says at
// which stage the driver died or stopped answering.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace memtool::cli {

// The driver versions (cuDriverGetVersion: 1000 * major + 10 * minor) from which memtool's
// features work, as documented in cuda.h.
inline constexpr int kArgumentScanningVersion = 12040;  // cuFuncGetParamInfo: CUDA 12.4
inline constexpr int kHostVmmVersion = 12020;           // CU_MEM_LOCATION_TYPE_HOST in cuMemCreate: CUDA 12.2
inline constexpr int kGraphMemoryNodesVersion = 11040;  // cuGraphAddMemAllocNode: CUDA 11.4

struct DeviceFacts {
  int ordinal = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;            // 0 when no context could be made
  bool context = false;                    // its primary context could be made current
  bool managed_memory = false;             // CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY
  bool concurrent_managed_access = false;  // CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS (advise, prefetch)
  bool virtual_memory = false;             // CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
  bool memory_pools = false;               // CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
  bool host_vmm = false;                   // a host-located physical allocation made, mapped nowhere, released
  std::string host_vmm_error;
};

struct DriverFacts {
  std::string requested;  // what was passed to dlopen
  bool loaded = false;
  std::string load_error;              // dlerror() when not loaded
  std::string path;                    // the file the loader chose
  bool is_driver = false;              // it has cuInit and cuDriverGetVersion
  bool fakecuda = false;               // memtool's CPU emulation (tests/fakecuda)
  int version = 0;                     // cuDriverGetVersion
  int init_result = -1;                // cuInit(0)
  std::string init_error;              // its name, when not CUDA_SUCCESS
  bool func_get_param_info = false;    // cuFuncGetParamInfo resolvable
  bool kernel_get_param_info = false;  // cuKernelGetParamInfo resolvable
  bool graph_mem_alloc_node = false;   // cuGraphAddMemAllocNode resolvable
  std::vector<DeviceFacts> devices;
  // CUPTI, searched as libmemtool.so searches it (cupti_tracer/src/cupti_library.hpp).
  bool cupti_searched = false;  // false: this memtool was built without CUPTI's headers
  std::string cupti_path;       // empty when none found
  std::string cupti_why;        // what was tried, when none found
};

struct ProbeResult {
  DriverFacts facts;
  bool completed = false;  // the child answered to the end
  std::string failure;     // otherwise: what happened (killed by a signal at stage X, no answer in N s)
  std::string stage;       // the last stage the child started
};

// Probes `library` (e.g. "libcuda.so.1") in a child process, waiting at most `timeout_seconds`.
[[nodiscard]] ProbeResult probe_driver(const std::string& library, double timeout_seconds);

nlohmann::json to_json(const DriverFacts& facts);

}  // namespace memtool::cli
