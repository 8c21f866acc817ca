// PickleWriter (see pickle_writer.hpp); the opcodes are memtool/trace/detail/pickle_ops.hpp's.
#include "pickle_writer.hpp"

#include <stdexcept>

#include "memtool/trace/detail/pickle_ops.hpp"

namespace memtool::trace::detail {
namespace {

constexpr std::uint32_t kBatch = 1000;  // items per APPENDS / pairs per SETITEMS, as CPython

}  // namespace

PickleWriter::PickleWriter(ByteSink& out, int protocol) : out_(out), protocol_(protocol) {
  if (protocol < 2 || protocol > 4) throw std::invalid_argument("pickle protocol must be 2, 3 or 4");
  op(PROTO);
  op(static_cast<std::uint8_t>(protocol));
}

void PickleWriter::op(std::uint8_t code) { buffer_.push_back(static_cast<char>(code)); }

void PickleWriter::le(std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) buffer_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void PickleWriter::flush_if_large() {
  if (buffer_.size() >= (std::size_t{1} << 16)) {
    out_.write(buffer_);
    buffer_.clear();
  }
}

// A value is complete: count it in its container, and close a batch when it is full (a dict's
// batch is counted in values, two per pair, and only ever closed after a value).
void PickleWriter::value_done() {
  if (open_.empty()) return;
  Open& top = open_.back();
  ++top.pending;
  if (top.kind == Container::list && top.pending == kBatch) {
    op(APPENDS);
    op(MARK);
    top.pending = 0;
  } else if (top.kind == Container::dict && top.pending == 2 * kBatch) {
    op(SETITEMS);
    op(MARK);
    top.pending = 0;
  }
  flush_if_large();
}

void PickleWriter::begin_dict() {
  op(EMPTY_DICT);
  op(MARK);
  open_.push_back({Container::dict});
}

void PickleWriter::end_dict() {
  if (open_.empty() || open_.back().kind != Container::dict || open_.back().pending % 2 != 0)
    throw std::logic_error("PickleWriter: end_dict without a complete dict");
  op(SETITEMS);
  open_.pop_back();
  value_done();
}

void PickleWriter::begin_list() {
  op(EMPTY_LIST);
  op(MARK);
  open_.push_back({Container::list});
}

void PickleWriter::end_list() {
  if (open_.empty() || open_.back().kind != Container::list) throw std::logic_error("PickleWriter: end_list");
  op(APPENDS);
  open_.pop_back();
  value_done();
}

std::uint32_t PickleWriter::end_list_memoized() {
  if (open_.empty() || open_.back().kind != Container::list) throw std::logic_error("PickleWriter: end_list");
  op(APPENDS);
  open_.pop_back();
  const std::uint32_t index = put();  // before value_done, which may close the parent's batch
  value_done();
  return index;
}

void PickleWriter::begin_tuple() {
  op(MARK);
  open_.push_back({Container::tuple});
}

void PickleWriter::end_tuple() {
  if (open_.empty() || open_.back().kind != Container::tuple) throw std::logic_error("PickleWriter: end_tuple");
  op(TUPLE);
  open_.pop_back();
  value_done();
}

void PickleWriter::integer(std::uint64_t value) {
  if (value < 0x100) {
    op(BININT1);
    le(value, 1);
  } else if (value < 0x10000) {
    op(BININT2);
    le(value, 2);
  } else if (value < 0x80000000ULL) {
    op(BININT);
    le(value, 4);
  } else {
    // LONG1: little-endian two's complement, as few bytes as keep the sign bit clear.
    int bytes = 0;
    for (std::uint64_t v = value; v != 0; v >>= 8) ++bytes;
    const bool sign_bit = ((value >> (8 * (bytes - 1))) & 0x80) != 0;
    op(LONG1);
    op(static_cast<std::uint8_t>(bytes + (sign_bit ? 1 : 0)));
    le(value, bytes);
    if (sign_bit) op(0);
  }
  value_done();
}

void PickleWriter::string_op(std::string_view value) {
  if (protocol_ >= 4 && value.size() < 0x100) {
    op(SHORT_BINUNICODE);
    le(value.size(), 1);
  } else {
    op(BINUNICODE);
    le(value.size(), 4);
  }
  buffer_.append(value);
}

void PickleWriter::text(std::string_view value) {
  string_op(value);
  value_done();
}

std::uint32_t PickleWriter::text_memoized(std::string_view value) {
  string_op(value);
  const std::uint32_t index = put();
  value_done();
  return index;
}

void PickleWriter::boolean(bool value) {
  op(value ? NEWTRUE : NEWFALSE);
  value_done();
}

void PickleWriter::none() {
  op(NONE);
  value_done();
}

std::uint32_t PickleWriter::put() {
  const std::uint32_t index = next_memo_++;
  if (index < 0x100) {
    op(BINPUT);
    le(index, 1);
  } else {
    op(LONG_BINPUT);
    le(index, 4);
  }
  return index;
}

void PickleWriter::get(std::uint32_t memo_index) {
  if (memo_index < 0x100) {
    op(BINGET);
    le(memo_index, 1);
  } else {
    op(LONG_BINGET);
    le(memo_index, 4);
  }
  value_done();
}

void PickleWriter::finish() {
  if (!open_.empty()) throw std::logic_error("PickleWriter: finish with open containers");
  op(STOP);
  out_.write(buffer_);
  buffer_.clear();
}

}  // namespace memtool::trace::detail
