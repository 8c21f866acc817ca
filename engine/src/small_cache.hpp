// The swap strategy's home for the allocations it does not swap (smaller than
// MEMTOOL_SWAP_MIN_BYTES), when the program makes them with cuMemAlloc and frees them with
// cuMemFree. The driver's cuMemFree synchronizes the whole device, memtool's swap streams
// included: a program that frees often (one buffer per operator) would wait for every copy to or
// from the host at each free, and no schedule could hide a copy behind compute. So these
// buffers come from a caching allocator (block_cache.hpp, PyTorch's policy) and a free waits for
// the program's own streams only — what the program can observe of cuMemFree's synchronization —
// before its block is cached for reuse.
//
// A cached block cannot be exported (cuIpcGetMemHandle would name its whole segment): the export
// is refused, and from then on allocations of that size go to the driver, so the program's
// retry succeeds. Stream-ordered, pooled and larger allocations pass straight to the driver; the
// memory of a stream-ordered free counts as held until its stream gets there (the driver frees it
// then: counted free at the call, it let the device run past the budget, explicit swapping of
// alexnet with cuMemAllocAsync at 65% by 2.3% on fakecuda).
#pragma once

#include <cstdint>
#include <memory>

#include "memtool/engine/device.hpp"
#include "memtool/engine/resource.hpp"

namespace memtool::engine::detail {

// Allocations of kind `device` below `below_bytes` from the cache, everything else from the
// driver.
[[nodiscard]] std::unique_ptr<Resource> make_small_cache(Device& device, std::uint64_t below_bytes);

}  // namespace memtool::engine::detail
