// ValueTree: the decoded document of a PyTorch memory snapshot, whichever encoding it came in.
//
// The pickle reader and the JSON reader both build one of these; the snapshot walker reads it.
// It is a flat arena: values refer to each other by index, never by pointer, so a hostile file
// with shared or cyclic references (pickle's memo allows both) cannot make us recurse, and
// destroying a tree is a few vector frees. Every value remembers the byte offset of the input
// that made it, so a schema error can point into the file. Each value, container slot and text
// byte comes from at least one input byte, so the tree's size is linear in the input's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memtool::trace::detail {

using ValueRef = std::uint32_t;

enum class ValueKind : std::uint8_t {
  none,
  boolean,
  integer,      // fits in sign + 64-bit magnitude
  big_integer,  // a pickle LONG too wide for us: kept as a placeholder, unusable as a field
  floating,
  text,         // unicode string (valid UTF-8)
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
  // Scalars. `offset` is the input byte where the value starts.
  ValueRef add_none(std::uint64_t offset);
  ValueRef add_bool(std::uint64_t offset, bool value);
  ValueRef add_integer(std::uint64_t offset, bool negative, std::uint64_t magnitude);
  ValueRef add_big_integer(std::uint64_t offset);
  ValueRef add_float(std::uint64_t offset, double value);
  ValueRef add_text(std::uint64_t offset, std::string_view utf8);
  ValueRef add_bytes(std::uint64_t offset, std::string_view bytes);
  ValueRef add_opaque(std::uint64_t offset, std::string_view what);
  // Containers start empty and grow with append(); tuples are filled once by their builder.
  ValueRef add_container(std::uint64_t offset, ValueKind kind);
  void append(ValueRef container, ValueRef item);
  void append(ValueRef container, std::span<const ValueRef> items);

  [[nodiscard]] std::size_t size() const { return values_.size(); }
  [[nodiscard]] ValueKind kind(ValueRef ref) const { return values_[ref].kind; }
  [[nodiscard]] std::uint64_t offset(ValueRef ref) const { return values_[ref].offset; }
  [[nodiscard]] bool is_container(ValueRef ref) const;

  // Typed reads; nullopt when the value has another kind or does not fit.
  [[nodiscard]] std::optional<std::uint64_t> as_unsigned(ValueRef ref) const;
  [[nodiscard]] std::optional<std::int64_t> as_signed(ValueRef ref) const;
  [[nodiscard]] std::optional<bool> as_bool(ValueRef ref) const;
  [[nodiscard]] std::optional<double> as_float(ValueRef ref) const;
  [[nodiscard]] bool is_negative_integer(ValueRef ref) const;
  // Text of a text, bytes or opaque value (opaque: what it was, e.g. "os.system(...)").
  [[nodiscard]] std::string_view text(ValueRef ref) const;
  // Items of a container (dict: key, value, key, value...); empty for scalars.
  [[nodiscard]] std::span<const ValueRef> items(ValueRef ref) const;

 private:
  struct Value {
    ValueKind kind = ValueKind::none;
    bool negative = false;     // integer sign
    std::uint64_t offset = 0;  // input byte that made it
    std::uint64_t payload = 0;  // integer magnitude, bool, double bits, text start, container index
    std::uint64_t length = 0;   // text length
  };

  ValueRef push(const Value& value);
  ValueRef push_text(ValueKind kind, std::uint64_t offset, std::string_view text);

  std::vector<Value> values_;
  std::vector<std::vector<ValueRef>> containers_;
  std::string text_pool_;
};

}  // namespace memtool::trace::detail
