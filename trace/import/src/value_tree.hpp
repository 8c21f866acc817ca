// ValueTree: the decoded document of a PyTorch memory snapshot, whichever encoding it came in.
//
// The pickle reader and the JSON reader both build one of these; the snapshot walker reads it.
// It is a flat arena: values refer to each other by index, never by pointer, so a hostile file
// with shared or cyclic references (pickle's memo allows both) cannot make us recurse, and
// destroying a tree is a few vector frees. Every value remembers the byte offset of the input
// that made it, so a schema error can point into the file.
//
// Memory is 16 bytes per value, 4 per container slot and the text bytes, all in a few shared
// vectors (no allocation per container, so a file of nested brackets costs ~12 bytes per input
// byte), and every byte of it is charged to the DecodeBudget given at construction. A container
// is one run of slots in the shared slot vector while its items arrive together (the common
// case); one that grows again after other containers were filled (pickle's APPENDS batches)
// keeps a chain of runs until finish() lays it out in one piece.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "decode_budget.hpp"

namespace memtool::trace::detail {

using ValueRef = std::uint32_t;

enum class ValueKind : std::uint8_t {
  none,
  boolean,
  integer,      // fits in sign + 64-bit magnitude
  big_integer,  // a pickle LONG too wide for us: kept as a placeholder, unusable as a field
  floating,
  text,  // unicode string (valid UTF-8)
  bytes,
  list,
  tuple,
  dict,  // items hold key, value, key, value...; a later equal key overrides an earlier one
  set,
  opaque,  // a Python object we do not build (GLOBAL, REDUCE, NEWOBJ...): never executed
};

[[nodiscard]] std::string_view to_string(ValueKind kind);

class ValueTree {
 public:
  // `budget` (may be null: nothing is charged) is charged for every byte the tree takes; an
  // overdraft throws DecodeBudget::Exceeded. More than 2^32 values, slots or text bytes throw
  // std::length_error. The readers turn both into an InputError at the current offset.
  explicit ValueTree(DecodeBudget* budget = nullptr) : budget_(budget) {}

  // Scalars. `offset` is the input byte where the value starts.
  ValueRef add_none(std::uint64_t offset);
  ValueRef add_bool(std::uint64_t offset, bool value);
  ValueRef add_integer(std::uint64_t offset, bool negative, std::uint64_t magnitude);
  ValueRef add_big_integer(std::uint64_t offset);
  ValueRef add_float(std::uint64_t offset, double value);
  ValueRef add_text(std::uint64_t offset, std::string_view utf8);
  ValueRef add_bytes(std::uint64_t offset, std::string_view bytes);
  ValueRef add_opaque(std::uint64_t offset, std::string_view what);
  // Containers start empty and grow with append().
  ValueRef add_container(std::uint64_t offset, ValueKind kind);
  void append(ValueRef container, ValueRef item) { append(container, std::span<const ValueRef>(&item, 1)); }
  void append(ValueRef container, std::span<const ValueRef> items);
  // After the last append and before items(): every container's slots in one run.
  void finish();

  [[nodiscard]] std::size_t size() const { return values_.size(); }
  [[nodiscard]] ValueKind kind(ValueRef ref) const { return values_[ref].kind(); }
  [[nodiscard]] std::uint64_t offset(ValueRef ref) const { return values_[ref].offset(); }
  [[nodiscard]] bool is_container(ValueRef ref) const;

  // Typed reads; nullopt when the value has another kind or does not fit.
  [[nodiscard]] std::optional<std::uint64_t> as_unsigned(ValueRef ref) const;
  [[nodiscard]] std::optional<std::int64_t> as_signed(ValueRef ref) const;
  [[nodiscard]] std::optional<bool> as_bool(ValueRef ref) const;
  [[nodiscard]] std::optional<double> as_float(ValueRef ref) const;
  [[nodiscard]] bool is_negative_integer(ValueRef ref) const;
  // Text of a text, bytes or opaque value (opaque: what it was, e.g. "os.system(...)").
  [[nodiscard]] std::string_view text(ValueRef ref) const;
  // Items of a container (dict: key, value, key, value...); empty for scalars. Needs finish().
  [[nodiscard]] std::span<const ValueRef> items(ValueRef ref) const;

 private:
  // 16 bytes: offset (48 bits), kind and flags in the first word; the payload is an integer's
  // magnitude, a bool, a double's bits, a text's or a container's (start, length) as two
  // 32-bit halves, or a chained container's index in chains_.
  class Value {
   public:
    static constexpr std::uint64_t kNegative = 1;
    static constexpr std::uint64_t kChained = 2;
    Value(ValueKind kind, std::uint64_t offset, std::uint64_t flags, std::uint64_t payload)
        : head_((offset & kOffsetMask) | (std::uint64_t{static_cast<std::uint8_t>(kind)} << 48) | (flags << 56)),
          payload_(payload) {}
    [[nodiscard]] ValueKind kind() const { return static_cast<ValueKind>((head_ >> 48) & 0xFFU); }
    [[nodiscard]] std::uint64_t offset() const { return head_ & kOffsetMask; }
    [[nodiscard]] bool has(std::uint64_t flag) const { return ((head_ >> 56) & flag) != 0; }
    void set(std::uint64_t flag, bool on) { head_ = on ? head_ | (flag << 56) : head_ & ~(flag << 56); }
    [[nodiscard]] std::uint64_t payload() const { return payload_; }
    void set_payload(std::uint64_t payload) { payload_ = payload; }

   private:
    static constexpr std::uint64_t kOffsetMask = (std::uint64_t{1} << 48) - 1;
    std::uint64_t head_;
    std::uint64_t payload_;
  };
  struct Segment {  // one run of a chained container's slots
    std::uint32_t start;
    std::uint32_t count;
    std::uint32_t next;
  };
  struct Chain {
    std::uint32_t first;
    std::uint32_t last;
    std::uint32_t count;
  };

  void charge(std::uint64_t bytes) {
    if (budget_ != nullptr) budget_->charge(bytes);
  }
  ValueRef push(const Value& value);
  ValueRef push_text(ValueKind kind, std::uint64_t offset, std::string_view text);
  void push_slots(std::span<const ValueRef> items);
  static std::uint64_t run(std::uint64_t start, std::uint64_t count) { return (start << 32) | count; }

  DecodeBudget* budget_;
  std::vector<Value> values_;
  std::vector<ValueRef> slots_;  // the items of every container
  std::string text_pool_;
  std::vector<Chain> chains_;
  std::vector<Segment> segments_;
};

}  // namespace memtool::trace::detail
