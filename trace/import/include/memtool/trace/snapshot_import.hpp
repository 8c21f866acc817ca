// Importing PyTorch memory snapshots (torch.cuda.memory._dump_snapshot): the pickle the
// function writes (protocols 2 to 5) or the same structure as JSON.
//
// The importer reads one device's `device_traces` list and delivers it as events:
//   alloc                          → on_alloc (MemoryKind::device, its stream, symbolic stack)
//   free_requested                 → on_free (the program's view: the tensor died here)
//   free_completed / free          → on_free only when the trace has no free_requested at all
//                                    (older snapshots); never a second free for one allocation
//   segment_alloc/free/map/unmap   → reserved-bytes statistics, no event
//   oom, snapshot, anything else   → counted, no event
// `seq` is the entry's index in the device trace and `time_ns` is time_us × 1000. Each alloc's
// `frames` become interned strings (on_string) and a stack (on_stack) that AllocEvent::stack
// refers to; all definitions are delivered before the first event. Any malformed part of the
// document throws InputError before a single event is delivered.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "memtool/trace/event.hpp"

namespace memtool::trace {

enum class SnapshotEncoding : std::uint8_t { pickle, json };

// Which action the delivered frees came from.
enum class FreeSource : std::uint8_t {
  none,            // the trace frees nothing
  free_requested,  // the program view (current PyTorch)
  free_completed,  // the trace has only free_completed
  legacy_free,     // older snapshots: "free"
};

struct SnapshotImportOptions {
  // Which entry of device_traces to import; by default the device with the most entries
  // (the lowest index on a tie).
  std::optional<std::size_t> device;
  // Called now and then while the document is decoded with (bytes decoded, total bytes),
  // for progress messages on large files.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

struct SnapshotImportStats {
  SnapshotEncoding encoding = SnapshotEncoding::json;
  int pickle_protocol = 0;       // 0 for JSON
  std::size_t device_count = 0;  // entries of device_traces
  std::size_t device = 0;        // the one imported
  std::uint64_t entries = 0;     // entries in that device's trace

  std::uint64_t allocs = 0;  // delivered on_alloc
  std::uint64_t frees = 0;   // delivered on_free
  FreeSource free_source = FreeSource::none;
  std::uint64_t free_requested = 0;  // entries per free action, whichever were delivered
  std::uint64_t free_completed = 0;
  std::uint64_t legacy_frees = 0;
  std::uint64_t unmatched_frees = 0;       // frees of an address not live in the trace (the trace
                                           // starts after the allocation, or frees it twice)
  std::uint64_t allocs_over_live = 0;      // allocs at an address still live (its free is missing)
  std::uint64_t live_at_end = 0;           // allocations never freed in the trace
  std::uint64_t peak_allocated_bytes = 0;  // live bytes in the program view, allocs and frees
                                           // as delivered (allocations made before the trace
                                           // started are unknown and not counted)

  std::uint64_t segment_allocs = 0;
  std::uint64_t segment_frees = 0;
  std::uint64_t segment_maps = 0;
  std::uint64_t segment_unmaps = 0;
  // Reserved bytes: segments held by the caching allocator. The level before the first entry
  // is derived from the snapshot's `segments` (the state when it was dumped) minus the
  // trace's net change, and is at least what keeps the running level non-negative.
  std::uint64_t reserved_bytes_start = 0;
  std::uint64_t reserved_bytes_peak = 0;
  std::uint64_t reserved_bytes_end = 0;
  std::uint64_t reserved_peak_seq = 0;        // entry index where the peak was first reached
  bool reserved_start_from_segments = false;  // `segments` gave the dump-time level

  std::uint64_t ooms = 0;
  std::uint64_t snapshot_markers = 0;  // "snapshot" actions
  std::uint64_t other_actions = 0;     // actions we do not know

  std::uint64_t strings = 0;  // distinct strings delivered
  std::uint64_t stacks = 0;   // distinct stacks delivered
};

// In memory: `bytes` is the whole file, `name` is used in error messages.
SnapshotImportStats import_snapshot_pickle(std::string_view bytes, const std::string& name, EventVisitor& visitor,
                                           const SnapshotImportOptions& options = {});
SnapshotImportStats import_snapshot_json(std::string_view text, const std::string& name, EventVisitor& visitor,
                                         const SnapshotImportOptions& options = {});
// Either encoding, told apart by the first byte (0x80: pickle; '{' after whitespace: JSON).
SnapshotImportStats import_snapshot(std::string_view bytes, const std::string& name, EventVisitor& visitor,
                                    const SnapshotImportOptions& options = {});
// From a file, either encoding.
SnapshotImportStats import_snapshot_file(const std::string& path, EventVisitor& visitor,
                                         const SnapshotImportOptions& options = {});

[[nodiscard]] std::string_view to_string(SnapshotEncoding encoding);
[[nodiscard]] std::string_view to_string(FreeSource source);

}  // namespace memtool::trace
