// The Perfetto export decoded by a minimal protobuf reader here: the wire encoding, one packet
// sequence, balanced slices on every track, counters that reach the trace's peak, interned
// names resolved, and the plan and swap tracks. (tests/cli/export/check_export.py checks the
// same files against Perfetto's own protobuf bindings.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "memtool/trace/export.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "protobuf_writer.hpp"
#include "synthetic_trace.hpp"

using namespace memtool::trace;

namespace {

// One decoded message: field number → values (varints, or the bytes of length-delimited ones).
struct Message {
  std::multimap<std::uint32_t, std::uint64_t> numbers;
  std::multimap<std::uint32_t, std::string> bytes;
  [[nodiscard]] std::uint64_t number(std::uint32_t field, std::uint64_t fallback = 0) const {
    const auto it = numbers.find(field);
    return it == numbers.end() ? fallback : it->second;
  }
  [[nodiscard]] bool has(std::uint32_t field) const { return numbers.count(field) + bytes.count(field) != 0; }
};

std::uint64_t varint(const std::string& s, std::size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    REQUIRE(at < s.size());
    const auto byte = static_cast<unsigned char>(s[at++]);
    value |= std::uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return value;
  }
}

Message decode(const std::string& s) {
  Message m;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::uint64_t tag = varint(s, at);
    const auto field = static_cast<std::uint32_t>(tag >> 3);
    switch (tag & 7) {
      case 0:
        m.numbers.emplace(field, varint(s, at));
        break;
      case 1:
        at += 8;
        break;
      case 2: {
        const std::uint64_t length = varint(s, at);
        REQUIRE(at + length <= s.size());
        m.bytes.emplace(field, s.substr(at, length));
        at += length;
        break;
      }
      default:
        FAIL("unexpected wire type " << (tag & 7));
    }
  }
  return m;
}

Message sub(const Message& m, std::uint32_t field) {
  const auto it = m.bytes.find(field);
  REQUIRE(it != m.bytes.end());
  return decode(it->second);
}

struct Decoded {
  std::vector<Message> packets;
  std::map<std::uint64_t, std::string> track_names;  // uuid → name
  std::map<std::uint64_t, std::uint64_t> parents;
};

Decoded decode_trace(const std::string& bytes) {
  Decoded d;
  const Message trace = decode(bytes);
  for (auto [it, end] = trace.bytes.equal_range(1); it != end; ++it) d.packets.push_back(decode(it->second));
  for (const Message& p : d.packets) {
    if (!p.bytes.count(60)) continue;
    const Message track = sub(p, 60);
    d.track_names[track.number(1)] = track.bytes.count(2) ? track.bytes.find(2)->second : "(process)";
    d.parents[track.number(1)] = track.number(5);
  }
  return d;
}

}  // namespace

TEST_CASE("protobuf writer: varints, strings and patched nested lengths", "[export][perfetto]") {
  detail::ProtoMessage m;
  m.varint_field(1, 300);
  CHECK(m.bytes() == std::string("\x08\xac\x02", 3));
  m.clear();
  const auto at = m.begin(2);
  m.string_field(3, "abc");
  m.end(at);
  // tag 0x12, a 4-byte length of 5, then field 3 = "abc"
  CHECK(m.bytes() == std::string("\x12\x85\x80\x80\x00\x1a\x03"
                                 "abc",
                                 10));
  const Message decoded = decode(m.bytes());
  CHECK(sub(decoded, 2).bytes.find(3)->second == "abc");
  m.clear();
  m.int64_field(4, -1);
  CHECK(m.bytes().size() == 11);  // negative int64: ten varint bytes
}

TEST_CASE("perfetto: tracks, balanced slices, counters at the peak, interned names", "[export][perfetto]") {
  test::SyntheticTrace trace;
  const TraceModel& model = test::three_iterations(trace);
  const Iterations iterations = find_iterations(model);

  PoolPlanView plan = test::two_buffer_plan();
  SwapScheduleView swaps{"test", 1 << 20, {{BufferId{1}, 1 << 20, true, 3, 5}, {BufferId{1}, 1 << 20, false, 8, 10}}};

  ExportOptions options;
  options.plan = &plan;
  options.swaps = &swaps;
  StringSink sink;
  const ExportStats stats = export_perfetto(ExportSource{model, iterations, "synthetic"}, options, sink);
  const Decoded d = decode_trace(sink.str());
  REQUIRE(d.packets.size() == stats.records);
  CHECK(stats.buffers == model.buffer_count());
  CHECK(d.packets.front().number(13) == 1);  // SEQ_INCREMENTAL_STATE_CLEARED first

  std::map<std::uint64_t, int> depth;  // per track: open slices
  std::map<std::uint64_t, std::uint64_t> last_time;
  std::map<std::uint64_t, std::string> names;  // interned
  std::map<std::uint64_t, std::string> texts;  // interned annotation strings (stacks)
  std::int64_t max_live = 0;
  int buffer_slices = 0, iteration_slices = 0, plan_slices = 0, swap_slices = 0, launches = 0;
  for (const Message& p : d.packets) {
    CHECK(p.number(10) == 1);  // one sequence
    if (p.bytes.count(12)) {
      const Message interned = sub(p, 12);
      for (auto [it, end] = interned.bytes.equal_range(2); it != end; ++it) {
        const Message name = decode(it->second);
        names[name.number(1)] = name.bytes.find(2)->second;
      }
      for (auto [it, end] = interned.bytes.equal_range(29); it != end; ++it) {
        const Message text = decode(it->second);
        CHECK_FALSE(texts.count(text.number(1)));  // defined once
        texts[text.number(1)] = text.bytes.find(2)->second;
      }
    }
    if (!p.bytes.count(11)) continue;
    const Message e = sub(p, 11);
    const std::uint64_t track = e.number(11);
    REQUIRE(d.track_names.count(track));
    const std::uint64_t type = e.number(9);
    if (type == 1 || type == 3) {
      REQUIRE(e.has(10));
      REQUIRE(names.count(e.number(10)));  // interned before use
    }
    const std::string& track_name = d.track_names.at(track);
    const std::string& parent_name = d.track_names.at(d.parents.at(track));
    if (type == 1) {
      ++depth[track];
      if (track_name == "buffers") {
        ++buffer_slices;
        // Every buffer of the synthetic trace has the stack "step (train.py:12)", by its iid.
        std::string stack;
        for (auto [it, end] = e.bytes.equal_range(4); it != end; ++it) {
          const Message arg = decode(it->second);
          if (arg.bytes.count(10) && arg.bytes.find(10)->second == "stack") {
            CHECK_FALSE(arg.bytes.count(6));  // never inline
            REQUIRE(texts.count(arg.number(17)));
            stack = texts.at(arg.number(17));
          }
        }
        CHECK(stack == "step (train.py:12)");
      }
      if (track_name == "iterations") ++iteration_slices;
      if (track_name == "planned buffers") ++plan_slices;
      if (track_name == "transfers") ++swap_slices;
      CHECK(depth[track] == 1);  // lanes never nest
      if (track_name != "planned buffers" && track_name != "transfers") {
        CHECK(p.number(8) >= last_time[track]);
        last_time[track] = p.number(8);
      }
    } else if (type == 2) {
      CHECK(--depth[track] == 0);
    } else if (type == 3 && track_name == "launches") {
      const std::string& name = names.at(e.number(10));
      if (name == "gemm_kernel") {
        ++launches;
        CHECK(parent_name == "stream 0x7");
      } else {
        CHECK(name == "copy h2d");  // the weight's upload, on the legacy stream
        CHECK(parent_name == "stream 0 (legacy default)");
      }
    } else if (type == 4 && track_name == "live bytes") {
      max_live = std::max(max_live, static_cast<std::int64_t>(e.number(30)));
    }
  }
  for (const auto& [track, open] : depth) CHECK(open == 0);
  CHECK(buffer_slices == static_cast<int>(model.buffer_count()));
  CHECK(iteration_slices == 3);
  CHECK(plan_slices == 2);
  CHECK(swap_slices == 2);
  CHECK(launches == 3);
  const auto curve = live_bytes_curve(model);
  CHECK(max_live == static_cast<std::int64_t>(*std::max_element(curve.begin(), curve.end())));
}

// Many buffers sharing a few long stacks (a 381 KB trace once exported to 223 MiB: every buffer
// carried its stack inline). Each stack's text is written once; the file grows with the buffers'
// events, not with their stacks' length.
TEST_CASE("perfetto: call stacks are interned, the file grows with the events", "[export][perfetto]") {
  constexpr std::uint32_t kStacks = 4;
  constexpr std::size_t kNameBytes = 4000;  // one frame's function name
  std::uint64_t named = 0;                  // buffer slices that name their stack
  const auto export_size = [&](std::uint64_t buffers, std::map<std::uint64_t, std::string>* stacks_seen) {
    TraceModel model;
    model.on_string(StringId{0}, "train.py");
    for (std::uint32_t k = 0; k < kStacks; ++k) {
      model.on_string(StringId{k + 1}, std::string(kNameBytes, static_cast<char>('a' + k)));
      const std::array<StackFrame, 1> frames{StackFrame{0, StringId{k + 1}, StringId{0}, k}};
      model.on_stack(StackId{k}, frames);
    }
    std::uint64_t seq = 0;
    const auto header = [&] {
      const EventHeader h{seq, 1'000'000 + 1000 * seq, ThreadId{1}};
      ++seq;
      return h;
    };
    for (std::uint64_t i = 0; i < buffers; ++i) {
      const std::uint64_t address = 0x7000'0000'0000 + (i << 20);
      model.on_alloc(AllocEvent{header(), address, 4096, MemoryKind::device, StreamHandle{0},
                                StackId{static_cast<std::uint32_t>(i % kStacks)}});
      model.on_free(FreeEvent{header(), address, MemoryKind::device, StreamHandle{0}});
    }
    const Iterations iterations = find_iterations(model);
    StringSink sink;
    (void)export_perfetto(ExportSource{model, iterations, "stacks"}, ExportOptions{}, sink);
    if (stacks_seen != nullptr) {
      const Decoded d = decode_trace(sink.str());
      std::map<std::uint64_t, std::string> texts;
      for (const Message& p : d.packets) {
        if (p.bytes.count(12)) {
          const Message interned = sub(p, 12);
          for (auto [it, end] = interned.bytes.equal_range(29); it != end; ++it) {
            const Message text = decode(it->second);
            texts[text.number(1)] = text.bytes.find(2)->second;
          }
        }
        if (!p.bytes.count(11)) continue;
        const Message e = sub(p, 11);
        if (e.number(9) != 1) continue;
        for (auto [it, end] = e.bytes.equal_range(4); it != end; ++it) {
          const Message arg = decode(it->second);
          if (arg.bytes.count(10) && arg.bytes.find(10)->second == "stack") {
            REQUIRE(texts.count(arg.number(17)));  // defined before use
            const std::string& text = texts.at(arg.number(17));
            REQUIRE_FALSE(text.empty());
            (*stacks_seen)[static_cast<std::uint64_t>(text[0] - 'a')] = text;
            ++named;
          }
        }
      }
    }
    return sink.str().size();
  };
  const std::size_t small = export_size(1000, nullptr);
  std::map<std::uint64_t, std::string> seen;
  const std::size_t large = export_size(4000, &seen);
  // Per buffer: its slice, its free and two counter updates — a few hundred bytes, far below
  // one stack's text (the old export added kNameBytes per buffer).
  const double per_buffer = static_cast<double>(large - small) / 3000.0;
  INFO("bytes per buffer " << per_buffer << ", sizes " << small << " and " << large);
  CHECK(per_buffer < 400.0);
  CHECK(large < 4000 * 400 + 2 * kStacks * kNameBytes + 4096);
  // Every buffer still names its stack, and the stacks are all there, whole.
  CHECK(named == 4000);
  REQUIRE(seen.size() == kStacks);
  for (std::uint32_t k = 0; k < kStacks; ++k) {
    CHECK(seen.at(k).rfind(
              std::string(kNameBytes, static_cast<char>('a' + k)) + " (train.py:" + std::to_string(k) + ")", 0) == 0);
  }
}
