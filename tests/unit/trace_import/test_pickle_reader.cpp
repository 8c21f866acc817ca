// The unpickler on its own: every opcode family, exact integer decoding, memo sharing,
// opaque objects (never executed) and errors with the offending opcode's offset.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "memtool/trace/input_error.hpp"
#include "pickle_reader.hpp"
#include "test_support.hpp"

using memtool::trace::InputError;
using memtool::trace::detail::PickleDocument;
using memtool::trace::detail::read_pickle;
using memtool::trace::detail::ValueKind;
using memtool::trace::testing::PickleBuilder;

namespace {

PickleDocument decode(const PickleBuilder& builder) { return read_pickle(builder.bytes(), "test.pickle"); }

// The error a bad pickle gives; fails the test when there is none.
InputError error_of(const std::string& bytes) {
  try {
    (void)read_pickle(bytes, "bad.pickle");
  } catch (const InputError& error) {
    return error;
  }
  FAIL("expected an InputError");
  return InputError("", 0, "");
}

// A pickle holding a single LONG1 of the given little-endian two's complement bytes.
PickleDocument long1(std::string_view bytes) {
  PickleBuilder b;
  b.proto(2).op(std::uint8_t{0x8a}).le(bytes.size(), 1).raw(bytes).stop();
  return decode(b);
}

}  // namespace

TEST_CASE("pickle: small integers of every width", "[pickle]") {
  PickleBuilder b;
  b.proto(2)
      .op('(')
      .int1(255)
      .op('M')
      .le(65535, 2)
      .int4(-1)
      .int4(std::numeric_limits<std::int32_t>::min())
      .int4(2147483647)
      .op('l')
      .stop();
  const auto doc = decode(b);
  REQUIRE(doc.protocol == 2);
  REQUIRE(doc.tree.kind(doc.root) == ValueKind::list);
  const auto items = doc.tree.items(doc.root);
  REQUIRE(items.size() == 5);
  CHECK(doc.tree.as_unsigned(items[0]) == 255U);
  CHECK(doc.tree.as_unsigned(items[1]) == 65535U);
  CHECK(doc.tree.as_signed(items[2]) == -1);
  CHECK_FALSE(doc.tree.as_unsigned(items[2]).has_value());
  CHECK(doc.tree.as_signed(items[3]) == std::numeric_limits<std::int32_t>::min());
  CHECK(doc.tree.as_signed(items[4]) == 2147483647);
}

TEST_CASE("pickle: LONG1 and LONG4 decode two's complement exactly", "[pickle]") {
  using namespace std::string_view_literals;
  const auto zero = long1(""sv);
  CHECK(zero.tree.as_unsigned(zero.root) == 0U);
  const auto minus_one = long1("\xff"sv);
  CHECK(minus_one.tree.as_signed(minus_one.root) == -1);
  const auto address = long1("\x00\x40\x5b\x17\x26\x7f\x00\x00"sv);  // 0x7f26175b4000
  CHECK(address.tree.as_unsigned(address.root) == 0x7f26175b4000ULL);
  const auto max_u64 = long1("\xff\xff\xff\xff\xff\xff\xff\xff\x00"sv);
  CHECK(max_u64.tree.as_unsigned(max_u64.root) == std::numeric_limits<std::uint64_t>::max());
  const auto min_i64 = long1("\x00\x00\x00\x00\x00\x00\x00\x80"sv);
  CHECK(min_i64.tree.as_signed(min_i64.root) == std::numeric_limits<std::int64_t>::min());
  const auto below_i64 = long1("\xff\xff\xff\xff\xff\xff\xff\x7f\xff"sv);  // -2^63 - 1
  CHECK(below_i64.tree.kind(below_i64.root) == ValueKind::integer);
  CHECK(below_i64.tree.is_negative_integer(below_i64.root));
  CHECK_FALSE(below_i64.tree.as_signed(below_i64.root).has_value());
  const auto two_pow_64 = long1("\x00\x00\x00\x00\x00\x00\x00\x00\x01"sv);
  CHECK(two_pow_64.tree.kind(two_pow_64.root) == ValueKind::big_integer);
  const auto minus_two_pow_64 = long1("\x00\x00\x00\x00\x00\x00\x00\x00\xff"sv);
  CHECK(minus_two_pow_64.tree.kind(minus_two_pow_64.root) == ValueKind::big_integer);
  // Redundant sign bytes are fine: 5 written in 12 bytes.
  const auto padded = long1("\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"sv);
  CHECK(padded.tree.as_unsigned(padded.root) == 5U);

  PickleBuilder b;
  b.proto(2).op(std::uint8_t{0x8b}).le(3, 4).raw("\x01\x02\x03"sv).stop();
  const auto long4 = decode(b);
  CHECK(long4.tree.as_unsigned(long4.root) == 0x030201U);

  PickleBuilder negative_length;
  negative_length.proto(2).op(std::uint8_t{0x8b}).le(0xFFFFFFFF, 4).stop();
  CHECK(error_of(negative_length.bytes()).offset() == 2);
  PickleBuilder huge_length;
  huge_length.proto(2).op(std::uint8_t{0x8b}).le(0x7FFFFFFF, 4).raw("\x01").stop();
  const auto huge = error_of(huge_length.bytes());
  CHECK(huge.offset() == 2);
  CHECK_THAT(huge.message(), Catch::Contains("exceeds"));
}

TEST_CASE("pickle: floats, None, bools", "[pickle]") {
  using namespace std::string_view_literals;
  PickleBuilder b;
  b.proto(2)
      .op('(')
      .op('G')
      .raw("\x3f\xf8\x00\x00\x00\x00\x00\x00"sv)  // 1.5, big-endian
      .op('N')
      .op(std::uint8_t{0x88})
      .op(std::uint8_t{0x89})
      .op('t')
      .stop();
  const auto doc = decode(b);
  REQUIRE(doc.tree.kind(doc.root) == ValueKind::tuple);
  const auto items = doc.tree.items(doc.root);
  REQUIRE(items.size() == 4);
  CHECK(doc.tree.as_float(items[0]) == 1.5);
  CHECK(doc.tree.kind(items[1]) == ValueKind::none);
  CHECK(doc.tree.as_bool(items[2]) == true);
  CHECK(doc.tree.as_bool(items[3]) == false);
}

TEST_CASE("pickle: strings and bytes of every width", "[pickle]") {
  using namespace std::string_view_literals;
  PickleBuilder b;
  b.proto(4)
      .op('(')
      .short_text("a")
      .text("b\xc3\xa9")
      .op(std::uint8_t{0x8d})
      .le(2, 8)
      .raw("cd")
      .op('C')
      .le(1, 1)
      .raw("\xff"sv)
      .op('B')
      .le(2, 4)
      .raw("\x00\x01"sv)
      .op(std::uint8_t{0x8e})
      .le(0, 8)
      .op('U')
      .le(1, 1)
      .raw("s")
      .op('T')
      .le(1, 4)
      .raw("t")
      .op(std::uint8_t{0x96})
      .le(1, 8)
      .raw("z")
      .op('l')
      .stop();
  const auto doc = decode(b);
  const auto items = doc.tree.items(doc.root);
  REQUIRE(items.size() == 9);
  CHECK(doc.tree.text(items[0]) == "a");
  CHECK(doc.tree.text(items[1]) == "b\xc3\xa9");
  CHECK(doc.tree.text(items[2]) == "cd");
  CHECK(doc.tree.kind(items[3]) == ValueKind::bytes);
  CHECK(doc.tree.text(items[3]) == "\xff"sv);
  CHECK(doc.tree.text(items[4]) == "\x00\x01"sv);
  CHECK(doc.tree.text(items[5]).empty());
  CHECK(doc.tree.kind(items[6]) == ValueKind::bytes);
  CHECK(doc.tree.kind(items[8]) == ValueKind::bytes);

  PickleBuilder bad_utf8;
  bad_utf8.proto(2).int1(1).op('X').le(2, 4).raw("\xc3\x28"sv).stop();
  const auto error = error_of(bad_utf8.bytes());
  CHECK(error.offset() == 4);
  CHECK_THAT(error.message(), Catch::Contains("UTF-8"));

  PickleBuilder surrogate;  // CESU-style encoded surrogate: not valid UTF-8
  surrogate.proto(2).short_text("\xed\xa0\x80").stop();
  CHECK(error_of(surrogate.bytes()).offset() == 2);

  PickleBuilder long_length;
  long_length.proto(4).op(std::uint8_t{0x8d}).le(std::numeric_limits<std::uint64_t>::max(), 8).stop();
  CHECK(error_of(long_length.bytes()).offset() == 2);
}

TEST_CASE("pickle: dicts, lists, tuples, sets and their builders", "[pickle]") {
  PickleBuilder b;
  b.proto(4)
      .op('}')
      .op('(')
      .short_text("k1")
      .int1(1)
      .short_text("k2")
      .op(']')
      .op('(')
      .int1(7)
      .int1(8)
      .op('e')
      .int1(9)
      .op('a')
      .short_text("k3")
      .int1(1)
      .int1(2)
      .op(std::uint8_t{0x86})
      .op('u')
      .short_text("k4")
      .op(std::uint8_t{0x8f})
      .op('(')
      .int1(3)
      .op(std::uint8_t{0x90})
      .op('s')
      .short_text("k5")
      .op('(')
      .int1(4)
      .op(std::uint8_t{0x91})
      .op('s')
      .short_text("k6")
      .op('(')
      .short_text("x")
      .int1(5)
      .op('d')
      .op('s')
      .stop();
  const auto doc = decode(b);
  REQUIRE(doc.tree.kind(doc.root) == ValueKind::dict);
  const auto pairs = doc.tree.items(doc.root);
  REQUIRE(pairs.size() == 12);
  CHECK(doc.tree.text(pairs[0]) == "k1");
  const auto list = doc.tree.items(pairs[3]);
  REQUIRE(list.size() == 3);
  CHECK(doc.tree.as_unsigned(list[2]) == 9U);
  CHECK(doc.tree.kind(pairs[5]) == ValueKind::tuple);
  CHECK(doc.tree.items(pairs[5]).size() == 2);
  CHECK(doc.tree.kind(pairs[7]) == ValueKind::set);
  CHECK(doc.tree.items(pairs[7]).size() == 1);
  CHECK(doc.tree.kind(pairs[9]) == ValueKind::set);
  CHECK(doc.tree.kind(pairs[11]) == ValueKind::dict);
  CHECK(doc.tree.items(pairs[11]).size() == 2);
}

TEST_CASE("pickle: MARK, POP, POP_MARK, DUP and TUPLE1..3 follow CPython", "[pickle]") {
  PickleBuilder b;
  b.proto(2)
      .op('(')
      .int1(1)
      .op('(')
      .int1(2)
      .int1(3)
      .op('1')  // POP_MARK drops 2, 3
      .int1(4)
      .op('0')  // POP drops 4
      .int1(5)
      .op('2')  // DUP: 5, 5
      .int1(6)
      .op(std::uint8_t{0x85})
      .op('l')
      .stop();  // TUPLE1 (6,)
  const auto doc = decode(b);
  const auto items = doc.tree.items(doc.root);
  REQUIRE(items.size() == 4);
  CHECK(doc.tree.as_unsigned(items[0]) == 1U);
  CHECK(doc.tree.as_unsigned(items[1]) == 5U);
  CHECK(items[1] == items[2]);  // DUP shares the value
  CHECK(doc.tree.kind(items[3]) == ValueKind::tuple);

  // POP with nothing above the mark discards the mark (CPython's behaviour).
  PickleBuilder pop_mark;
  pop_mark.proto(2).op(']').op('(').op('0').int1(1).op('a').stop();
  const auto popped = decode(pop_mark);
  CHECK(popped.tree.items(popped.root).size() == 1);
}

TEST_CASE("pickle: the memo shares values, mutation included, and allows cycles", "[pickle]") {
  PickleBuilder b;
  b.proto(4)
      .op('(')
      .op(']')
      .op(std::uint8_t{0x94})  // memo[0] = []
      .op('h')
      .le(0, 1)
      .int1(7)
      .op('a')  // memo[0].append(7) through the memo
      .op('q')
      .le(10, 1)               // memo[10] = same list
      .op(std::uint8_t{0x94})  // MEMOIZE uses len(memo) == 2
      .op('j')
      .le(2, 4)  // LONG_BINGET
      .int1(9)
      .op('r')
      .le(70000, 4)
      .op('0')  // LONG_BINPUT beyond 16 bits
      .op('j')
      .le(70000, 4)
      .op('t')
      .stop();
  const auto doc = decode(b);
  const auto items = doc.tree.items(doc.root);
  REQUIRE(items.size() == 4);
  CHECK(items[0] == items[1]);
  CHECK(items[0] == items[2]);
  CHECK(doc.tree.as_unsigned(items[3]) == 9U);
  REQUIRE(doc.tree.items(items[0]).size() == 1);

  PickleBuilder cycle;  // l = []; l.append(l)
  cycle.proto(4).op(']').op(std::uint8_t{0x94}).op('h').le(0, 1).op('a').stop();
  const auto cyclic = decode(cycle);
  REQUIRE(cyclic.tree.items(cyclic.root).size() == 1);
  CHECK(cyclic.tree.items(cyclic.root)[0] == cyclic.root);

  PickleBuilder missing;
  missing.proto(2).op('j').le(5, 4).stop();
  const auto error = error_of(missing.bytes());
  CHECK(error.offset() == 2);
  CHECK_THAT(error.message(), Catch::Contains("memo entry 5"));
}

TEST_CASE("pickle: object construction becomes opaque and nothing runs", "[pickle]") {
  PickleBuilder b;
  b.proto(2)
      .op('(')
      .op('c')
      .raw("os\nsystem\n")
      .text("touch /tmp/pwned")
      .op(std::uint8_t{0x85})
      .op('R')
      .short_text("builtins")
      .short_text("set")
      .op(std::uint8_t{0x93})
      .op(']')
      .op(std::uint8_t{0x85})
      .op('R')
      .op('c')
      .raw("collections\nOrderedDict\n")
      .op(')')
      .op(std::uint8_t{0x81})
      .op('}')
      .op('b')
      .op('c')
      .raw("m\nC\n")
      .op(')')
      .op('}')
      .op(std::uint8_t{0x92})
      .op(std::uint8_t{0x82})
      .le(1, 1)
      .op('(')
      .op('c')
      .raw("m\nK\n")
      .op('o')
      .int1(1)
      .op('Q')
      .op('l')
      .stop();
  const auto doc = decode(b);
  const auto items = doc.tree.items(doc.root);
  REQUIRE(items.size() == 7);
  for (auto item : items) CHECK(doc.tree.kind(item) == ValueKind::opaque);
  CHECK(doc.tree.text(items[0]) == "os.system(...)");
  CHECK(doc.tree.text(items[1]) == "builtins.set(...)");
  CHECK(doc.tree.text(items[2]) == "collections.OrderedDict.__new__(...)");

  // SETITEMS / APPENDS on an opaque object (an OrderedDict's items) are accepted and dropped.
  PickleBuilder ordered;
  ordered.proto(2)
      .op('c')
      .raw("collections\nOrderedDict\n")
      .op(')')
      .op('R')
      .op('(')
      .short_text("a")
      .int1(1)
      .op('u')
      .op('(')
      .int1(2)
      .op('e')
      .stop();
  const auto od = decode(ordered);
  CHECK(od.tree.kind(od.root) == ValueKind::opaque);
}

TEST_CASE("pickle: malformed streams name the opcode's offset", "[pickle]") {
  using namespace std::string_literals;
  CHECK(error_of("").offset() == 0);
  CHECK_THAT(error_of("").message(), Catch::Contains("STOP"));
  CHECK(error_of("\x80\x02"s.substr(0, 2)).offset() == 2);  // no STOP
  CHECK(error_of("\x80\x06N."s).offset() == 0);             // protocol 6
  CHECK(error_of("\x80\x02N.."s).offset() == 3);            // trailing byte
  CHECK(error_of("\x80\x02\xffN."s).offset() == 2);         // unknown opcode
  CHECK(error_of("\x80\x02I1\n."s).offset() == 2);          // protocol-0 INT
  CHECK(error_of("\x80\x02."s).offset() == 2);              // STOP, empty stack
  CHECK(error_of("\x80\x02K\x01"
                 "a."s)
            .offset() == 4);  // APPEND without list
  CHECK(error_of("\x80\x02}K\x01"
                 "a."s)
            .offset() == 5);                                // APPEND on a dict
  CHECK(error_of("\x80\x02]K\x01K\x02s."s).offset() == 7);  // SETITEM on a list
  CHECK(error_of("\x80\x02(K\x01"
                 "d."s)
            .offset() == 5);  // DICT, odd items
  CHECK(error_of("\x80\x02K\x01"
                 "e."s)
            .offset() == 4);  // APPENDS, no MARK
  CHECK(error_of("\x80\x02(K\x01"
                 "a."s)
            .offset() == 5);                                                         // APPEND across MARK
  CHECK(error_of("\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00N."s).offset() == 2);  // FRAME too long
  CHECK(error_of("\x80\x05\x97."s).offset() == 2);                                   // NEXT_BUFFER
  CHECK(error_of("\x80\x02"
                 "cos\nsys"s)
            .offset() == 2);                                  // GLOBAL, no newline
  CHECK(error_of("\x80\x04K\x01K\x02\x93."s).offset() == 6);  // STACK_GLOBAL of ints
}

TEST_CASE("pickle: deep nesting builds without recursion", "[pickle]") {
  constexpr int kDepth = 200000;
  PickleBuilder b;
  b.proto(2);
  for (int i = 0; i < kDepth; ++i) b.op(']');
  for (int i = 1; i < kDepth; ++i) b.op('a');
  b.stop();
  const auto doc = decode(b);
  CHECK(doc.tree.kind(doc.root) == ValueKind::list);
  CHECK(doc.tree.size() == kDepth);
}

TEST_CASE("pickle: Python's own output decodes at protocols 2, 3 and 4", "[pickle]") {
  using memtool::trace::testing::fixture;
  using memtool::trace::testing::read_bytes;
  for (int protocol : {2, 3, 4}) {
    const std::string bytes = read_bytes(fixture(fmt::format("snapshots/small.p{}.pickle", protocol)));
    const auto doc = read_pickle(bytes, "small");
    CHECK(doc.protocol == protocol);
    REQUIRE(doc.tree.kind(doc.root) == ValueKind::dict);
    const auto pairs = doc.tree.items(doc.root);
    // segments, device_traces, allocator_settings, external_annotations, python_extras
    CHECK(pairs.size() == 10);
  }
}
