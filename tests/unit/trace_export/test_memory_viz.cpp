// The memory_viz export read back by memtool's own importer: the same buffers (address, size,
// stream) allocated and freed in the same order, for a recorded memtool trace and a real
// PyTorch snapshot; the layout PyTorch's viewers rely on (entry order, final segments); windows;
// and traces whose buffers overlap.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "memtool/trace/export.hpp"
#include "memtool/trace/input.hpp"
#include "memtool/trace/snapshot_import.hpp"
#include "pickle_reader.hpp"
#include "synthetic_trace.hpp"

using namespace memtool::trace;

namespace {

struct Step {
  bool alloc;
  std::uint64_t buffer;
  friend bool operator==(const Step&, const Step&) = default;
};

// The allocations and frees of a model, in order, by buffer id (a buffer ended by the reuse
// of its address counts as freed there, as the export writes it).
std::vector<Step> lifetime_steps(const TraceModel& model) {
  std::vector<std::vector<std::uint64_t>> reuse_ends(model.event_count() + 1);
  for (std::uint64_t id = 0; id < model.buffer_count(); ++id) {
    const auto& b = model.buffer(BufferId{id});
    if (b.ended_by_reuse) reuse_ends[b.free_event].push_back(id);
  }
  std::vector<Step> steps;
  for (std::uint64_t e = 0; e < model.event_count(); ++e) {
    for (auto id : reuse_ends[e]) steps.push_back({false, id});
    const auto& event = model.event(e);
    if (!event.buffer.valid()) continue;
    if (event.kind == EventKind::alloc) steps.push_back({true, event.buffer.value()});
    if (event.kind == EventKind::free) steps.push_back({false, event.buffer.value()});
  }
  return steps;
}

void check_same_lifetimes(const TraceModel& original, const TraceModel& imported) {
  REQUIRE(imported.buffer_count() == original.buffer_count());
  for (std::uint64_t id = 0; id < original.buffer_count(); ++id) {
    const auto& a = original.buffer(BufferId{id});
    const auto& b = imported.buffer(BufferId{id});
    INFO("buffer " << id);
    CHECK(b.address == a.address);
    CHECK(b.size == a.size);
    CHECK(b.stream == a.stream);
    CHECK(b.freed() == (a.freed() || a.ended_by_reuse));
  }
  CHECK(lifetime_steps(imported) == lifetime_steps(original));
}

struct RoundTrip {
  TraceModel imported;
  SnapshotImportStats stats;
  ExportStats exported;
  std::string bytes;
};

RoundTrip round_trip(const TraceModel& model, const Iterations& iterations, ExportOptions options = {}) {
  RoundTrip r;
  StringSink sink;
  r.exported = export_memory_viz(ExportSource{model, iterations, "test"}, options, sink);
  r.bytes = sink.str();
  r.stats = import_snapshot_pickle(r.bytes, "exported.pickle", r.imported);
  return r;
}

TraceModel load(const std::string& relative) {
  TraceModel model;
  (void)load_events(std::string(MEMTOOL_FIXTURES_DIR) + "/" + relative, model);
  return model;
}

// Actions of device_traces[0] and the addresses of `segments`, straight from the pickle.
struct Layout {
  std::vector<std::string> actions;
  std::vector<std::uint64_t> segment_addresses;
  std::vector<std::uint64_t> segment_sizes;
};
Layout layout_of(const std::string& bytes) {
  const auto doc = detail::read_pickle(bytes, "exported.pickle");
  const auto& t = doc.tree;
  Layout layout;
  const auto root = t.items(doc.root);
  for (std::size_t i = 0; i + 1 < root.size(); i += 2) {
    if (t.text(root[i]) == "device_traces") {
      for (auto entry : t.items(t.items(root[i + 1])[0])) {
        const auto fields = t.items(entry);
        for (std::size_t k = 0; k + 1 < fields.size(); k += 2) {
          if (t.text(fields[k]) == "action") layout.actions.emplace_back(t.text(fields[k + 1]));
        }
      }
    } else if (t.text(root[i]) == "segments") {
      for (auto segment : t.items(root[i + 1])) {
        const auto fields = t.items(segment);
        for (std::size_t k = 0; k + 1 < fields.size(); k += 2) {
          if (t.text(fields[k]) == "address") layout.segment_addresses.push_back(*t.as_unsigned(fields[k + 1]));
          if (t.text(fields[k]) == "total_size") layout.segment_sizes.push_back(*t.as_unsigned(fields[k + 1]));
        }
      }
    }
  }
  return layout;
}

}  // namespace

TEST_CASE("memory_viz: a recorded memtool trace reads back to the same lifetimes", "[export][memory_viz]") {
  const TraceModel model = load("traces/conv_train.mtrace");
  const Iterations iterations = find_iterations(model);
  REQUIRE(model.buffer_count() > 10);
  for (int protocol : {2, 3, 4}) {
    ExportOptions options;
    options.pickle_protocol = protocol;
    const RoundTrip r = round_trip(model, iterations, options);
    INFO("protocol " << protocol);
    CHECK(r.stats.pickle_protocol == protocol);
    CHECK(r.stats.free_source == FreeSource::free_requested);
    CHECK(r.stats.unmatched_frees == 0);
    CHECK(r.stats.allocs_over_live == 0);
    CHECK(r.stats.allocs == model.stats().allocs);
    check_same_lifetimes(model, r.imported);
  }
}

TEST_CASE("memory_viz: a real PyTorch snapshot survives the round trip", "[export][memory_viz]") {
  const TraceModel model = load("traces/alexnet.snapshot.json");
  const RoundTrip r = round_trip(model, find_iterations(model));
  check_same_lifetimes(model, r.imported);
  // Frames come back too: the alloc stacks are the snapshot's.
  const auto& first = model.buffer(BufferId{0});
  const auto& again = r.imported.buffer(BufferId{0});
  REQUIRE(model.stack(first.stack).size() == r.imported.stack(again.stack).size());
  if (!model.stack(first.stack).empty()) {
    CHECK(r.imported.string(r.imported.stack(again.stack)[0].function) ==
          model.string(model.stack(first.stack)[0].function));
  }
}

TEST_CASE("memory_viz: entries in PyTorch's order and the live buffers as the final segments", "[export][memory_viz]") {
  test::SyntheticTrace trace;
  const TraceModel& model = test::three_iterations(trace);
  const Iterations iterations = find_iterations(model);
  REQUIRE(iterations.spans.size() == 3);

  ExportOptions whole;
  const RoundTrip all = round_trip(model, iterations, whole);
  const Layout a = layout_of(all.bytes);
  REQUIRE(a.actions.size() == 2 + 3 * 10);
  CHECK(a.actions[0] == "segment_alloc");
  CHECK(a.actions[1] == "alloc");
  const std::vector<std::string> free_order{"free_requested", "free_completed", "segment_free"};
  CHECK(std::vector<std::string>(a.actions.begin() + 6, a.actions.begin() + 9) == free_order);
  CHECK(a.segment_addresses == std::vector<std::uint64_t>{0x7000'0000'0000});  // only the weight is live at the end
  CHECK(a.segment_sizes == std::vector<std::uint64_t>{std::uint64_t{64} << 20});
  CHECK(all.stats.reserved_start_from_segments);

  // Iteration 1 alone: the weight has no entry (live before and after), the iteration's two
  // buffers are allocated and freed inside it.
  ExportOptions one;
  one.first_iteration = one.last_iteration = 1;
  const RoundTrip window = round_trip(model, iterations, one);
  CHECK(window.exported.first_event == iterations.spans[1].first_event);
  CHECK(window.exported.end_event == iterations.spans[1].end_event);
  const Layout w = layout_of(window.bytes);
  CHECK(w.actions.size() == 10);
  CHECK(w.segment_addresses == std::vector<std::uint64_t>{0x7000'0000'0000});
  CHECK(window.stats.allocs == 2);
  CHECK(window.stats.frees == 2);

  ExportOptions bad;
  bad.first_iteration = 2;
  bad.last_iteration = 5;
  StringSink sink;
  CHECK_THROWS_WITH(export_memory_viz(ExportSource{model, iterations, "test"}, bad, sink),
                    Catch::Contains("the input has iterations 0 to 2"));
}

TEST_CASE("memory_viz: a buffer overlapped by a newer allocation ends where the newer one starts",
          "[export][memory_viz]") {
  test::SyntheticTrace trace;
  trace.alloc(0x1000'0000, 1 << 20);
  trace.alloc(0x1000'1000, 4096);  // inside the first, whose free the trace lost
  trace.free(0x1000'1000);
  const TraceModel& model = trace.model();
  const RoundTrip r = round_trip(model, find_iterations(model));
  CHECK(r.exported.overlapped_ends == 1);
  const Layout layout = layout_of(r.bytes);
  const std::vector<std::string> expected{"segment_alloc", "alloc", "free_requested", "free_completed", "segment_free",
                                          "segment_alloc", "alloc", "free_requested", "free_completed", "segment_free"};
  CHECK(layout.actions == expected);
  CHECK(layout.segment_addresses.empty());
  CHECK(r.stats.unmatched_frees == 0);
}

TEST_CASE("memory_viz: streamed from the reader, the same document as from the model", "[export][memory_viz]") {
  for (const char* fixture :
       {"traces/conv_train.mtrace", "traces/alexnet.snapshot.json", "snapshots/alexnet.p4.pickle"}) {
    INFO(fixture);
    const TraceModel model = load(fixture);
    const Iterations iterations = find_iterations(model);
    StringSink from_model;
    (void)export_memory_viz(ExportSource{model, iterations, "test"}, {}, from_model);
    StringSink streamed;
    MemoryVizStream stream(streamed, 4);
    (void)load_events(std::string(MEMTOOL_FIXTURES_DIR) + "/" + fixture, stream);
    const ExportStats stats = stream.finish();
    CHECK(stats.buffers == model.buffer_count());
    CHECK(stream.unknown_frees() == model.stats().unknown_frees);
    CHECK(streamed.str() == from_model.str());
  }
}
