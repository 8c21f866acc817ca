// The problem file (problem.hpp): what is written reads back the same, field for field, and the
// simulator gives the same answers on it; malformed files are refused naming the line.
#include <catch2/catch.hpp>

#include <sstream>
#include <stdexcept>

#include "iteration_builder.hpp"
#include "memtool/swapper/problem.hpp"
#include "memtool/swapper/simulate.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::add_persistent;
using memtool::test::ops_of;

namespace {

ms::Problem sample() {
  ms::Problem p;
  p.iteration = ops_of(4, 1000);
  p.iteration.ops[1] = ms::Op{2500, 7, ms::OpKind::copy};
  p.iteration.ops[3] = ms::Op{0, 9, ms::OpKind::memset};
  p.iteration.ops[2].reaches_all = true;
  add_persistent(p.iteration, 5000, {0, 2});
  add_buffer(p.iteration, 1500, 1, 3, {1, 3});
  const std::uint32_t crossing = add_buffer(p.iteration, 700, 3, 1, {0, 3});
  p.iteration.buffers[crossing].swappable = false;
  p.iteration.buffers[crossing].accesses[0].mode = ms::AccessMode::read;
  p.iteration.buffers[crossing].accesses[1].mode = ms::AccessMode::write;
  p.iteration.buffers[crossing].id = 123456789012345;
  p.link.d2h_bytes_per_ns = 0.1 + 0.2;  // a double that decimal printing rounds
  p.link.h2d_bytes_per_ns = 54.321;
  p.link.d2h_latency_ns = 98'765;
  p.link.h2d_latency_ns = 4;
  p.link.duplex_factor = 1.25;
  p.budget_bytes = 6'000;
  return p;
}

std::string written(const ms::Problem& p) {
  std::ostringstream out;
  ms::write_problem(out, p);
  return out.str();
}

ms::Problem read(const std::string& text) {
  std::istringstream in(text);
  return ms::read_problem(in);
}

// `text` with its first `from` replaced by `to` (which must be there).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// The message read_problem refuses `text` with.
std::string refusal(const std::string& text) {
  try {
    (void)read(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a problem file reads back field for field", "[swapper][problem]") {
  const ms::Problem p = sample();
  const std::string text = written(p);
  CHECK(ms::looks_like_problem(text));
  const ms::Problem q = read(text);
  CHECK(q.budget_bytes == p.budget_bytes);
  CHECK(q.link.d2h_bytes_per_ns == p.link.d2h_bytes_per_ns);
  CHECK(q.link.h2d_bytes_per_ns == p.link.h2d_bytes_per_ns);
  CHECK(q.link.d2h_latency_ns == p.link.d2h_latency_ns);
  CHECK(q.link.h2d_latency_ns == p.link.h2d_latency_ns);
  CHECK(q.link.duplex_factor == p.link.duplex_factor);
  REQUIRE(q.iteration.ops.size() == p.iteration.ops.size());
  for (std::size_t i = 0; i < p.iteration.ops.size(); ++i) {
    CHECK(q.iteration.ops[i].duration_ns == p.iteration.ops[i].duration_ns);
    CHECK(q.iteration.ops[i].stream == p.iteration.ops[i].stream);
    CHECK(q.iteration.ops[i].kind == p.iteration.ops[i].kind);
    CHECK(q.iteration.ops[i].reaches_all == p.iteration.ops[i].reaches_all);
  }
  CHECK(text.find("op 1000 0 launch reaches-all\n") != std::string::npos);
  REQUIRE(q.iteration.buffers.size() == p.iteration.buffers.size());
  for (std::size_t b = 0; b < p.iteration.buffers.size(); ++b) {
    const ms::Buffer& x = p.iteration.buffers[b];
    const ms::Buffer& y = q.iteration.buffers[b];
    CHECK(y.id == x.id);
    CHECK(y.size == x.size);
    CHECK(y.persistent == x.persistent);
    CHECK(y.swappable == x.swappable);
    if (!x.persistent) {
      CHECK(y.alloc_before_op == x.alloc_before_op);
      CHECK(y.free_after_op == x.free_after_op);
    }
    REQUIRE(y.accesses.size() == x.accesses.size());
    for (std::size_t a = 0; a < x.accesses.size(); ++a) {
      CHECK(y.accesses[a].op == x.accesses[a].op);
      CHECK(y.accesses[a].mode == x.accesses[a].mode);
    }
  }
  CHECK(written(q) == text);  // and writes back the same bytes
  // Comments and blank lines are skipped.
  CHECK(read("# made by hand\n\n" + text).budget_bytes == p.budget_bytes);
}

TEST_CASE("a problem file written before ops were marked reaches-all reads as none reaching all",
          "[swapper][problem]") {
  std::string text = written(sample());
  const std::string mark = " reaches-all";
  const std::size_t at = text.find(mark);
  REQUIRE(at != std::string::npos);
  text.erase(at, mark.size());  // as files were written before the mark
  const ms::Problem q = read(text);
  REQUIRE(q.iteration.ops.size() == 4);
  for (const ms::Op& op : q.iteration.ops) CHECK_FALSE(op.reaches_all);
  CHECK(q.iteration.ops[1].duration_ns == 2500);
}

TEST_CASE("a malformed problem file is refused naming its line", "[swapper][problem]") {
  const std::string good = written(sample());
  const auto with = [&](const std::string& from, const std::string& to) { return replaced(good, from, to); };
  CHECK_THAT(refusal("budget 5\n"), Catch::Contains("line 1") && Catch::Contains("not a swap problem file"));
  CHECK_THAT(refusal(with("memtool-swap-problem 1", "memtool-swap-problem 2")), Catch::Contains("version 2"));
  CHECK_THAT(refusal(with("budget 6000", "budget -1")), Catch::Contains("line 2") && Catch::Contains("whole number"));
  CHECK_THAT(refusal(with("1.25\n", "0.5\n")), Catch::Contains("line 3") && Catch::Contains("duplex"));
  CHECK_THAT(refusal(with("54.321", "nan")), Catch::Contains("finite"));
  CHECK_THAT(refusal(with("ops 4", "ops 5")), Catch::Contains("expected a 'op' record"));
  CHECK_THAT(refusal(with("op 2500 7 copy", "op 2500 7 kernel")),
             Catch::Contains("line 6") && Catch::Contains("kernel"));
  CHECK_THAT(refusal(with("op 2500 7 copy", "op 2500 7 copy reaches-some")),
             Catch::Contains("line 6") && Catch::Contains("op mark 'reaches-some'"));
  CHECK_THAT(refusal(with("op 2500 7 copy", "op 2500 7 copy reaches-all x")), Catch::Contains("op mark 'x'"));
  CHECK_THAT(refusal(with("op 2500 7 copy", "op 2500 7 copy reaches-all x y z w")), Catch::Contains("takes 7 values"));
  CHECK_THAT(refusal(with("op 2500 7 copy", "op 2500 7 copy host=5")), Catch::Contains("op mark 'host=5'"));
  CHECK_THAT(refusal(with("1:rw 3:rw", "1:rw 3:x")), Catch::Contains("3:x"));
  CHECK_THAT(refusal(with("1:rw 3:rw", "1:rw 3")), Catch::Contains("OP:MODE"));
  CHECK_THAT(refusal(with("1:rw 3:rw", "3:rw 1:rw")), Catch::Contains("not sorted"));
  CHECK_THAT(refusal(with("1500 1 3", "1500 1 4")), Catch::Contains("out of range"));
  CHECK_THAT(refusal(with(" - 1:rw", " q 1:rw")), Catch::Contains("flags 'q'"));
  CHECK_THAT(refusal(with("1500 1 3", "0 1 3")), Catch::Contains("size 0"));
  CHECK_THAT(refusal(good.substr(0, good.find("end\n"))), Catch::Contains("ends before its 'end' record"));
  CHECK_THAT(refusal(good.substr(0, good.find("buffer 1 "))), Catch::Contains("ends before its 'buffer' record"));
  CHECK_THAT(refusal(with("op 1000 0 launch", "op 1152921504606846976 0 launch")), Catch::Contains("out of range"));
  // Issue 39: data after 'end', a buffer id twice, an id no process makes.
  CHECK_THAT(refusal(good + "buffer 9 100 0 1 - 0:r\n"), Catch::Contains("data after the 'end' record"));
  CHECK_THAT(refusal(good + good), Catch::Contains("data after the 'end' record"));
  CHECK(read(good + "# a comment\n\n").budget_bytes == sample().budget_bytes);
  CHECK_THAT(refusal(with("buffer 1 ", "buffer 123456789012345 ")),
             Catch::Contains("buffer id 123456789012345 appears twice"));
  CHECK_THAT(refusal(with("buffer 1 ", "buffer 18446744073709551615 ")),
             Catch::Contains("buffer id") && Catch::Contains("out of range"));
}

TEST_CASE("a host-timed problem file carries each op's host time and synchronisation", "[swapper][problem]") {
  ms::Problem p = sample();
  p.iteration.host_timed = true;
  for (std::size_t i = 0; i < p.iteration.ops.size(); ++i) p.iteration.ops[i].host_ns = 100 * (i + 1);
  p.iteration.ops[2].syncs = true;
  const std::string text = written(p);
  CHECK(text.find("ops 4 host-timed\n") != std::string::npos);
  CHECK(text.find("op 1000 0 launch host=100\n") != std::string::npos);
  CHECK(text.find("op 1000 0 launch reaches-all host=300 syncs\n") != std::string::npos);
  const ms::Problem q = read(text);
  CHECK(q.iteration.host_timed);
  REQUIRE(q.iteration.ops.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(q.iteration.ops[i].host_ns == 100 * (i + 1));
    CHECK(q.iteration.ops[i].syncs == (i == 2));
  }
  CHECK(written(q) == text);
  CHECK_FALSE(read(written(sample())).iteration.host_timed);  // none: as before host times
  const auto with = [&](const std::string& from, const std::string& to) { return replaced(text, from, to); };
  CHECK_THAT(refusal(with(" host=100\n", "\n")), Catch::Contains("a host-timed op takes 'host=NS'"));
  CHECK_THAT(refusal(with("host=100", "host=1x")), Catch::Contains("host time '1x'"));
  CHECK_THAT(refusal(with("host=100", "host=")), Catch::Contains("host time ''"));
  CHECK_THAT(refusal(with("host=100", "host=1152921504606846976")), Catch::Contains("out of range"));
  CHECK_THAT(refusal(with("host=300 syncs", "host=300 waits")), Catch::Contains("op mark 'waits'"));
  CHECK_THAT(refusal(with("ops 4 host-timed", "ops 4 timed")), Catch::Contains("ops mark 'timed'"));
}

TEST_CASE("a problem file carries each op's allocations freed before it (transient bytes)", "[swapper][problem]") {
  ms::Problem p = sample();
  p.iteration.ops[0].transient_bytes = 4096;
  const std::string text = written(p);
  CHECK(text.find("op 1000 0 launch transient=4096\n") != std::string::npos);
  const ms::Problem q = read(text);
  REQUIRE(q.iteration.ops.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) CHECK(q.iteration.ops[i].transient_bytes == (i == 0 ? 4096 : 0));
  CHECK(written(q) == text);
  // After a host-timed op's marks.
  p.iteration.host_timed = true;
  p.iteration.ops[0].syncs = true;
  const std::string timed = written(p);
  CHECK(timed.find("op 1000 0 launch host=0 syncs transient=4096\n") != std::string::npos);
  CHECK(read(timed).iteration.ops[0].transient_bytes == 4096);
  const auto with = [&](const std::string& from, const std::string& to) { return replaced(text, from, to); };
  CHECK_THAT(refusal(with("transient=4096", "transient=4k")), Catch::Contains("transient bytes '4k'"));
  CHECK_THAT(refusal(with("transient=4096", "transient=1125899906842625")), Catch::Contains("out of range"));
  CHECK_THAT(refusal(with("transient=4096", "transient=4096 syncs")), Catch::Contains("op mark 'syncs'"));
}

TEST_CASE("the simulator gives the same answers on a problem read back", "[swapper][problem]") {
  const ms::Problem p = sample();
  const ms::Problem q = read(written(p));
  ms::SimulateOptions held;
  held.hold_budget_bytes = p.budget_bytes;
  const ms::Simulation a = ms::simulate(p.iteration, {}, p.link, held);
  const ms::Simulation b = ms::simulate(q.iteration, {}, q.link, held);
  CHECK(a.time_ns == b.time_ns);
  CHECK(a.peak_bytes == b.peak_bytes);
  CHECK(a.rule_swaps == b.rule_swaps);
}
