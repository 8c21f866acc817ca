// The allocators programs run today, as resources on the engine's interface (resource.hpp), so
// that one replay compares them with memtool's planned pool: `memtool simulate` plays a trace
// against each on the simulated device, `memtool plan` and `memtool export` the allocation
// order of one iteration.
//
//   cuda-malloc      make_device_resource (resources.hpp): one driver allocation per buffer; on a
//                    SimDevice with driver_granularity its footprint is the driver's.
//   cnmem-like       NVIDIA's CnMem: requests rounded up to 512 B, best fit (the smallest free
//                    block, the lowest address on ties), blocks split on allocation and merged
//                    with free neighbours of their own device allocation on free; when nothing
//                    fits it grows by one device allocation of the rounded request. Nothing
//                    goes back to the device before reclaim or shutdown (CnMem: before
//                    cnmemFinalize). An initial reservation (cnmemInit's size) is optional.
//   pytorch-caching  PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp):
//                    512 B rounding, a small pool (requests up to 1 MiB, 2 MiB segments) and a
//                    large one (20 MiB segments under 10 MiB, else the request rounded to 2 MiB),
//                    best fit by (stream, size, address), splitting (small: a rest of at least
//                    512 B; large: more than 1 MiB), merging within a segment, and on a failed
//                    device allocation: free the cached whole segments and retry.
//   planned-pool     the strategy `pool` behind the observer, driven by the Engine (engine.hpp).
//
// Streams, for both caches: a block belongs to the stream it was allocated on (a stream-ordered
// allocation's; otherwise the stream work last ran on, PyTorch's "current stream") and is only
// reused there; a block that work on another stream touched (PyTorch's record_stream, done here
// by before_item) or that was freed on another stream goes back to its pool once events
// recorded on those streams at the free have completed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/engine/resource.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::engine {

struct CnmemOptions {
  std::uint64_t initial_reserve_bytes = 0;  // one device allocation made up front (0: none)
  bool grows = true;                        // false: CNMEM_FLAGS_CANNOT_GROW
};

struct PytorchCachingOptions {
  // PYTORCH_CUDA_ALLOC_CONF max_split_size_mb, in bytes, at least 20 MiB (PyTorch refuses less);
  // the default (unlimited) splits any block.
  std::uint64_t max_split_size = ~std::uint64_t{0};
  // Not PyTorch's: out of memory for a new segment, a cuMemAlloc request takes a free block of
  // another stream's before failing (memtool's small cache, block_cache.hpp borrows_when_full).
  bool borrow_when_full = false;
};

// Both allocate their device memory from `upstream` (a device resource) and order streams with
// `device`'s events. make_pytorch_caching throws std::invalid_argument for a max_split_size
// under 20 MiB.
[[nodiscard]] std::unique_ptr<Resource> make_cnmem_like(Device& device, std::unique_ptr<Resource> upstream,
                                                        CnmemOptions options = {});
[[nodiscard]] std::unique_ptr<Resource> make_pytorch_caching(Device& device, std::unique_ptr<Resource> upstream,
                                                             PytorchCachingOptions options = {});

// The resources `memtool simulate` replays against, in its order.
struct SimulatedResourceInfo {
  std::string_view name;
  std::string_view description;
};
[[nodiscard]] std::span<const SimulatedResourceInfo> simulated_resources();
[[nodiscard]] bool is_simulated_resource(std::string_view name);

// A baseline (not the planned pool, which needs the observer) over `device`; throws
// std::invalid_argument for another name.
[[nodiscard]] std::unique_ptr<Resource> make_baseline(std::string_view name, Device& device);

// What each baseline reserves at its worst for one iteration's buffers, replayed in the order of
// planner::allocation_sequence on a simulated device with the driver's granularity: the
// baselines of `memtool plan` and `memtool export`, named "cudaMalloc", "cnmem", "pytorch".
// CnMem's is the smallest slab (cnmemInit size, no growth) that serves the iteration.
struct BaselineResult {
  std::string name;
  std::uint64_t peak_reserved_bytes = 0;
};
[[nodiscard]] std::vector<BaselineResult> simulate_baselines(const trace::Problem& problem);

}  // namespace memtool::engine
