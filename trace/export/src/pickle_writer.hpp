// A streaming pickle writer for plain data (dicts, lists, tuples, ints, str, bool, None), in
// the opcodes both CPython's unpickler and PyTorch's web viewer (MemoryViz.js, whose unpickler
// knows protocols 2 to 4 and a fixed subset of opcodes) read: PROTO, EMPTY_DICT/EMPTY_LIST +
// MARK + SETITEMS/APPENDS in batches of 1000 (as CPython writes them), MARK + TUPLE,
// BININT1/BININT2/BININT/LONG1, SHORT_BINUNICODE (protocol 4) or BINUNICODE, NEWTRUE/NEWFALSE,
// NONE, BINPUT/LONG_BINPUT and BINGET/LONG_BINGET for shared values. No FRAME: framing is
// optional, and leaving it out lets the document stream without knowing its size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/trace/export.hpp"

namespace memtool::trace::detail {

class PickleWriter {
 public:
  PickleWriter(ByteSink& out, int protocol);  // protocol 2, 3 or 4 (std::invalid_argument else)
  PickleWriter(const PickleWriter&) = delete;
  PickleWriter& operator=(const PickleWriter&) = delete;

  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  // Ends the list and memoises it: get() with the returned index pushes the same list again
  // (the unpickler shares one object, as PyTorch shares frame lists between entries).
  std::uint32_t end_list_memoized();
  void begin_tuple();
  void end_tuple();
  void integer(std::uint64_t value);
  void text(std::string_view value);  // must be UTF-8 (see utf8_clean in text.hpp)
  // The same, memoised: repeated keys and actions cost two bytes each after the first.
  std::uint32_t text_memoized(std::string_view value);
  void boolean(bool value);
  void none();
  void get(std::uint32_t memo_index);
  // STOP, and hands everything to the sink. Every container must be closed.
  void finish();

 private:
  enum class Container : std::uint8_t { dict, list, tuple };
  struct Open {
    Container kind;
    std::uint32_t pending = 0;  // values since the last MARK
  };
  void op(std::uint8_t code);
  void le(std::uint64_t value, int bytes);
  void value_done();
  std::uint32_t put();
  void string_op(std::string_view value);
  void flush_if_large();

  ByteSink& out_;
  int protocol_;
  std::string buffer_;
  std::vector<Open> open_;
  std::uint32_t next_memo_ = 0;
};

}  // namespace memtool::trace::detail
