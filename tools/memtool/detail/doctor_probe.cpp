// probe_driver (see doctor_probe.hpp). The child speaks in lines: "stage NAME" before each step
// that calls into the driver, then "facts JSON" at the end; the parent keeps the last stage, so
// a crash or a hang is reported with the call it happened in.
#include "detail/doctor_probe.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#ifdef MEMTOOL_HAVE_CUPTI
#include "cupti_library.hpp"
#endif

namespace memtool::cli {
namespace {

// ---- the child ----------------------------------------------------------------------------

void say(int fd, const std::string& line) {
  const std::string text = line + "\n";
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    written += static_cast<std::size_t>(n);
  }
}

class Driver {
 public:
  Driver(void* handle, int fd) : handle_(handle), fd_(fd) {}

  template <class F>
  F get(const char* name) const {
    return reinterpret_cast<F>(dlsym(handle_, name));
  }
  void stage(const std::string& name) const { say(fd_, "stage " + name); }

  // A driver entry point as a program built against CUDA `version` would get it: through
  // cuGetProcAddress_v2 when the driver has it (how cudart and memtool's recorder ask), else
  // the exported symbol.
  bool resolvable(const char* name, int version) const {
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    if (const auto get_proc = get<GetProc>("cuGetProcAddress_v2"); get_proc != nullptr) {
      void* function = nullptr;
      CUdriverProcAddressQueryResult status{};
      return get_proc(name, &function, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS &&
             function != nullptr;
    }
    return dlsym(handle_, name) != nullptr;
  }

  std::string error_name(CUresult result) const {
    const char* name = nullptr;
    if (const auto get_name = get<CUresult (*)(CUresult, const char**)>("cuGetErrorName");
        get_name != nullptr && get_name(result, &name) == CUDA_SUCCESS && name != nullptr) {
      return name;
    }
    return fmt::format("CUresult {}", static_cast<int>(result));
  }

 private:
  void* handle_;
  int fd_;
};

bool attribute(const Driver& driver, CUdevice device, CUdevice_attribute which) {
  const auto get = driver.get<CUresult (*)(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
  int value = 0;
  return get != nullptr && get(&value, which, device) == CUDA_SUCCESS && value != 0;
}

// Pinned host memory as a VMM physical allocation, as the swap executor makes it
// (engine/src/vmm_mover.cpp: its probe before choosing explicit swapping).
void probe_host_vmm(const Driver& driver, DeviceFacts& device) {
  const auto granularity =
      driver.get<CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
          "cuMemGetAllocationGranularity");
  const auto create =
      driver.get<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long)>(
          "cuMemCreate");
  const auto release = driver.get<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease");
  if (granularity == nullptr || create == nullptr || release == nullptr) {
    device.host_vmm_error = "the driver has no VMM functions (cuMemCreate)";
    return;
  }
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  prop.location.id = 0;
  size_t granule = 0;
  CUresult result = granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (result != CUDA_SUCCESS || granule == 0) {
    device.host_vmm_error = "cuMemGetAllocationGranularity for host memory: " + driver.error_name(result);
    return;
  }
  CUmemGenericAllocationHandle handle = 0;
  result = create(&handle, granule, &prop, 0);
  if (result != CUDA_SUCCESS) {
    device.host_vmm_error = "cuMemCreate of host memory: " + driver.error_name(result);
    return;
  }
  (void)release(handle);
  device.host_vmm = true;
}

DeviceFacts probe_device(const Driver& driver, int ordinal) {
  DeviceFacts device;
  device.ordinal = ordinal;
  driver.stage(fmt::format("device {}", ordinal));
  CUdevice handle = 0;
  if (const auto get = driver.get<CUresult (*)(CUdevice*, int)>("cuDeviceGet");
      get == nullptr || get(&handle, ordinal) != CUDA_SUCCESS) {
    return device;
  }
  char name[256] = {};
  if (const auto get = driver.get<CUresult (*)(char*, int, CUdevice)>("cuDeviceGetName"); get != nullptr) {
    if (get(name, static_cast<int>(sizeof(name)), handle) == CUDA_SUCCESS) device.name = name;
  }
  if (const auto get = driver.get<CUresult (*)(size_t*, CUdevice)>("cuDeviceTotalMem_v2"); get != nullptr) {
    size_t bytes = 0;
    if (get(&bytes, handle) == CUDA_SUCCESS) device.total_bytes = bytes;
  }
  if (const auto get = driver.get<CUresult (*)(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
      get != nullptr) {
    (void)get(&device.compute_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle);
    (void)get(&device.compute_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle);
  }
  device.managed_memory = attribute(driver, handle, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  device.concurrent_managed_access = attribute(driver, handle, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  device.virtual_memory = attribute(driver, handle, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
  device.memory_pools = attribute(driver, handle, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);

  // Free memory and the host VMM probe need a current context: the device's primary one,
  // released again (other processes' use of the device shows in the free bytes).
  driver.stage(fmt::format("device {} context", ordinal));
  const auto retain = driver.get<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain");
  const auto release = driver.get<CUresult (*)(CUdevice)>("cuDevicePrimaryCtxRelease_v2");
  const auto set_current = driver.get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  CUcontext context = nullptr;
  if (retain == nullptr || release == nullptr || set_current == nullptr || retain(&context, handle) != CUDA_SUCCESS) {
    return device;
  }
  if (set_current(context) == CUDA_SUCCESS) {
    device.context = true;
    if (const auto info = driver.get<CUresult (*)(size_t*, size_t*)>("cuMemGetInfo_v2"); info != nullptr) {
      size_t free_bytes = 0;
      size_t total = 0;
      if (info(&free_bytes, &total) == CUDA_SUCCESS) device.free_bytes = free_bytes;
    }
    driver.stage(fmt::format("device {} host VMM", ordinal));
    probe_host_vmm(driver, device);
    (void)set_current(nullptr);
  }
  (void)release(handle);
  return device;
}

void probe_cupti(DriverFacts& facts) {
#ifdef MEMTOOL_HAVE_CUPTI
  cupti::detail::LibrarySearch search;
  if (const char* library = std::getenv("MEMTOOL_CUPTI_LIBRARY"); library != nullptr) search.explicit_library = library;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr) search.cuda_home = home;
  search.driver_major = facts.version / 1000;
  search.loaded_objects = cupti::detail::loaded_object_paths();
  facts.cupti_searched = true;
  std::string why;
  if (const auto loaded = cupti::detail::load_cupti(search, &why)) {
    facts.cupti_path = loaded->path;
  } else {
    facts.cupti_why = why;
  }
#else
  (void)facts;
#endif
}

[[noreturn]] void run_child(const std::string& library, int fd) {
  DriverFacts facts;
  facts.requested = library;
  say(fd, "stage dlopen");
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    facts.load_error = error != nullptr ? error : "dlopen failed";
    say(fd, "facts " + to_json(facts).dump());
    _exit(0);
  }
  facts.loaded = true;
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) facts.path = map->l_name;
  const Driver driver(handle, fd);
  const auto init = driver.get<CUresult (*)(unsigned)>("cuInit");
  const auto get_version = driver.get<CUresult (*)(int*)>("cuDriverGetVersion");
  facts.is_driver = init != nullptr && get_version != nullptr;
  facts.fakecuda = dlsym(handle, "fakecuda_stats_snapshot") != nullptr;
  if (facts.is_driver) {
    driver.stage("cuDriverGetVersion");
    (void)get_version(&facts.version);
    driver.stage("cuInit");
    const CUresult result = init(0);
    facts.init_result = static_cast<int>(result);
    if (result != CUDA_SUCCESS) facts.init_error = driver.error_name(result);
    driver.stage("cuGetProcAddress");
    facts.func_get_param_info = driver.resolvable("cuFuncGetParamInfo", facts.version);
    facts.kernel_get_param_info = driver.resolvable("cuKernelGetParamInfo", facts.version);
    facts.graph_mem_alloc_node = driver.resolvable("cuGraphAddMemAllocNode", facts.version);
    int count = 0;
    if (result == CUDA_SUCCESS) {
      driver.stage("cuDeviceGetCount");
      if (const auto get = driver.get<CUresult (*)(int*)>("cuDeviceGetCount");
          get == nullptr || get(&count) != CUDA_SUCCESS) {
        count = 0;
      }
    }
    for (int ordinal = 0; ordinal < count; ++ordinal) facts.devices.push_back(probe_device(driver, ordinal));
    driver.stage("libcupti search");
    probe_cupti(facts);
  }
  say(fd, "facts " + to_json(facts).dump());
  _exit(0);
}

// ---- the parent ---------------------------------------------------------------------------

DriverFacts from_json(const nlohmann::json& j) {
  DriverFacts f;
  f.requested = j.value("requested", "");
  f.loaded = j.value("loaded", false);
  f.load_error = j.value("load_error", "");
  f.path = j.value("path", "");
  f.is_driver = j.value("is_driver", false);
  f.fakecuda = j.value("fakecuda", false);
  f.version = j.value("version", 0);
  f.init_result = j.value("init_result", -1);
  f.init_error = j.value("init_error", "");
  f.func_get_param_info = j.value("func_get_param_info", false);
  f.kernel_get_param_info = j.value("kernel_get_param_info", false);
  f.graph_mem_alloc_node = j.value("graph_mem_alloc_node", false);
  f.cupti_searched = j.value("cupti_searched", false);
  f.cupti_path = j.value("cupti_path", "");
  f.cupti_why = j.value("cupti_why", "");
  for (const auto& d : j.value("devices", nlohmann::json::array())) {
    DeviceFacts device;
    device.ordinal = d.value("ordinal", 0);
    device.name = d.value("name", "");
    device.compute_major = d.value("compute_major", 0);
    device.compute_minor = d.value("compute_minor", 0);
    device.total_bytes = d.value("total_bytes", std::uint64_t{0});
    device.free_bytes = d.value("free_bytes", std::uint64_t{0});
    device.context = d.value("context", false);
    device.managed_memory = d.value("managed_memory", false);
    device.concurrent_managed_access = d.value("concurrent_managed_access", false);
    device.virtual_memory = d.value("virtual_memory", false);
    device.memory_pools = d.value("memory_pools", false);
    device.host_vmm = d.value("host_vmm", false);
    device.host_vmm_error = d.value("host_vmm_error", "");
    f.devices.push_back(device);
  }
  return f;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

nlohmann::json to_json(const DriverFacts& f) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceFacts& d : f.devices) {
    devices.push_back({{"ordinal", d.ordinal},
                       {"name", d.name},
                       {"compute_major", d.compute_major},
                       {"compute_minor", d.compute_minor},
                       {"total_bytes", d.total_bytes},
                       {"free_bytes", d.free_bytes},
                       {"context", d.context},
                       {"managed_memory", d.managed_memory},
                       {"concurrent_managed_access", d.concurrent_managed_access},
                       {"virtual_memory", d.virtual_memory},
                       {"memory_pools", d.memory_pools},
                       {"host_vmm", d.host_vmm},
                       {"host_vmm_error", d.host_vmm_error}});
  }
  return {{"requested", f.requested},
          {"loaded", f.loaded},
          {"load_error", f.load_error},
          {"path", f.path},
          {"is_driver", f.is_driver},
          {"fakecuda", f.fakecuda},
          {"version", f.version},
          {"init_result", f.init_result},
          {"init_error", f.init_error},
          {"func_get_param_info", f.func_get_param_info},
          {"kernel_get_param_info", f.kernel_get_param_info},
          {"graph_mem_alloc_node", f.graph_mem_alloc_node},
          {"devices", devices},
          {"cupti_searched", f.cupti_searched},
          {"cupti_path", f.cupti_path},
          {"cupti_why", f.cupti_why}};
}

ProbeResult probe_driver(const std::string& library, double timeout_seconds) {
  ProbeResult result;
  result.facts.requested = library;
  int fds[2] = {-1, -1};
  if (pipe2(fds, O_CLOEXEC) != 0) {
    result.failure = fmt::format("cannot make a pipe: {}", std::strerror(errno));
    return result;
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t child = fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    result.failure = fmt::format("cannot fork: {}", std::strerror(errno));
    return result;
  }
  if (child == 0) {
    ::close(fds[0]);
    run_child(library, fds[1]);
  }
  ::close(fds[1]);

  std::string received;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd waiting{fds[0], POLLIN, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends it
    char buffer[4096];
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child is done (or dead)
    received.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}

  std::size_t at = 0;
  while (at < received.size()) {
    std::size_t end = received.find('\n', at);
    if (end == std::string::npos) break;  // a line cut short by the child's death
    const std::string line = received.substr(at, end - at);
    at = end + 1;
    if (line.rfind("stage ", 0) == 0) {
      result.stage = line.substr(6);
    } else if (line.rfind("facts ", 0) == 0) {
      const nlohmann::json facts = nlohmann::json::parse(line.substr(6), nullptr, false);
      if (facts.is_object()) {
        result.facts = from_json(facts);
        result.completed = true;
      }
    }
  }
  if (timed_out) {
    result.failure = fmt::format("the driver did not answer within {:g} s (stopped in {})", timeout_seconds,
                                 result.stage.empty() ? "its start" : result.stage);
  } else if (!result.completed) {
    result.failure =
        fmt::format("the probe {} in {}", describe_status(status), result.stage.empty() ? "its start" : result.stage);
  }
  return result;
}

}  // namespace memtool::cli
