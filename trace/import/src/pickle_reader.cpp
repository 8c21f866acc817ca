// The pickle virtual machine, reduced to building plain data (see pickle_reader.hpp).
//
// Mirrors CPython's Unpickler: a value stack, a stack of MARK positions (items above the last
// mark are all an opcode may touch) and a memo of shared values. Containers are shared by
// reference, so a list mutated after it was memoised is seen mutated through every reference,
// exactly as in Python.
#include "pickle_reader.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "memtool/trace/detail/pickle_ops.hpp"
#include "memtool/trace/input_error.hpp"
#include "utf8.hpp"

namespace memtool::trace::detail {
namespace {

constexpr int kHighestProtocol = 5;
// Descriptions of opaque objects are for messages only; capping them keeps a memoised long
// GLOBAL name reduced many times from growing the text pool quadratically.
constexpr std::size_t kMaxOpaqueDescription = 120;

class PickleMachine {
 public:
  PickleMachine(std::string_view bytes, const std::string& name, DecodeBudget& budget, const ProgressCallback& progress)
      : in_(bytes), name_(name), progress_(progress), budget_(budget), document_{ValueTree(&budget)} {}

  PickleDocument run() {
    try {
      return run_opcodes();
    } catch (const std::length_error&) {
      fail("pickle holds more values than we can index");
    } catch (const DecodeBudget::Exceeded&) {
      fail(budget_.message());
    }
  }

 private:
  PickleDocument run_opcodes() {
    while (true) {
      op_offset_ = pos_;
      if (pos_ >= next_progress_ && progress_) {
        progress_(pos_, in_.size());
        next_progress_ = pos_ + kProgressStep;
      }
      if (pos_ >= in_.size()) fail("pickle ends before its STOP opcode");
      const auto op = static_cast<std::uint8_t>(in_[pos_++]);
      if (op == STOP) {
        document_.root = pop("STOP");
        if (pos_ != in_.size()) {
          fail(fmt::format("{} trailing bytes after the STOP opcode", in_.size() - pos_));
        }
        tree().finish();
        return std::move(document_);
      }
      step(op);
    }
  }

  ValueTree& tree() { return document_.tree; }

  [[noreturn]] void fail(const std::string& message) const { throw InputError(name_, op_offset_, message); }

  // --- reading operands -------------------------------------------------------------------

  std::string_view take(std::uint64_t count, const char* what) {
    if (count > in_.size() - pos_) {
      fail(fmt::format("{} needs {} bytes but only {} are left", what, count, in_.size() - pos_));
    }
    std::string_view bytes = in_.substr(pos_, static_cast<std::size_t>(count));
    pos_ += static_cast<std::size_t>(count);
    return bytes;
  }

  std::uint64_t read_le(std::size_t width, const char* what) {
    std::string_view bytes = take(width, what);
    std::uint64_t value = 0;
    for (std::size_t i = width; i-- > 0;) {
      value = (value << 8U) | static_cast<std::uint8_t>(bytes[i]);
    }
    return value;
  }

  // A text line ending in '\n' (GLOBAL's module and name).
  std::string_view read_line(const char* what) {
    const std::size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) fail(fmt::format("{}: no end of line before the end of the pickle", what));
    std::string_view line = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    if (!is_valid_utf8(line)) fail(fmt::format("{}: name is not valid UTF-8", what));
    return line;
  }

  std::uint64_t length_operand(std::size_t width, const char* what) {
    const std::uint64_t length = read_le(width, what);
    if (length > in_.size() - pos_) {
      fail(fmt::format("{} length {} exceeds the {} bytes left", what, length, in_.size() - pos_));
    }
    return length;
  }

  // --- the stack --------------------------------------------------------------------------

  [[nodiscard]] std::size_t frame_base() const { return marks_.empty() ? 0 : marks_.back(); }

  // The stack and the marks are charged at their high-water marks.
  void push(ValueRef ref) {
    if (stack_.size() == stack_charged_) {
      budget_.charge(sizeof(ValueRef));
      ++stack_charged_;
    }
    stack_.push_back(ref);
  }
  void push_mark() {
    if (marks_.size() == marks_charged_) {
      budget_.charge(sizeof(std::size_t));
      ++marks_charged_;
    }
    marks_.push_back(stack_.size());
  }

  ValueRef pop(const char* what) {
    if (stack_.size() <= frame_base()) fail(fmt::format("{}: stack underflow", what));
    const ValueRef ref = stack_.back();
    stack_.pop_back();
    return ref;
  }

  ValueRef top(const char* what) {
    if (stack_.size() <= frame_base()) fail(fmt::format("{}: stack underflow", what));
    return stack_.back();
  }

  // The items above the last MARK, which is dropped. They stay on the stack (no copy) until
  // drop(): the opcode uses them first.
  struct Marked {
    std::size_t base;
    std::span<const ValueRef> items;
  };
  Marked pop_mark(const char* what) {
    if (marks_.empty()) fail(fmt::format("{}: no MARK on the stack", what));
    const std::size_t base = marks_.back();
    marks_.pop_back();
    return {base, std::span<const ValueRef>(stack_).subspan(base)};
  }
  void drop(const Marked& marked) { stack_.resize(marked.base); }

  // The value just below a MARK's items (what APPENDS, SETITEMS and ADDITEMS add to).
  ValueRef below(const Marked& marked, const char* what) const {
    if (marked.base <= frame_base()) fail(fmt::format("{}: stack underflow", what));
    return stack_[marked.base - 1];
  }

  // A container made of a MARK's items replaces them on the stack.
  void push_marked_container(ValueKind kind, const char* what) {
    const Marked marked = pop_mark(what);
    if (kind == ValueKind::dict && marked.items.size() % 2 != 0) {
      fail(fmt::format("{}: odd number of items for key/value pairs", what));
    }
    const ValueRef ref = make_container(kind, marked.items);
    drop(marked);
    push(ref);
  }

  // --- builders -----------------------------------------------------------------------------

  ValueRef make_container(ValueKind kind, std::span<const ValueRef> items) {
    const ValueRef ref = tree().add_container(op_offset_, kind);
    tree().append(ref, items);
    return ref;
  }

  ValueRef make_opaque(std::string_view what) {
    return tree().add_opaque(op_offset_, what.substr(0, kMaxOpaqueDescription));
  }

  std::string describe_callable(ValueRef callable) {
    if (tree().kind(callable) == ValueKind::opaque) return std::string(tree().text(callable));
    return fmt::format("<{}>", to_string(tree().kind(callable)));
  }

  void push_text(std::uint64_t length, const char* what) {
    std::string_view text = take(length, what);
    if (!is_valid_utf8(text)) fail(fmt::format("{}: string is not valid UTF-8", what));
    push(tree().add_text(op_offset_, text));
  }

  void push_bytes(std::uint64_t length, const char* what) { push(tree().add_bytes(op_offset_, take(length, what))); }

  // Little-endian two's complement of `bytes.size()` bytes (LONG1 / LONG4).
  void push_long(std::string_view bytes) {
    if (bytes.empty()) {
      push(tree().add_integer(op_offset_, false, 0));
      return;
    }
    const bool negative = (static_cast<std::uint8_t>(bytes.back()) & 0x80U) != 0;
    const std::uint8_t fill = negative ? 0xFF : 0x00;
    // Bytes beyond the eighth must be pure sign extension for the value to fit in 64 bits.
    for (std::size_t i = 8; i < bytes.size(); ++i) {
      if (static_cast<std::uint8_t>(bytes[i]) != fill) {
        push(tree().add_big_integer(op_offset_));
        return;
      }
    }
    std::uint64_t low = negative ? ~std::uint64_t{0} : 0;
    const std::size_t width = bytes.size() < 8 ? bytes.size() : 8;
    for (std::size_t i = 0; i < width; ++i) {
      const std::uint64_t byte = static_cast<std::uint8_t>(bytes[i]);
      low = (low & ~(std::uint64_t{0xFF} << (8 * i))) | (byte << (8 * i));
    }
    if (!negative) {
      push(tree().add_integer(op_offset_, false, low));
    } else if (low == 0) {
      push(tree().add_big_integer(op_offset_));  // -2^64 or beyond: magnitude does not fit
    } else {
      push(tree().add_integer(op_offset_, true, ~low + 1));  // magnitude of a negative value
    }
  }

  // The memo: a dense vector for the indices the pickler hands out (0, 1, 2, ...: never more
  // than the input has bytes), a map for any other. Either way it is charged to the budget.
  void put_memo(std::uint64_t index, const char* what) {
    const ValueRef value = top(what);
    if (index < in_.size()) {
      if (index >= memo_.size()) {
        budget_.charge((index + 1 - memo_.size()) * sizeof(ValueRef));
        memo_.resize(index + 1, kNoValue);
      }
      if (memo_[index] == kNoValue) ++memo_entries_;
      memo_[index] = value;
      return;
    }
    auto [it, inserted] = sparse_memo_.try_emplace(index, value);
    if (inserted) {
      budget_.charge(kSparseMemoEntryBytes);
      ++memo_entries_;
    }
    it->second = value;
  }

  void get_memo(std::uint64_t index, const char* what) {
    ValueRef value = kNoValue;
    if (index < memo_.size()) {
      value = memo_[index];
    } else if (auto it = sparse_memo_.find(index); it != sparse_memo_.end()) {
      value = it->second;
    }
    if (value == kNoValue) fail(fmt::format("{}: memo entry {} was never stored", what, index));
    push(value);
  }
  [[nodiscard]] std::uint64_t memo_size() const { return memo_entries_; }  // len(memo) in CPython

  void add_to_list(ValueRef target, std::span<const ValueRef> items, const char* what) {
    switch (tree().kind(target)) {
      case ValueKind::list:
        tree().append(target, items);
        break;
      case ValueKind::opaque:
        break;  // obj.append / obj.extend on an object we do not build
      default:
        fail(fmt::format("{} on a {}", what, to_string(tree().kind(target))));
    }
  }

  void add_to_dict(ValueRef target, std::span<const ValueRef> pairs, const char* what) {
    if (pairs.size() % 2 != 0) fail(fmt::format("{}: odd number of items for key/value pairs", what));
    switch (tree().kind(target)) {
      case ValueKind::dict:
        tree().append(target, pairs);
        break;
      case ValueKind::opaque:
        break;  // obj[key] = value on an object we do not build
      default:
        fail(fmt::format("{} on a {}", what, to_string(tree().kind(target))));
    }
  }

  // --- the opcodes ----------------------------------------------------------------------------

  void step(std::uint8_t op) {
    switch (op) {
      case PROTO: {
        const auto protocol = read_le(1, "PROTO");
        if (protocol > kHighestProtocol) fail(fmt::format("unsupported pickle protocol {}", protocol));
        document_.protocol = static_cast<int>(protocol);
        break;
      }
      case FRAME: {
        // Framing only groups opcodes for buffered reading; the length must still be honest.
        const auto length = read_le(8, "FRAME");
        if (length > in_.size() - pos_) {
          fail(fmt::format("FRAME of {} bytes exceeds the {} bytes left", length, in_.size() - pos_));
        }
        break;
      }
      case MARK:
        push_mark();
        break;
      case POP:
        if (stack_.size() > frame_base()) {
          stack_.pop_back();
        } else {
          drop(pop_mark("POP"));  // CPython: POP on an empty frame discards the mark
        }
        break;
      case POP_MARK:
        drop(pop_mark("POP_MARK"));
        break;
      case DUP:
        push(top("DUP"));
        break;

      case NONE:
        push(tree().add_none(op_offset_));
        break;
      case NEWTRUE:
        push(tree().add_bool(op_offset_, true));
        break;
      case NEWFALSE:
        push(tree().add_bool(op_offset_, false));
        break;
      case BININT1:
        push(tree().add_integer(op_offset_, false, read_le(1, "BININT1")));
        break;
      case BININT2:
        push(tree().add_integer(op_offset_, false, read_le(2, "BININT2")));
        break;
      case BININT: {
        const auto raw = static_cast<std::uint32_t>(read_le(4, "BININT"));
        const bool negative = (raw & 0x80000000U) != 0;
        const std::uint64_t magnitude = negative ? (std::uint64_t{1} << 32U) - raw : raw;
        push(tree().add_integer(op_offset_, negative, magnitude));
        break;
      }
      case LONG1:
        push_long(take(length_operand(1, "LONG1"), "LONG1"));
        break;
      case LONG4: {
        const auto length = static_cast<std::uint32_t>(read_le(4, "LONG4"));
        if ((length & 0x80000000U) != 0) fail("LONG4 with a negative length");
        if (length > in_.size() - pos_) {
          fail(fmt::format("LONG4 length {} exceeds the {} bytes left", length, in_.size() - pos_));
        }
        push_long(take(length, "LONG4"));
        break;
      }
      case BINFLOAT: {
        std::string_view raw = take(8, "BINFLOAT");
        std::uint64_t bits = 0;
        for (char c : raw) bits = (bits << 8U) | static_cast<std::uint8_t>(c);  // big-endian
        push(tree().add_float(op_offset_, std::bit_cast<double>(bits)));
        break;
      }

      case SHORT_BINUNICODE:
        push_text(length_operand(1, "SHORT_BINUNICODE"), "SHORT_BINUNICODE");
        break;
      case BINUNICODE:
        push_text(length_operand(4, "BINUNICODE"), "BINUNICODE");
        break;
      case BINUNICODE8:
        push_text(length_operand(8, "BINUNICODE8"), "BINUNICODE8");
        break;
      case SHORT_BINBYTES:
        push_bytes(length_operand(1, "SHORT_BINBYTES"), "SHORT_BINBYTES");
        break;
      case BINBYTES:
        push_bytes(length_operand(4, "BINBYTES"), "BINBYTES");
        break;
      case BINBYTES8:
        push_bytes(length_operand(8, "BINBYTES8"), "BINBYTES8");
        break;
      case BYTEARRAY8:
        push_bytes(length_operand(8, "BYTEARRAY8"), "BYTEARRAY8");
        break;
      case SHORT_BINSTRING:
        push_bytes(length_operand(1, "SHORT_BINSTRING"), "SHORT_BINSTRING");
        break;
      case BINSTRING: {
        const auto length = static_cast<std::uint32_t>(read_le(4, "BINSTRING"));
        if ((length & 0x80000000U) != 0) fail("BINSTRING with a negative length");
        if (length > in_.size() - pos_) {
          fail(fmt::format("BINSTRING length {} exceeds the {} bytes left", length, in_.size() - pos_));
        }
        push_bytes(length, "BINSTRING");
        break;
      }

      case EMPTY_DICT:
        push(tree().add_container(op_offset_, ValueKind::dict));
        break;
      case EMPTY_LIST:
        push(tree().add_container(op_offset_, ValueKind::list));
        break;
      case EMPTY_TUPLE:
        push(tree().add_container(op_offset_, ValueKind::tuple));
        break;
      case EMPTY_SET:
        push(tree().add_container(op_offset_, ValueKind::set));
        break;
      case DICT:
        push_marked_container(ValueKind::dict, "DICT");
        break;
      case LIST:
        push_marked_container(ValueKind::list, "LIST");
        break;
      case TUPLE:
        push_marked_container(ValueKind::tuple, "TUPLE");
        break;
      case FROZENSET:
        push_marked_container(ValueKind::set, "FROZENSET");
        break;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        const std::size_t count = op - TUPLE1 + 1U;
        ValueRef items[3] = {0, 0, 0};
        for (std::size_t i = count; i-- > 0;) items[i] = pop("TUPLEn");
        push(make_container(ValueKind::tuple, std::span<const ValueRef>(items, count)));
        break;
      }
      case APPEND: {
        const ValueRef item = pop("APPEND");
        add_to_list(top("APPEND"), std::span<const ValueRef>(&item, 1), "APPEND");
        break;
      }
      case APPENDS: {
        const Marked marked = pop_mark("APPENDS");
        add_to_list(below(marked, "APPENDS"), marked.items, "APPENDS");
        drop(marked);
        break;
      }
      case SETITEM: {
        const ValueRef value = pop("SETITEM");
        const ValueRef key = pop("SETITEM");
        const ValueRef pair[2] = {key, value};
        add_to_dict(top("SETITEM"), pair, "SETITEM");
        break;
      }
      case SETITEMS: {
        const Marked marked = pop_mark("SETITEMS");
        add_to_dict(below(marked, "SETITEMS"), marked.items, "SETITEMS");
        drop(marked);
        break;
      }
      case ADDITEMS: {
        const Marked marked = pop_mark("ADDITEMS");
        const ValueRef target = below(marked, "ADDITEMS");
        if (tree().kind(target) == ValueKind::set) {
          tree().append(target, marked.items);
        } else if (tree().kind(target) != ValueKind::opaque) {
          fail(fmt::format("ADDITEMS on a {}", to_string(tree().kind(target))));
        }
        drop(marked);
        break;
      }

      case BINPUT:
        put_memo(read_le(1, "BINPUT"), "BINPUT");
        break;
      case LONG_BINPUT:
        put_memo(read_le(4, "LONG_BINPUT"), "LONG_BINPUT");
        break;
      case MEMOIZE:
        put_memo(memo_size(), "MEMOIZE");
        break;
      case BINGET:
        get_memo(read_le(1, "BINGET"), "BINGET");
        break;
      case LONG_BINGET:
        get_memo(read_le(4, "LONG_BINGET"), "LONG_BINGET");
        break;

      // Object construction: recorded as opaque placeholders, never performed.
      case GLOBAL: {
        const std::string module(read_line("GLOBAL"));
        const std::string_view attribute = read_line("GLOBAL");
        push(make_opaque(fmt::format("{}.{}", module, attribute)));
        break;
      }
      case STACK_GLOBAL: {
        const ValueRef attribute = pop("STACK_GLOBAL");
        const ValueRef module = pop("STACK_GLOBAL");
        if (tree().kind(attribute) != ValueKind::text || tree().kind(module) != ValueKind::text) {
          fail("STACK_GLOBAL: module and name must be strings");
        }
        push(make_opaque(fmt::format("{}.{}", tree().text(module).substr(0, kMaxOpaqueDescription),
                                     tree().text(attribute).substr(0, kMaxOpaqueDescription))));
        break;
      }
      case REDUCE: {
        pop("REDUCE");  // arguments
        const ValueRef callable = pop("REDUCE");
        push(make_opaque(describe_callable(callable) + "(...)"));
        break;
      }
      case NEWOBJ: {
        pop("NEWOBJ");  // arguments
        const ValueRef cls = pop("NEWOBJ");
        push(make_opaque(describe_callable(cls) + ".__new__(...)"));
        break;
      }
      case NEWOBJ_EX: {
        pop("NEWOBJ_EX");  // keyword arguments
        pop("NEWOBJ_EX");  // arguments
        const ValueRef cls = pop("NEWOBJ_EX");
        push(make_opaque(describe_callable(cls) + ".__new__(...)"));
        break;
      }
      case OBJ: {
        const Marked marked = pop_mark("OBJ");
        if (marked.items.empty()) fail("OBJ: no class on the stack");
        const ValueRef cls = marked.items.front();
        drop(marked);
        push(make_opaque(describe_callable(cls) + "(...)"));
        break;
      }
      case BUILD:
        pop("BUILD");  // the state __setstate__ would receive
        top("BUILD");  // the object stays where it is
        break;
      case EXT1:
        push(make_opaque(fmt::format("extension {}", read_le(1, "EXT1"))));
        break;
      case EXT2:
        push(make_opaque(fmt::format("extension {}", read_le(2, "EXT2"))));
        break;
      case EXT4:
        push(make_opaque(fmt::format("extension {}", read_le(4, "EXT4"))));
        break;
      case BINPERSID:
        pop("BINPERSID");
        push(make_opaque("persistent id"));
        break;

      case NEXT_BUFFER:
      case READONLY_BUFFER:
        fail("out-of-band buffers (protocol 5) are not supported");
      case FLOAT:
      case INT:
      case LONG:
      case STRING:
      case UNICODE:
      case GET:
      case PUT:
      case INST:
      case PERSID:
        fail(fmt::format("text opcode '{}' of pickle protocol 0 is not supported (expected protocol 2 to 4)",
                         static_cast<char>(op)));
      default:
        fail(fmt::format("unknown pickle opcode 0x{:02x}", op));
    }
  }

  static constexpr std::size_t kProgressStep = std::size_t{4} << 20;
  static constexpr ValueRef kNoValue = std::numeric_limits<ValueRef>::max();  // never a value's ref
  static constexpr std::uint64_t kSparseMemoEntryBytes = 64;                  // a hash-map node and its bucket

  std::string_view in_;
  const std::string& name_;
  const ProgressCallback& progress_;
  DecodeBudget& budget_;
  std::size_t next_progress_ = kProgressStep;
  std::size_t pos_ = 0;
  std::size_t op_offset_ = 0;
  PickleDocument document_;
  std::vector<ValueRef> stack_;
  std::size_t stack_charged_ = 0;
  std::vector<std::size_t> marks_;
  std::size_t marks_charged_ = 0;
  std::vector<ValueRef> memo_;
  std::unordered_map<std::uint64_t, ValueRef> sparse_memo_;
  std::uint64_t memo_entries_ = 0;
};

}  // namespace

PickleDocument read_pickle(std::string_view bytes, const std::string& name, DecodeBudget& budget,
                           const ProgressCallback& progress) {
  PickleMachine machine(bytes, name, budget, progress);
  return machine.run();
}

PickleDocument read_pickle(std::string_view bytes, const std::string& name, const ProgressCallback& progress) {
  DecodeBudget budget(bytes.size());
  return read_pickle(bytes, name, budget, progress);
}

}  // namespace memtool::trace::detail
