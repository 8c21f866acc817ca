// Corrupt input: every violation of the format is an InputError naming the file and the byte
// offset of the offending field. Traces are hand-made from the documented layout, so these
// tests also pin the layout down. Offsets: the header is 16 bytes, so the first record's tag
// is at 16, its (one-byte) length at 17 and its payload from 18.
#include <catch2/catch.hpp>

#include <string>

#include "memtool/trace/input_error.hpp"
#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {

void expect_error(const ByteBuilder& file, std::uint64_t offset, const std::string& words) {
  RecordingVisitor v;
  try {
    read_trace_bytes(file.bytes, "bad.trace", v);
    FAIL("no InputError");
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(e.file() == "bad.trace");
    CHECK(e.offset() == offset);
    CHECK(e.message().find(words) != std::string::npos);
  }
}

// The payload of a valid alloc record: deltas from the zero state.
ByteBuilder alloc_payload(std::uint64_t stack_ref = 0, std::uint8_t kind = 0) {
  ByteBuilder p;
  p.varint(2).varint(2).varint(2).varint(0x2000).varint(64).u8(kind).varint(0).varint(stack_ref);
  return p;
}

ByteBuilder string_def(std::uint64_t id, std::string_view text) {
  ByteBuilder p;
  p.varint(id).varint(text.size()).raw(text);
  return p;
}

}  // namespace

TEST_CASE("bad headers", "[trace_format][corruption]") {
  expect_error(ByteBuilder().header("MEMTOOL-TRACF 1\n"), 0, "bad magic");
  expect_error(ByteBuilder().header("PK\x03\x04"), 0, "bad magic");
  expect_error(ByteBuilder().header("MEMTOOL-TRACE 2\n"), 14, "unsupported trace format version 2");
  expect_error(ByteBuilder().header("MEMTOOL-TRACE 10\n"), 14, "version 10");
  expect_error(ByteBuilder().header("MEMTOOL-TRACE 1x\n"), 15, "bad version line");
  expect_error(ByteBuilder().header("MEMTOOL-TRACE \n"), 14, "no version");
  expect_error(ByteBuilder().header("MEMTOOL-TRACE 1234567890\n"), 23, "bad version line");
  // A proper prefix of a header is a trace cut short, not corruption.
  RecordingVisitor v;
  const TraceReadResult r = read_trace_bytes(ByteBuilder().header("MEMTOOL-TRACE 1").bytes, "p", v);
  CHECK(r.truncated);
  CHECK(r.records == 0);
}

TEST_CASE("bad record framing", "[trace_format][corruption]") {
  // A tag 0 is where a mapped writer stopped (test_mapped_file.cpp) when only zeros, or one
  // unfinished record then zeros, follow; data further on is corruption.
  ByteBuilder zero_then_data;
  zero_then_data.header().u8(0);
  zero_then_data.bytes.resize(zero_then_data.bytes.size() + (16u << 20) + 16);
  zero_then_data.u8(0x10);
  expect_error(zero_then_data, 16, "tag 0");
  ByteBuilder overflow;
  overflow.header().u8(0x10);
  for (int i = 0; i < 10; ++i) overflow.u8(0xff);
  overflow.u8(0x01);
  expect_error(overflow, 17, "overflows");
  expect_error(ByteBuilder().header().u8(0x10).varint((16u << 20) + 1), 17, "exceeds the limit");
  // Bytes after the end record.
  ByteBuilder end;
  end.varint(0).varint(0).varint(0).varint(0);
  ByteBuilder after;
  after.header().record(0x7f, end).u8(0x10);
  expect_error(after, 22, "after the end-of-trace record");
  // A record whose payload is shorter than its fields.
  ByteBuilder short_alloc;
  short_alloc.varint(2).varint(2).varint(2).varint(0x2000);
  expect_error(ByteBuilder().header().record(0x10, short_alloc), 23, "ends inside its size");
  ByteBuilder cut_varint;
  cut_varint.varint(2).u8(0x80);
  expect_error(ByteBuilder().header().record(0x10, cut_varint), 19, "ends inside its timestamp");
}

TEST_CASE("bad definitions and references", "[trace_format][corruption]") {
  expect_error(ByteBuilder().header().record(0x02, string_def(1, "x")), 18, "out of order");
  ByteBuilder two;
  two.header().record(0x02, string_def(0, "a")).record(0x02, string_def(0, "b"));
  expect_error(two, 23, "defined out of order (expected 1)");
  ByteBuilder long_string;
  long_string.varint(0).varint(100).raw("short");
  expect_error(ByteBuilder().header().record(0x02, long_string), 19, "runs past its record");

  // alloc referring to stack 0 before any stack is defined; the stack field is the last byte.
  ByteBuilder alloc = alloc_payload(1);
  expect_error(ByteBuilder().header().record(0x10, alloc), 18 + alloc.size() - 1, "undefined stack id 0");
  // launch referring to string 3 with one string defined: 16 header + 5 string record.
  ByteBuilder launch;
  launch.varint(2).varint(2).varint(2).varint(4).varint(0).varint(0);
  ByteBuilder f;
  f.header().record(0x02, string_def(0, "k")).record(0x12, launch);
  expect_error(f, 21 + 2 + 3, "kernel name refers to undefined string id 3");
  // A stack frame naming an undefined function string.
  ByteBuilder stack;
  stack.varint(0).varint(1).varint(0x10).varint(1).varint(0).varint(7);
  expect_error(ByteBuilder().header().record(0x03, stack), 21, "frame function");
  // Counts a record cannot hold.
  ByteBuilder frames;
  frames.varint(0).varint(1000).raw("12345678");
  expect_error(ByteBuilder().header().record(0x03, frames), 19, "absurd stack frame count 1000");
  ByteBuilder touched;
  touched.varint(2).varint(2).varint(2).varint(0).varint(0).varint(50).raw("1234");
  expect_error(ByteBuilder().header().record(0x12, touched), 23, "absurd touched buffer count 50");
}

TEST_CASE("bad field values", "[trace_format][corruption]") {
  expect_error(ByteBuilder().header().record(0x10, alloc_payload(0, 9)), 24, "unknown memory kind 9");
  ByteBuilder thread;
  thread.varint(2).varint(2).varint(std::uint64_t{1} << 34);  // thread 2^33
  expect_error(ByteBuilder().header().record(0x17, thread.varint(0)), 20, "thread id");
  ByteBuilder sync;
  sync.varint(0).varint(0).varint(0).u8(4).varint(0);
  expect_error(ByteBuilder().header().record(0x16, sync), 21, "unknown sync kind 4");
  ByteBuilder copy;
  copy.varint(0).varint(0).varint(0).varint(0).varint(0).varint(0).u8(0x45).varint(0);
  expect_error(ByteBuilder().header().record(0x14, copy), 24, "unknown flag bits");
  ByteBuilder copy_kind;
  copy_kind.varint(0).varint(0).varint(0).varint(0).varint(0).varint(0).u8(0x07).varint(0);
  expect_error(ByteBuilder().header().record(0x14, copy_kind), 24, "unknown copy kind 7");
  ByteBuilder priority;
  priority.varint(0).varint(0).varint(0).varint(0).varint(0).varint(std::uint64_t{1} << 40);
  expect_error(ByteBuilder().header().record(0x18, priority), 23, "priority");
}

TEST_CASE("end record counts must match the file", "[trace_format][corruption]") {
  ByteBuilder end;
  end.varint(2).varint(1).varint(0).varint(0);  // claims 2 records, file has 1
  ByteBuilder f;
  f.header().record(0x10, alloc_payload()).record(0x7f, end);
  const std::uint64_t end_payload = 16 + 2 + alloc_payload().size() + 2;
  expect_error(f, end_payload, "counts 2 records but the file holds 1");
  ByteBuilder ok_end;
  ok_end.varint(1).varint(1).varint(0).varint(0);
  RecordingVisitor v;
  ByteBuilder good;
  good.header().record(0x10, alloc_payload()).record(0x7f, ok_end);
  CHECK(read_trace_bytes(good.bytes, "good", v).clean_end);
}

TEST_CASE("errors from files name the file", "[trace_format][corruption]") {
  TempPath path("corrupt");
  write_bytes(path.str(), ByteBuilder().header("MEMTOOL-TRACE 7\n").bytes);
  RecordingVisitor v;
  try {
    read_trace(path.str(), v);
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == path.str());
    CHECK(e.offset() == 14);
    CHECK(std::string(e.what()).find(path.str()) != std::string::npos);
  }
}
