// driver_checks, environment_checks and their rendering (see doctor_checks.hpp).
#include "detail/doctor_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "detail/preload_run.hpp"
#include "detail/text_format.hpp"
#include "memtool/interpose/options.hpp"

namespace memtool::cli {
namespace {

std::string cuda_version(int version) { return fmt::format("CUDA {}.{}", version / 1000, (version % 1000) / 10); }

// The driver branch each CUDA release needs (NVIDIA's CUDA toolkit release notes, table 3).
constexpr std::string_view kDriverFor12_2 = "a driver for CUDA 12.2 or later (R535 or newer)";
constexpr std::string_view kDriverFor12_4 = "a driver for CUDA 12.4 or later (R550 or newer)";

std::string device_summary(const DeviceFacts& d) {
  std::string text = fmt::format("{}, compute {}.{}, {} total", d.name.empty() ? "unnamed" : d.name, d.compute_major,
                                 d.compute_minor, human_bytes(d.total_bytes));
  if (d.context) text += fmt::format(", {} free", human_bytes(d.free_bytes));
  std::string features;
  if (d.virtual_memory) features += ", VMM";
  if (d.memory_pools) features += ", memory pools";
  if (d.managed_memory)
    features += d.concurrent_managed_access ? ", managed memory" : ", managed memory (no concurrent access)";
  return text + features;
}

bool value_set(const DoctorEnvironment& env, const char* name) {
  const char* value = env.getenv(name);
  return value != nullptr && *value != '\0';
}

std::string value_of(const DoctorEnvironment& env, const char* name) {
  const char* value = env.getenv(name);
  return value != nullptr ? value : "";
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// "backend:cudaMallocAsync" among PyTorch's comma-separated key:value settings.
bool pytorch_uses_async_backend(const std::string& conf) {
  std::size_t at = 0;
  while (at <= conf.size()) {
    std::size_t end = conf.find(',', at);
    if (end == std::string::npos) end = conf.size();
    std::string item = conf.substr(at, end - at);
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item == "backend:cudaMallocAsync") return true;
    at = end + 1;
  }
  return false;
}

// What memtool run/record would set for `name` (framework_switches), for the "unset" verdicts.
std::string switch_value(const char* name) {
  for (const FrameworkSwitch& s : framework_switches()) {
    if (std::string_view(s.name) == name) return s.value;
  }
  return {};
}

Check pytorch_check(const DoctorEnvironment& env) {
  Check check{"framework.pytorch", Verdict::ok, "", ""};
  const char* conf_name = value_set(env, "PYTORCH_CUDA_ALLOC_CONF") ? "PYTORCH_CUDA_ALLOC_CONF"
                          : value_set(env, "PYTORCH_ALLOC_CONF")    ? "PYTORCH_ALLOC_CONF"
                                                                    : nullptr;
  const std::string caching = value_of(env, "PYTORCH_NO_CUDA_MEMORY_CACHING");
  if (conf_name != nullptr && pytorch_uses_async_backend(value_of(env, conf_name))) {
    check.detail = fmt::format("{}={}: PyTorch allocates each tensor with cuMemAllocAsync, which memtool sees",
                               conf_name, value_of(env, conf_name));
  } else if (!caching.empty() && caching != "0") {
    check.verdict = Verdict::info;
    check.detail = fmt::format(
        "PYTORCH_NO_CUDA_MEMORY_CACHING={}: memtool sees every tensor, but every free "
        "synchronises the device (slower)",
        caching);
    check.fix =
        "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (PyTorch 1.11+) shows every tensor and keeps the speed";
  } else if (conf_name != nullptr) {
    check.verdict = Verdict::warn;
    check.detail = fmt::format(
        "{}={}: PyTorch's caching allocator stays in front of memtool (memtool run and record "
        "keep your setting), so memtool sees its segments, not the tensors",
        conf_name, value_of(env, conf_name));
    check.fix = fmt::format(
        "add backend:cudaMallocAsync to {} (PyTorch 1.11+), or unset it and let memtool run/record "
        "set it",
        conf_name);
  } else {
    check.detail = fmt::format(
        "PYTORCH_CUDA_ALLOC_CONF unset: memtool run and record set {} (with LD_PRELOAD="
        "libmemtool.so alone, PyTorch's caching allocator would hide the tensors)",
        "PYTORCH_CUDA_ALLOC_CONF=" + switch_value("PYTORCH_CUDA_ALLOC_CONF"));
    check.fix = "";
  }
  return check;
}

Check jax_check(const DoctorEnvironment& env) {
  Check check{"framework.jax", Verdict::ok, "", ""};
  const std::string allocator = lower(value_of(env, "XLA_PYTHON_CLIENT_ALLOCATOR"));
  const std::string preallocate = lower(value_of(env, "XLA_PYTHON_CLIENT_PREALLOCATE"));
  const bool preallocates = preallocate == "true" || preallocate == "1";
  if (allocator == "cuda_async") {
    check.detail =
        "XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async: JAX allocates each buffer from the driver's stream-ordered "
        "allocator";
  } else if (allocator == "platform") {
    check.verdict = Verdict::info;
    check.detail =
        "XLA_PYTHON_CLIENT_ALLOCATOR=platform: memtool sees every buffer, but JAX frees synchronously (slower)";
    check.fix = "XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async with XLA_PYTHON_CLIENT_PREALLOCATE=false keeps the speed";
  } else if (!allocator.empty()) {
    check.verdict = Verdict::warn;
    check.detail = fmt::format(
        "XLA_PYTHON_CLIENT_ALLOCATOR={}: JAX's own allocator stays in front of memtool, which "
        "sees its arena, not the buffers",
        value_of(env, "XLA_PYTHON_CLIENT_ALLOCATOR"));
    check.fix = "XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async and XLA_PYTHON_CLIENT_PREALLOCATE=false";
  } else {
    check.detail =
        "XLA_PYTHON_CLIENT_ALLOCATOR unset: memtool run and record set XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async "
        "and XLA_PYTHON_CLIENT_PREALLOCATE=false";
  }
  if (preallocates && check.verdict != Verdict::warn) {
    check.verdict = Verdict::warn;
    check.detail += fmt::format(
        "; XLA_PYTHON_CLIENT_PREALLOCATE={}: JAX takes most of the device at start, in one "
        "allocation",
        value_of(env, "XLA_PYTHON_CLIENT_PREALLOCATE"));
    check.fix = "XLA_PYTHON_CLIENT_PREALLOCATE=false";
  }
  return check;
}

Check tensorflow_check(const DoctorEnvironment& env) {
  Check check{"framework.tensorflow", Verdict::ok, "", ""};
  const std::string allocator = value_of(env, "TF_GPU_ALLOCATOR");
  if (allocator == "cuda_malloc_async") {
    check.detail =
        "TF_GPU_ALLOCATOR=cuda_malloc_async: TensorFlow allocates each tensor from the driver's "
        "stream-ordered allocator";
  } else if (!allocator.empty()) {
    check.verdict = Verdict::warn;
    check.detail = fmt::format(
        "TF_GPU_ALLOCATOR={}: TensorFlow's BFC allocator stays in front of memtool, which sees "
        "its arena, not the tensors",
        allocator);
    check.fix = "TF_GPU_ALLOCATOR=cuda_malloc_async";
  } else {
    check.detail = "TF_GPU_ALLOCATOR unset: memtool run and record set TF_GPU_ALLOCATOR=cuda_malloc_async";
  }
  return check;
}

// Each MEMTOOL_* variable set, parsed by the library's own parser (options.cpp).
std::vector<Check> memtool_variable_checks(const DoctorEnvironment& env) {
  const interpose::ParsedOptions parsed = interpose::parse_options(env.getenv, env.environ);
  std::vector<Check> checks;
  for (const auto& option : interpose::kOptionTable) {
    const std::string name(option.name);
    const char* value = env.getenv(name.c_str());
    if (value == nullptr) continue;
    Check check{"env." + name, Verdict::ok, fmt::format("{}={}", name, value), ""};
    const auto error = std::find_if(parsed.errors.begin(), parsed.errors.end(),
                                    [&](const std::string& e) { return e.rfind(name + "='", 0) == 0; });
    if (error != parsed.errors.end()) {
      check.verdict = Verdict::fail;
      check.detail = *error + "; libmemtool.so would stay out of the way (every call passes through)";
      check.fix = fmt::format("give {} a value of the form {} (memtool help env), or unset it", name,
                              interpose::value_syntax(option.type));
    } else if (name == "MEMTOOL_DISABLE" && parsed.options.disable) {
      check.verdict = Verdict::warn;
      check.detail += ": libmemtool.so does nothing, every call passes straight to the driver";
      check.fix = "unset MEMTOOL_DISABLE";
    } else if (name == "MEMTOOL_STRATEGY" && parsed.options.strategy == "swap" &&
               env.getenv("MEMTOOL_BUDGET") == nullptr) {
      check.verdict = Verdict::info;
      check.detail += ": without MEMTOOL_BUDGET the budget is the device's free memory less MEMTOOL_SWAP_RESERVE";
      check.fix = "MEMTOOL_BUDGET=60% (of the device) or a size such as 40G to keep room for others";
    } else if (name == "MEMTOOL_LIBRARY" && !std::filesystem::exists(value)) {
      check.verdict = Verdict::fail;
      check.detail += ": no such file; memtool run and record cannot preload it";
      check.fix = "point MEMTOOL_LIBRARY at libmemtool.so, or unset it";
    }
    checks.push_back(std::move(check));
  }
  for (const std::string& warning : parsed.warnings) {
    // "unknown variable MEMTOOL_X ignored (...)": the name is its third word.
    std::string name = warning.substr(warning.find("MEMTOOL_"));
    name = name.substr(0, name.find(' '));
    checks.push_back(
        {"env." + name, Verdict::warn, warning, "a typo? `memtool help env` lists every MEMTOOL_* variable"});
  }
  if (checks.empty()) {
    checks.push_back({"env", Verdict::info,
                      "no MEMTOOL_* variable set: libmemtool.so's defaults (memtool run and record set what they need)",
                      ""});
  }
  return checks;
}

}  // namespace

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok:
      return "ok";
    case Verdict::info:
      return "info";
    case Verdict::warn:
      return "warn";
    case Verdict::fail:
      return "fail";
  }
  return "?";
}

std::vector<Check> driver_checks(const ProbeResult& probe) {
  std::vector<Check> checks;
  const DriverFacts& f = probe.facts;
  if (!probe.completed) {
    checks.push_back(
        {"driver", Verdict::fail, fmt::format("probing {}: {}", f.requested, probe.failure),
         "the driver is broken or stuck (see nvidia-smi and the kernel log); a program under memtool would "
         "meet the same driver"});
    return checks;
  }
  if (!f.loaded) {
    checks.push_back({"driver", Verdict::fail,
                      fmt::format("no driver: {} cannot be loaded ({})", f.requested, f.load_error),
                      "install the NVIDIA driver (it provides libcuda.so.1) or put its folder on LD_LIBRARY_PATH; "
                      "memtool report, plan, simulate and export need no driver"});
    return checks;
  }
  if (!f.is_driver) {
    checks.push_back({"driver", Verdict::fail,
                      fmt::format("{} ({}) is not a CUDA driver: it has no cuInit", f.requested, f.path),
                      "point to libcuda.so.1 of the NVIDIA driver"});
    return checks;
  }
  const std::string where = f.path.empty() ? f.requested : f.path;
  Check driver{
      "driver", Verdict::ok,
      f.fakecuda ? fmt::format("fakecuda, memtool's CPU emulation of the driver (tests/fakecuda), at {}: it reports "
                               "{} (cuDriverGetVersion {}); no GPU is used",
                               where, cuda_version(f.version), f.version)
                 : fmt::format("libcuda at {}: {} (cuDriverGetVersion {})", where, cuda_version(f.version), f.version),
      ""};
  if (f.init_result != 0) {
    driver.verdict = Verdict::fail;
    driver.detail += fmt::format("; cuInit failed: {}", f.init_error);
    driver.fix = f.init_error == "CUDA_ERROR_NO_DEVICE"
                     ? "no GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES"
                     : "the driver cannot start (see nvidia-smi and the kernel log; a driver older than the kernel "
                       "module, or a container without the GPU, fails so)";
    checks.push_back(driver);
    return checks;
  }
  checks.push_back(driver);

  Check scanning{"argument-scanning", Verdict::ok, "", ""};
  if (f.func_get_param_info) {
    scanning.detail = "cuFuncGetParamInfo (CUDA 12.4 on): each launch records the buffers its arguments point into";
  } else {
    scanning.verdict = Verdict::warn;
    scanning.detail = fmt::format(
        "{} has no cuFuncGetParamInfo: launches are recorded without the buffers they touch, "
        "so the swapper cannot tell when a buffer is used",
        cuda_version(f.version));
    scanning.fix = std::string(kDriverFor12_4);
  }
  checks.push_back(scanning);

  if (f.devices.empty()) {
    checks.push_back(
        {"devices", Verdict::fail, "the driver sees no device", "check nvidia-smi and CUDA_VISIBLE_DEVICES"});
    return checks;
  }
  std::uint64_t total = 0;
  for (const DeviceFacts& d : f.devices) {
    total += d.total_bytes;
    Check device{fmt::format("device.{}", d.ordinal), Verdict::ok, device_summary(d), ""};
    if (!d.context) {
      device.verdict = Verdict::warn;
      device.detail +=
          "; its primary context could not be made current (exclusive compute mode, or the device is "
          "lost), so its free memory is unknown";
      device.fix = "see nvidia-smi (compute mode, other processes)";
    }
    checks.push_back(device);
  }
  checks.push_back(
      {"devices", Verdict::ok,
       fmt::format("{} device{}, {} in all", f.devices.size(), f.devices.size() == 1 ? "" : "s", human_bytes(total)),
       ""});

  const DeviceFacts& first = f.devices.front();
  Check host_vmm{"host-vmm", Verdict::ok, "", ""};
  if (first.host_vmm) {
    host_vmm.detail =
        "host-located VMM memory (CUDA 12.2 on): MEMTOOL_SWAP_MODE=explicit maps a swapped-out buffer's "
        "host copy at its own address";
  } else {
    host_vmm.verdict = Verdict::warn;
    host_vmm.detail =
        fmt::format("no host-located VMM memory ({}): explicit swapping falls back to UVM (managed memory)",
                    first.host_vmm_error.empty() ? "not probed" : first.host_vmm_error);
    host_vmm.fix = std::string(kDriverFor12_2);
  }
  checks.push_back(host_vmm);

  const bool managed =
      std::all_of(f.devices.begin(), f.devices.end(), [](const DeviceFacts& d) { return d.managed_memory; });
  const bool concurrent =
      std::all_of(f.devices.begin(), f.devices.end(), [](const DeviceFacts& d) { return d.concurrent_managed_access; });
  if (managed && concurrent) {
    checks.push_back({"uvm", Verdict::ok,
                      "managed memory with concurrent access on every device: MEMTOOL_SWAP_MODE=uvm (the default) can "
                      "advise and prefetch",
                      ""});
  } else {
    checks.push_back({"uvm", Verdict::warn,
                      managed ? "managed memory without concurrent access (WSL, or a GPU older than Pascal): no "
                                "cuMemAdvise or cuMemPrefetchAsync, so UVM swapping (the default mode) is not possible"
                              : "no managed memory on some device: UVM swapping (the default mode) is not possible",
                      "use MEMTOOL_SWAP_MODE=explicit (needs host-located VMM memory)"});
  }

  const bool pools =
      std::all_of(f.devices.begin(), f.devices.end(), [](const DeviceFacts& d) { return d.memory_pools; });
  if (f.graph_mem_alloc_node && pools && f.version >= kGraphMemoryNodesVersion) {
    checks.push_back({"graph-memory", Verdict::ok,
                      "graph memory nodes (CUDA 11.4 on) and memory pools: programs that allocate inside CUDA graphs "
                      "(torch.cuda.graph, torch.compile mode=reduce-overhead) and cuMemAllocAsync run",
                      ""});
  } else {
    checks.push_back({"graph-memory", Verdict::warn,
                      "no graph memory nodes or memory pools: cuMemAllocAsync and allocations inside CUDA graphs fail "
                      "here, with or without memtool (PyTorch's backend:cudaMallocAsync needs them)",
                      "a driver for CUDA 11.4 or later"});
  }

  if (!f.cupti_searched) {
    checks.push_back(
        {"cupti", Verdict::info, "this memtool was built without CUPTI's headers: traces carry host times only", ""});
  } else if (!f.cupti_path.empty()) {
    checks.push_back({"cupti", Verdict::ok,
                      fmt::format("libcupti at {}: a recorded trace gets the GPU's start and end of every kernel, copy "
                                  "and memset (MEMTOOL_CUPTI=auto)",
                                  f.cupti_path),
                      ""});
  } else {
    checks.push_back({"cupti", Verdict::warn,
                      fmt::format("no libcupti found: traces carry host times only ({})", f.cupti_why),
                      "install CUPTI (the CUDA toolkit's, or pip's nvidia-cuda-cupti package) or set "
                      "MEMTOOL_CUPTI_LIBRARY=/path/to/libcupti.so"});
  }
  return checks;
}

std::vector<Check> environment_checks(const DoctorEnvironment& env) {
  std::vector<Check> checks;
  if (env.library.empty()) {
    checks.push_back({"libmemtool", Verdict::fail,
                      "libmemtool.so not found (not in ../lib or beside memtool, nor in a build tree): memtool run and "
                      "record cannot work",
                      "reinstall memtool, or set MEMTOOL_LIBRARY=/path/to/libmemtool.so"});
  } else {
    checks.push_back(
        {"libmemtool", Verdict::ok, fmt::format("{} (memtool run and record preload it)", env.library), ""});
  }
  checks.push_back(pytorch_check(env));
  checks.push_back(jax_check(env));
  checks.push_back(tensorflow_check(env));
  for (Check& check : memtool_variable_checks(env)) checks.push_back(std::move(check));
  return checks;
}

std::string render_checks_text(const std::vector<Check>& checks) {
  std::size_t width = 0;
  for (const Check& check : checks) width = std::max(width, check.name.size());
  std::string out = "memtool doctor: what this machine and environment let memtool do\n";
  std::size_t counts[4] = {};
  for (const Check& check : checks) {
    ++counts[static_cast<int>(check.verdict)];
    out += fmt::format("  {:<4}  {:<{}}  {}\n", to_string(check.verdict), check.name, width, check.detail);
    if (!check.fix.empty()) out += fmt::format("        {:<{}}  fix: {}\n", "", width, check.fix);
  }
  out += fmt::format("memtool doctor: {} ok, {} info, {} warn, {} fail\n", counts[0], counts[1], counts[2], counts[3]);
  return out;
}

nlohmann::json render_checks_json(const std::vector<Check>& checks, const ProbeResult& probe) {
  nlohmann::json list = nlohmann::json::array();
  nlohmann::json counts = {{"ok", 0}, {"info", 0}, {"warn", 0}, {"fail", 0}};
  for (const Check& check : checks) {
    const std::string verdict(to_string(check.verdict));
    counts[verdict] = counts[verdict].get<int>() + 1;
    list.push_back({{"check", check.name}, {"verdict", verdict}, {"detail", check.detail}, {"fix", check.fix}});
  }
  nlohmann::json driver = to_json(probe.facts);
  driver["probe_completed"] = probe.completed;
  driver["probe_failure"] = probe.failure;
  return {{"memtool_version", MEMTOOL_VERSION},
          {"ok", counts["fail"].get<int>() == 0},
          {"counts", counts},
          {"checks", list},
          {"driver", driver}};
}

}  // namespace memtool::cli
