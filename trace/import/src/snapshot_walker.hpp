// The schema of a PyTorch memory snapshot, read from a decoded ValueTree and delivered as
// events (the rules are in memtool/trace/snapshot_import.hpp). Shared by the pickle and the
// JSON importer, so both encodings give identical event streams.
#pragma once

#include <cstddef>
#include <string>

#include "memtool/trace/event.hpp"
#include "memtool/trace/snapshot_import.hpp"
#include "value_tree.hpp"

namespace memtool::trace::detail {

// Validates the whole document first (InputError naming the entry on any mismatch), then
// delivers definitions and events. `input_bytes` bounds the work: shared references (pickle
// memo) must not let a small file demand unbounded walking. `memory`, the budget the decoder
// charged, is charged for the entries, interned strings and stacks and the events to deliver,
// all before the first event. A visitor that throws EventRejected gets an InputError at the
// entry.
SnapshotImportStats deliver_snapshot(const ValueTree& tree, ValueRef root, std::size_t input_bytes,
                                     DecodeBudget& memory, const std::string& name, EventVisitor& visitor,
                                     const SnapshotImportOptions& options);

}  // namespace memtool::trace::detail
