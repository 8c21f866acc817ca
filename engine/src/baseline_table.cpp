// The resources `memtool simulate` offers, and the baselines built by name (see baselines.hpp).
#include <array>
#include <stdexcept>
#include <string>

#include "memtool/engine/baselines.hpp"
#include "memtool/engine/resources.hpp"
#include "memtool/trace/name_table.hpp"

namespace memtool::engine {
namespace {

constexpr std::array<SimulatedResourceInfo, 4> kResources = {{
    {"cuda-malloc", "the driver's allocator: one device allocation per buffer"},
    {"cnmem-like", "NVIDIA CnMem: best fit, split and merge within device allocations, grows by the request"},
    {"pytorch-caching", "PyTorch's CUDA caching allocator: small/large pools, 2/20 MiB segments"},
    {"planned-pool", "memtool's pool strategy: the observer finds the step, the pool serves it from a plan"},
}};

}  // namespace

std::span<const SimulatedResourceInfo> simulated_resources() { return kResources; }

bool is_simulated_resource(std::string_view name) { return trace::find_named(simulated_resources(), name) != nullptr; }

std::unique_ptr<Resource> make_baseline(std::string_view name, Device& device) {
  if (name == "cuda-malloc") return make_device_resource(device, true);
  if (name == "cnmem-like") return make_cnmem_like(device, make_device_resource(device));
  if (name == "pytorch-caching") return make_pytorch_caching(device, make_device_resource(device));
  throw std::invalid_argument("not a baseline resource: '" + std::string(name) + "'");
}

}  // namespace memtool::engine
