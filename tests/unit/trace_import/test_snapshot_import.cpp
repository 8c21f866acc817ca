// The snapshot importers on real structures: every pickle protocol and JSON give the same
// event stream; the hand-written fixture gives exactly the events and statistics worked out
// by hand; the recorded alexnet snapshot gives the counts its JSON holds.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/snapshot_import.hpp"
#include "test_support.hpp"

using namespace memtool::trace;
using memtool::trace::testing::fixture;
using memtool::trace::testing::read_bytes;
using memtool::trace::testing::RecordingVisitor;

namespace {

constexpr std::uint64_t kSegment = 0x7F3A00000000ULL;  // make_fixtures.py: SEGMENT
constexpr std::uint64_t kStreamB = 94558336;

struct Imported {
  RecordingVisitor events;
  SnapshotImportStats stats;
};

Imported import_fixture(const std::string& relative, const SnapshotImportOptions& options = {}) {
  Imported result;
  result.stats = import_snapshot_file(fixture(relative), result.events, options);
  return result;
}

Imported import_json_text(const std::string& text, const SnapshotImportOptions& options = {}) {
  Imported result;
  result.stats = import_snapshot_json(text, "inline.json", result.events, options);
  return result;
}

}  // namespace

TEST_CASE("snapshot: protocols 2, 3, 4 and JSON give identical event streams", "[snapshot]") {
  const Imported json = import_fixture("snapshots/small.json");
  CHECK(json.stats.encoding == SnapshotEncoding::json);
  CHECK(json.stats.pickle_protocol == 0);
  REQUIRE(json.events.log.size() > 10);
  for (int protocol : {2, 3, 4}) {
    const Imported pickle = import_fixture(fmt::format("snapshots/small.p{}.pickle", protocol));
    CHECK(pickle.stats.encoding == SnapshotEncoding::pickle);
    CHECK(pickle.stats.pickle_protocol == protocol);
    CHECK(pickle.events.log == json.events.log);
    CHECK(pickle.stats.reserved_bytes_peak == json.stats.reserved_bytes_peak);
    CHECK(pickle.stats.reserved_bytes_start == json.stats.reserved_bytes_start);
    CHECK(pickle.stats.peak_allocated_bytes == json.stats.peak_allocated_bytes);
  }
}

TEST_CASE("snapshot: the small fixture's events, worked out by hand", "[snapshot]") {
  const Imported imported = import_fixture("snapshots/small.p4.pickle");
  const auto& s = imported.stats;
  // Device 1 has the most entries (17 against 2 and 0).
  CHECK(s.device_count == 3);
  CHECK(s.device == 1);
  CHECK(s.entries == 17);

  const auto& allocs = imported.events.allocs;
  REQUIRE(allocs.size() == 4);
  CHECK(allocs[0].header.seq == 1);
  CHECK(allocs[0].header.time_ns == 1001000);
  CHECK(allocs[0].address == kSegment);
  CHECK(allocs[0].size == 512);
  CHECK(allocs[0].kind == MemoryKind::device);
  CHECK(allocs[0].stream == StreamHandle{0});
  CHECK(allocs[1].header.seq == 2);
  CHECK(allocs[1].address == kSegment + 512);
  CHECK(allocs[1].size == 1024);
  CHECK(allocs[1].stream == StreamHandle{kStreamB});
  CHECK(allocs[2].header.seq == 5);
  CHECK(allocs[2].address == kSegment);
  CHECK(allocs[2].size == 256);
  CHECK(allocs[3].header.seq == 7);
  CHECK(allocs[3].size == 1048576);
  CHECK_FALSE(allocs[3].stack.valid());  // empty frames: no stack

  // Frees come from free_requested; the matching free_completed entries are not a second free.
  const auto& frees = imported.events.frees;
  REQUIRE(frees.size() == 3);
  CHECK(frees[0].header.seq == 3);
  CHECK(frees[0].address == kSegment);
  CHECK(frees[1].header.seq == 9);
  CHECK(frees[1].address == kSegment + 512);
  CHECK(frees[1].stream == StreamHandle{kStreamB});
  CHECK(frees[2].header.seq == 11);
  CHECK(frees[2].header.time_ns == 1011000);

  CHECK(s.allocs == 4);
  CHECK(s.frees == 3);
  CHECK(s.free_source == FreeSource::free_requested);
  CHECK(s.free_requested == 3);
  CHECK(s.free_completed == 3);
  CHECK(s.unmatched_frees == 0);
  CHECK(s.allocs_over_live == 0);
  CHECK(s.live_at_end == 1);
  CHECK(s.peak_allocated_bytes == 1024 + 256 + 1048576);

  CHECK(s.segment_allocs == 2);
  CHECK(s.segment_frees == 1);
  CHECK(s.segment_maps == 1);
  CHECK(s.segment_unmaps == 1);
  CHECK(s.ooms == 1);
  CHECK(s.snapshot_markers == 1);
  CHECK(s.other_actions == 0);
  // Dump-time segments of device 1 hold 2 MiB, which is also the trace's net change: the
  // level before the trace was 0; the 20 MiB segment of entry 15 makes the peak.
  CHECK(s.reserved_start_from_segments);
  CHECK(s.reserved_bytes_start == 0);
  CHECK(s.reserved_bytes_peak == 2097152 + 20971520);
  CHECK(s.reserved_peak_seq == 15);
  CHECK(s.reserved_bytes_end == 2097152);
}

TEST_CASE("snapshot: frames become interned strings and shared stacks", "[snapshot]") {
  const Imported imported = import_fixture("snapshots/small.json");
  const auto& events = imported.events;
  CHECK(imported.stats.strings == 7);
  CHECK(imported.stats.stacks == 2);
  REQUIRE(events.strings.size() == 7);
  REQUIRE(events.stacks.size() == 2);
  auto text = [&](StringId id) { return id.valid() ? events.strings.at(id.value()) : std::string("?"); };

  // Entries 1 and 5 share one frames list (and the pickles share it through the memo).
  REQUIRE(events.allocs[0].stack.valid());
  CHECK(events.allocs[0].stack == events.allocs[2].stack);
  const auto& train_step = events.stacks.at(events.allocs[0].stack.value());
  REQUIRE(train_step.size() == 3);
  CHECK(text(train_step[0].function) == "forward");
  CHECK(text(train_step[0].file) == "torch/nn/modules/linear.py");
  CHECK(train_step[0].line == 114);
  CHECK(train_step[0].ip == 0);
  CHECK(text(train_step[2].function) == "<module>");
  CHECK(train_step[2].line == 88);

  const auto& loss = events.stacks.at(events.allocs[1].stack.value());
  REQUIRE(loss.size() == 2);
  CHECK(text(loss[0].file) ==
        "m\xc3\xb3"
        "dulo/p\xc3\xa9rdida.py");
  CHECK(text(loss[0].function) == "funci\xc3\xb3n_\xc3\x9f");
  CHECK(loss[1].file == train_step[1].file);  // "train.py" interned once
  std::set<std::string> distinct(events.strings.begin(), events.strings.end());
  CHECK(distinct.size() == events.strings.size());

  // Definitions come before the first event.
  std::size_t first_event = events.log.size();
  std::size_t last_definition = 0;
  for (std::size_t i = 0; i < events.log.size(); ++i) {
    const std::string& line = events.log[i];
    if (line.starts_with("string") || line.starts_with("stack")) last_definition = i;
    if ((line.starts_with("alloc") || line.starts_with("free")) && first_event == events.log.size()) first_event = i;
  }
  CHECK(last_definition < first_event);
}

TEST_CASE("snapshot: device choice and a trace with only free_completed", "[snapshot]") {
  SnapshotImportOptions device0;
  device0.device = 0;
  const Imported zero = import_fixture("snapshots/small.p3.pickle", device0);
  CHECK(zero.stats.device == 0);
  CHECK(zero.stats.free_source == FreeSource::free_completed);
  REQUIRE(zero.events.allocs.size() == 1);
  REQUIRE(zero.events.frees.size() == 1);
  CHECK(zero.events.frees[0].header.seq == 1);
  CHECK(zero.events.frees[0].address == 0x7F0000000000ULL);
  // Device 0's dump-time segments hold 2 MiB and its trace changes nothing.
  CHECK(zero.stats.reserved_bytes_start == 2097152);
  CHECK(zero.stats.reserved_bytes_peak == 2097152);

  SnapshotImportOptions device2;
  device2.device = 2;
  const Imported empty = import_fixture("snapshots/small.json", device2);
  CHECK(empty.stats.entries == 0);
  CHECK(empty.events.allocs.empty());
  CHECK(empty.stats.free_source == FreeSource::none);

  SnapshotImportOptions device3;
  device3.device = 3;
  CHECK_THROWS_AS(import_fixture("snapshots/small.json", device3), InputError);
}

TEST_CASE("snapshot: legacy 'free' actions, unmatched and repeated frees", "[snapshot]") {
  const Imported legacy = import_json_text(R"({"device_traces": [[
      {"action": "free", "addr": 64, "size": 8, "stream": 0},
      {"action": "alloc", "addr": 16, "size": 8, "stream": 0, "time_us": 3},
      {"action": "free", "addr": 16, "size": 8, "stream": 0},
      {"action": "free", "addr": 16, "size": 8, "stream": 0},
      {"action": "alloc", "addr": 16, "size": 4, "stream": 0},
      {"action": "alloc", "addr": 16, "size": 2, "stream": 0},
      {"action": "future_action", "whatever": [1, 2]}
  ]]})");
  const auto& s = legacy.stats;
  CHECK(s.free_source == FreeSource::legacy_free);
  CHECK(s.legacy_frees == 3);
  CHECK(s.allocs == 3);
  CHECK(s.frees == 1);            // the second free of 16 is not delivered
  CHECK(s.unmatched_frees == 2);  // 64 was never allocated, 16 freed twice
  CHECK(s.allocs_over_live == 1);
  CHECK(s.other_actions == 1);
  CHECK(s.live_at_end == 1);
  CHECK(s.peak_allocated_bytes == 8);
  CHECK_FALSE(s.reserved_start_from_segments);  // no "segments" key
  REQUIRE(legacy.events.frees.size() == 1);
  CHECK(legacy.events.frees[0].header.seq == 2);
  CHECK(legacy.events.allocs[0].header.time_ns == 3000);
}

TEST_CASE("snapshot: reserved bytes without dump-time segments stay non-negative", "[snapshot]") {
  // The trace starts with a segment it never saw allocated: at least 100 bytes were reserved.
  const Imported imported = import_json_text(R"({"device_traces": [[
      {"action": "segment_free", "addr": 0, "size": 100},
      {"action": "segment_alloc", "addr": 0, "size": 30},
      {"action": "segment_alloc", "addr": 0, "size": 50},
      {"action": "segment_unmap", "addr": 0, "size": 10}
  ]]})");
  CHECK(imported.stats.reserved_bytes_start == 100);
  CHECK(imported.stats.reserved_bytes_peak == 100);
  CHECK(imported.stats.reserved_peak_seq == 0);
  CHECK(imported.stats.reserved_bytes_end == 70);
  CHECK(imported.events.log.size() == 2);  // metadata only
}

TEST_CASE("snapshot: alexnet counts match what its JSON holds", "[snapshot][alexnet]") {
  const std::string path = fixture("traces/alexnet.snapshot.json");
  // Expectations straight from the document, independently of the importer.
  const auto document = nlohmann::json::parse(read_bytes(path));
  const auto& trace = document.at("device_traces").at(0);
  std::map<std::string, std::uint64_t> actions;
  for (const auto& entry : trace) ++actions[entry.at("action").get<std::string>()];
  REQUIRE(actions["alloc"] > 0);

  const Imported json = import_fixture("traces/alexnet.snapshot.json");
  CHECK(json.stats.entries == trace.size());
  CHECK(json.stats.allocs == actions["alloc"]);
  CHECK(json.stats.frees == actions["free_requested"]);
  CHECK(json.stats.free_requested == actions["free_requested"]);
  CHECK(json.stats.free_completed == actions["free_completed"]);
  CHECK(json.stats.unmatched_frees == 0);
  CHECK(json.stats.live_at_end == actions["alloc"] - actions["free_requested"]);
  CHECK(json.events.allocs.size() == actions["alloc"]);
  CHECK(json.events.frees.size() == actions["free_requested"]);
  // tests/fixtures/traces/README.md: alexnet's peak live bytes.
  CHECK(json.stats.peak_allocated_bytes == 887414904);
  // Every alloc event carries its entry's index, size and time.
  for (const AllocEvent& alloc : json.events.allocs) {
    const auto& entry = trace.at(alloc.header.seq);
    REQUIRE(entry.at("action") == "alloc");
    CHECK(entry.at("size").get<std::uint64_t>() == alloc.size);
    CHECK(entry.at("addr").get<std::uint64_t>() == alloc.address);
    CHECK(entry.at("time_us").get<std::uint64_t>() * 1000 == alloc.header.time_ns);
  }

  const Imported pickle = import_fixture("snapshots/alexnet.p4.pickle");
  CHECK(pickle.stats.pickle_protocol == 4);
  CHECK(pickle.events.log == json.events.log);
}

TEST_CASE("snapshot: import_snapshot tells the encodings apart", "[snapshot]") {
  RecordingVisitor visitor;
  const std::string json = "\n  " + read_bytes(fixture("snapshots/small.json"));
  CHECK(import_snapshot(json, "j", visitor).encoding == SnapshotEncoding::json);
  const std::string pickle = read_bytes(fixture("snapshots/small.p2.pickle"));
  CHECK(import_snapshot(pickle, "p", visitor).encoding == SnapshotEncoding::pickle);
  try {
    (void)import_snapshot("  [1, 2]", "list.json", visitor);
    FAIL("expected an InputError");
  } catch (const InputError& error) {
    CHECK(error.offset() == 2);
    CHECK_THAT(error.message(), Catch::Contains("0x80"));
  }
  CHECK_THROWS_AS(import_snapshot_file(fixture("snapshots/no-such-file.pickle"), visitor), InputError);
}

TEST_CASE("snapshot: progress reports end with the whole file", "[snapshot]") {
  for (const char* name :
       {"traces/alexnet.snapshot.json", "snapshots/alexnet.p4.pickle", "traces/mobilenet_v2.snapshot.json"}) {
    INFO(name);
    const std::string bytes = read_bytes(fixture(name));
    std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
    SnapshotImportOptions options;
    options.progress = [&](std::uint64_t done, std::uint64_t total) { calls.emplace_back(done, total); };
    RecordingVisitor visitor;
    (void)import_snapshot(bytes, name, visitor, options);
    REQUIRE_FALSE(calls.empty());
    CHECK(calls.back().first == bytes.size());
    CHECK(calls.back().second == bytes.size());
    for (std::size_t i = 1; i < calls.size(); ++i) CHECK(calls[i - 1].first <= calls[i].first);
    if (bytes.size() > (std::size_t{4} << 20)) CHECK(calls.size() >= 2);  // one every 4 MiB
  }
}
