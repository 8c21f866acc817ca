// A minimal, safe unpickler for the plain data PyTorch memory snapshots hold.
//
// It understands the opcodes Python's pickler emits for dicts, lists, tuples, sets, ints of
// every width, floats, str, bytes, None and bools at protocols 2 to 5, plus the memo. Anything
// that would construct or call a Python object (GLOBAL, STACK_GLOBAL, REDUCE, NEWOBJ, BUILD,
// OBJ, extension codes, persistent ids) becomes an opaque placeholder value: nothing is ever
// imported or executed. No recursion; every length is checked against the bytes left; every
// structure grows by at most one element per input byte, and what the document takes is
// charged to a DecodeBudget. Anything wrong throws InputError with the byte offset of the
// offending opcode.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "value_tree.hpp"

namespace memtool::trace::detail {

struct PickleDocument {
  ValueTree tree;
  ValueRef root = 0;
  int protocol = 0;  // from the PROTO opcode; 0 or 1 when there was none
};

// Decodes one pickle that must span all of `bytes` (nothing may follow its STOP).
// `name` is the file name used in errors.
// `progress`, when set, is called every few MiB with (bytes decoded, total bytes).
using ProgressCallback = std::function<void(std::uint64_t, std::uint64_t)>;
// `budget` is charged for the tree (and goes on to the schema walk); without one, the input's
// own budget is used.
[[nodiscard]] PickleDocument read_pickle(std::string_view bytes, const std::string& name, DecodeBudget& budget,
                                         const ProgressCallback& progress = {});
[[nodiscard]] PickleDocument read_pickle(std::string_view bytes, const std::string& name,
                                         const ProgressCallback& progress = {});

}  // namespace memtool::trace::detail
