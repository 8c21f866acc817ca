// Memory an importer may take: bounded by the size of its input (DecodeBudget), measured with
// the counting operator new of heap_counter.cpp. The hostile shapes are the ones that broke it:
// a pickle that DUPs one entry dict N times (N + 60 bytes, N entries: a 20 MB file took 4 GB)
// and nested containers (one vector each: 45 bytes of heap per input byte).
#include <catch2/catch.hpp>

#include <string>

#include "decode_budget.hpp"
#include "heap_counter.hpp"
#include "json_reader.hpp"
#include "memtool/trace/input_error.hpp"
#include "memtool/trace/snapshot_import.hpp"
#include "pickle_reader.hpp"
#include "snapshot_walker.hpp"
#include "test_support.hpp"

using namespace memtool::trace;
using memtool::trace::detail::DecodeBudget;
using memtool::trace::testing::fixture;
using memtool::trace::testing::heap_in_use;
using memtool::trace::testing::heap_peak;
using memtool::trace::testing::PickleBuilder;
using memtool::trace::testing::read_bytes;
using memtool::trace::testing::reset_heap_peak;

namespace {

class CountingVisitor : public EventVisitor {
 public:
  void on_alloc(const AllocEvent&) override { ++events; }
  void on_free(const FreeEvent&) override { ++events; }
  std::uint64_t events = 0;
};

struct Outcome {
  std::string error;     // empty when the import succeeded
  std::size_t peak = 0;  // heap bytes above what was in use before the import
  std::uint64_t events = 0;
};

template <class Import>
Outcome measure(const std::string& bytes, Import import) {
  CountingVisitor visitor;
  Outcome outcome;
  const std::size_t before = heap_in_use();
  reset_heap_peak();
  try {
    (void)import(bytes, visitor);
  } catch (const InputError& error) {
    outcome.error = error.what();
    CHECK(error.offset() <= bytes.size());
  }
  outcome.peak = heap_peak() - before;
  outcome.events = visitor.events;
  return outcome;
}

Outcome measure_pickle(const std::string& bytes) {
  return measure(bytes, [](std::string_view b, EventVisitor& v) { return import_snapshot_pickle(b, "input", v); });
}
Outcome measure_json(const std::string& bytes) {
  return measure(bytes, [](std::string_view b, EventVisitor& v) { return import_snapshot_json(b, "input", v); });
}

// {'device_traces': [[entry, entry, ... (the same dict DUP'd `copies` times)]]}
std::string dup_amplified_pickle(std::size_t copies) {
  PickleBuilder b;
  b.proto(4).op('}').short_text("device_traces").op('(').op('(');
  b.op('}').op('(').short_text("action").short_text("alloc").short_text("addr").int1(1).short_text("size").int1(8).op(
      'u');
  std::string bytes = b.bytes() + std::string(copies, '2');
  return bytes + "lls.";
}

}  // namespace

TEST_CASE("memory: a pickle that DUPs one entry is refused within its budget", "[memory]") {
  const std::string pickle = dup_amplified_pickle(2'000'000);  // 2 MB
  const Outcome outcome = measure_pickle(pickle);
  INFO("peak heap " << outcome.peak << " bytes for " << pickle.size() << " input bytes");
  CHECK_THAT(outcome.error, Catch::Contains("memory") && Catch::Contains("repeated references"));
  CHECK(outcome.events == 0);  // refused before any event: a visitor never sees half of it
  CHECK(outcome.peak <= DecodeBudget(pickle.size()).limit());
  CHECK(outcome.peak <= DecodeBudget::kBytesPerInputByte * pickle.size());  // it stops before the entries
}

TEST_CASE("memory: a few shared entries within the budget still import", "[memory]") {
  const std::string pickle = dup_amplified_pickle(1000);
  const Outcome outcome = measure_pickle(pickle);
  CHECK(outcome.error.empty());
  CHECK(outcome.events == 1001);
}

TEST_CASE("memory: nested containers cost a few bytes per input byte", "[memory]") {
  SECTION("JSON brackets") {
    const std::string json = std::string(2'000'000, '[') + std::string(2'000'000, ']');
    const Outcome outcome = measure_json(json);
    INFO("peak heap " << outcome.peak << " bytes for " << json.size() << " input bytes");
    CHECK_THAT(outcome.error, Catch::Contains("this document is a list"));
    CHECK(outcome.peak <= 2 * DecodeBudget::kBytesPerInputByte * json.size());  // was 45 bytes per byte
  }
  SECTION("pickle lists") {
    std::string pickle = "\x80\x04";
    pickle += std::string(2'000'000, ']') + std::string(1'999'999, 'a') + ".";
    const Outcome outcome = measure_pickle(pickle);
    INFO("peak heap " << outcome.peak << " bytes for " << pickle.size() << " input bytes");
    CHECK_THAT(outcome.error, Catch::Contains("this document is a list"));
    CHECK(outcome.peak <= 2 * DecodeBudget::kBytesPerInputByte * pickle.size());
  }
  SECTION("pickle tuples of tuples, one byte each") {
    std::string pickle = "\x80\x04N";
    pickle += std::string(2'000'000, '\x85') + ".";  // TUPLE1: ((((None,),),),)
    const Outcome outcome = measure_pickle(pickle);
    INFO("peak heap " << outcome.peak << " bytes for " << pickle.size() << " input bytes");
    CHECK_THAT(outcome.error, Catch::Contains("this document is a tuple"));
    CHECK(outcome.peak <= 2 * DecodeBudget::kBytesPerInputByte * pickle.size());
  }
}

TEST_CASE("memory: real snapshots use a fraction of their budget", "[memory]") {
  for (const char* name :
       {"snapshots/alexnet.p4.pickle", "traces/lstm.snapshot.json", "traces/mobilenet_v2.snapshot.json"}) {
    const std::string bytes = read_bytes(fixture(name));
    DecodeBudget budget(bytes.size());
    CountingVisitor visitor;
    if (bytes.front() == '\x80') {
      const auto document = detail::read_pickle(bytes, name, budget);
      (void)detail::deliver_snapshot(document.tree, document.root, bytes.size(), budget, name, visitor, {});
    } else {
      const auto document = detail::read_json(bytes, name, budget);
      (void)detail::deliver_snapshot(document.tree, document.root, bytes.size(), budget, name, visitor, {});
    }
    const double per_byte = static_cast<double>(budget.used()) / static_cast<double>(bytes.size());
    INFO(name << ": " << per_byte << " bytes charged per input byte");
    CHECK(visitor.events > 0);
    CHECK(per_byte * 2 <= static_cast<double>(DecodeBudget::kBytesPerInputByte));
  }
}
