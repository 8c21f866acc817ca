// The snapshot value arena: construction and typed reads (see value_tree.hpp).
#include "value_tree.hpp"

#include <bit>
#include <limits>
#include <stdexcept>

namespace memtool::trace::detail {

std::string_view to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::none: return "None";
    case ValueKind::boolean: return "bool";
    case ValueKind::integer: return "int";
    case ValueKind::big_integer: return "int (too large)";
    case ValueKind::floating: return "float";
    case ValueKind::text: return "str";
    case ValueKind::bytes: return "bytes";
    case ValueKind::list: return "list";
    case ValueKind::tuple: return "tuple";
    case ValueKind::dict: return "dict";
    case ValueKind::set: return "set";
    case ValueKind::opaque: return "object";
  }
  return "unknown";
}

ValueRef ValueTree::push(const Value& value) {
  // Refs are 32-bit to keep the arena small; only a multi-gigabyte input could exhaust them,
  // and the readers turn this into an InputError at the current offset.
  if (values_.size() >= std::numeric_limits<ValueRef>::max()) {
    throw std::length_error("too many values in one document");
  }
  values_.push_back(value);
  return static_cast<ValueRef>(values_.size() - 1);
}

ValueRef ValueTree::push_text(ValueKind kind, std::uint64_t offset, std::string_view text) {
  Value value{kind, false, offset, text_pool_.size(), text.size()};
  text_pool_.append(text);
  return push(value);
}

ValueRef ValueTree::add_none(std::uint64_t offset) { return push({ValueKind::none, false, offset, 0, 0}); }

ValueRef ValueTree::add_bool(std::uint64_t offset, bool value) {
  return push({ValueKind::boolean, false, offset, value ? 1U : 0U, 0});
}

ValueRef ValueTree::add_integer(std::uint64_t offset, bool negative, std::uint64_t magnitude) {
  return push({ValueKind::integer, negative && magnitude != 0, offset, magnitude, 0});
}

ValueRef ValueTree::add_big_integer(std::uint64_t offset) {
  return push({ValueKind::big_integer, false, offset, 0, 0});
}

ValueRef ValueTree::add_float(std::uint64_t offset, double value) {
  return push({ValueKind::floating, false, offset, std::bit_cast<std::uint64_t>(value), 0});
}

ValueRef ValueTree::add_text(std::uint64_t offset, std::string_view utf8) {
  return push_text(ValueKind::text, offset, utf8);
}

ValueRef ValueTree::add_bytes(std::uint64_t offset, std::string_view bytes) {
  return push_text(ValueKind::bytes, offset, bytes);
}

ValueRef ValueTree::add_opaque(std::uint64_t offset, std::string_view what) {
  return push_text(ValueKind::opaque, offset, what);
}

ValueRef ValueTree::add_container(std::uint64_t offset, ValueKind kind) {
  ValueRef ref = push({kind, false, offset, containers_.size(), 0});
  containers_.emplace_back();
  return ref;
}

bool ValueTree::is_container(ValueRef ref) const {
  switch (values_[ref].kind) {
    case ValueKind::list:
    case ValueKind::tuple:
    case ValueKind::dict:
    case ValueKind::set: return true;
    default: return false;
  }
}

void ValueTree::append(ValueRef container, ValueRef item) {
  containers_[values_[container].payload].push_back(item);
}

void ValueTree::append(ValueRef container, std::span<const ValueRef> items) {
  auto& slots = containers_[values_[container].payload];
  slots.insert(slots.end(), items.begin(), items.end());
}

std::optional<std::uint64_t> ValueTree::as_unsigned(ValueRef ref) const {
  const Value& value = values_[ref];
  if (value.kind != ValueKind::integer || value.negative) return std::nullopt;
  return value.payload;
}

std::optional<std::int64_t> ValueTree::as_signed(ValueRef ref) const {
  const Value& value = values_[ref];
  if (value.kind != ValueKind::integer) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!value.negative) {
    if (value.payload > kMax) return std::nullopt;
    return static_cast<std::int64_t>(value.payload);
  }
  if (value.payload > kMax + 1) return std::nullopt;
  if (value.payload == kMax + 1) return std::numeric_limits<std::int64_t>::min();
  return -static_cast<std::int64_t>(value.payload);
}

std::optional<bool> ValueTree::as_bool(ValueRef ref) const {
  const Value& value = values_[ref];
  if (value.kind != ValueKind::boolean) return std::nullopt;
  return value.payload != 0;
}

std::optional<double> ValueTree::as_float(ValueRef ref) const {
  const Value& value = values_[ref];
  if (value.kind != ValueKind::floating) return std::nullopt;
  return std::bit_cast<double>(value.payload);
}

bool ValueTree::is_negative_integer(ValueRef ref) const {
  const Value& value = values_[ref];
  return value.kind == ValueKind::integer && value.negative;
}

std::string_view ValueTree::text(ValueRef ref) const {
  const Value& value = values_[ref];
  switch (value.kind) {
    case ValueKind::text:
    case ValueKind::bytes:
    case ValueKind::opaque:
      return std::string_view(text_pool_).substr(value.payload, value.length);
    default: return {};
  }
}

std::span<const ValueRef> ValueTree::items(ValueRef ref) const {
  if (!is_container(ref)) return {};
  return containers_[values_[ref].payload];
}

}  // namespace memtool::trace::detail
