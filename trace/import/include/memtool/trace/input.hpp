// One entry point for every input memtool's tools accept: tell what a file is, and read the
// event-bearing kinds (memtool traces, PyTorch memory snapshots) into an EventVisitor.
//
// Sniffing looks only at the first bytes: the trace magic (memtool::trace::is_trace_file), a
// pickle's PROTO byte 0x80, a JSON object's '{' after whitespace, or a CSV header starting
// with "id,". A pickle must also name a protocol PyTorch writes (2 to 5), and a JSON head must be
// UTF-8, so random bytes are not taken for either. Planner CSVs hold a problem, not events: read them with read_problem_csv.
// load_events opens its file once (a MappedFile), so a pipe or FIFO works as well as a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "memtool/trace/event.hpp"
#include "memtool/trace/mapped_file.hpp"
#include "memtool/trace/reader.hpp"
#include "memtool/trace/snapshot_import.hpp"

namespace memtool::trace {

enum class InputKind : std::uint8_t {
  unknown,
  trace,            // memtool trace file
  snapshot_pickle,  // torch.cuda.memory._dump_snapshot output
  snapshot_json,    // the same structure as JSON
  problem_csv,      // MiniMalloc-style planner problem
};

[[nodiscard]] std::string_view to_string(InputKind kind);

// What the first bytes of a file say it is (`head`: the first bytes, a few KiB at most).
[[nodiscard]] InputKind sniff_input_bytes(std::string_view head);
// From a file; InputError when it cannot be opened.
[[nodiscard]] InputKind sniff_input(const std::string& path);
[[nodiscard]] InputKind sniff_input(const MappedFile& input);

// A MappedFile::HeadCheck: throws the "unrecognised input" InputError at byte 0 when `head` is
// none of the kinds above, so a stream of garbage is refused after MappedFile::kHeadBytes.
[[nodiscard]] MappedFile::HeadCheck require_known_input(const std::string& path);
// Throws that error (what load_events throws for an unknown kind).
[[noreturn]] void throw_unrecognised_input(const std::string& path);

struct LoadOptions {
  SnapshotImportOptions snapshot;  // device choice (and progress) for snapshots
  TraceReadOptions trace;          // progress callback for traces; snapshots use it too when
                                   // snapshot.progress is not set
};

struct LoadSummary {
  InputKind kind = InputKind::unknown;
  std::uint64_t events = 0;                     // events delivered (allocs, frees, launches, ...; not definitions)
  bool truncated = false;                       // a trace that ends inside a record (the writer died)
  std::optional<TraceReadResult> trace;         // when kind == trace
  std::optional<SnapshotImportStats> snapshot;  // when kind is a snapshot
};

// Reads a trace or a snapshot into `visitor`. A CSV problem or an unknown file throws
// InputError saying which kinds are expected.
LoadSummary load_events(const std::string& path, EventVisitor& visitor, const LoadOptions& options = {});
// The same for a file already read (`name` for messages): what a caller that sniffed it uses.
LoadSummary load_events(const MappedFile& input, const std::string& name, EventVisitor& visitor,
                        const LoadOptions& options = {});

}  // namespace memtool::trace
