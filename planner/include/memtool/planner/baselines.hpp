// What the user's program pays today: the same buffers served, in the same order, by the
// allocators people actually run, simulated (no GPU). Each simulation reports its peak reserved
// bytes (device memory held from the driver at the worst moment).
//
// The order: time runs forward through the problem's interval endpoints; at one time, frees
// (intervals ending then) come before allocations (intervals starting then), each group in
// buffer order. A buffer with several intervals is freed and allocated again (as a swapped
// buffer would be). Sizes are the buffers' sizes, not footprints: each allocator rounds them
// its own way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memtool/trace/problem.hpp"

namespace memtool::planner {

struct AllocationEvent {
  bool allocate = true;      // false: free
  std::uint32_t buffer = 0;  // index into problem.buffers
  std::uint64_t size = 0;
};

[[nodiscard]] std::vector<AllocationEvent> allocation_sequence(const trace::Problem& problem);

// Plain cudaMalloc/cudaFree, one driver allocation per buffer. The rule we model: a request of
// more than 1 MiB takes whole 2 MiB pages (the driver maps large allocations at that
// granularity); a smaller request is rounded up to 512 B (the driver packs small allocations
// into shared pages, so charging 2 MiB each would overstate them).
[[nodiscard]] std::uint64_t simulate_cuda_malloc(const std::vector<AllocationEvent>& events);

// A CnMem-like pool (the SmartPool paper's baseline): requests rounded up to 512 B, best fit
// (smallest free block that fits, lowest address on ties), blocks split on allocation and
// coalesced with free neighbours on free. CnMem reserves a fixed slab up front; we model an
// unbounded slab and report the highest address ever used, i.e. the smallest slab that would
// have served the sequence.
[[nodiscard]] std::uint64_t simulate_cnmem(const std::vector<AllocationEvent>& events);

struct PytorchCachingOptions {
  // PYTORCH_CUDA_ALLOC_CONF max_split_size_mb; the default (unlimited) splits any block.
  std::uint64_t max_split_size = UINT64_MAX;
};

// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), one device, one stream:
// see baseline_pytorch.cpp for the rules modelled and what is left out.
[[nodiscard]] std::uint64_t simulate_pytorch_caching(const std::vector<AllocationEvent>& events,
                                                     const PytorchCachingOptions& options = {});

struct BaselineResult {
  std::string name;
  std::uint64_t peak_reserved_bytes = 0;
};

// All three, in a fixed order: cudaMalloc, cnmem, pytorch.
[[nodiscard]] std::vector<BaselineResult> simulate_baselines(const trace::Problem& problem);

}  // namespace memtool::planner
