// The snapshot value arena: construction and typed reads (see value_tree.hpp).
#include "value_tree.hpp"

#include <bit>
#include <limits>
#include <stdexcept>

namespace memtool::trace::detail {
namespace {

constexpr std::uint64_t kMaxIndex = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t kNoSegment = std::numeric_limits<std::uint32_t>::max();

std::uint64_t run_start(std::uint64_t payload) { return payload >> 32; }
std::uint64_t run_count(std::uint64_t payload) { return payload & kMaxIndex; }

}  // namespace

std::string_view to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::none:
      return "None";
    case ValueKind::boolean:
      return "bool";
    case ValueKind::integer:
      return "int";
    case ValueKind::big_integer:
      return "int (too large)";
    case ValueKind::floating:
      return "float";
    case ValueKind::text:
      return "str";
    case ValueKind::bytes:
      return "bytes";
    case ValueKind::list:
      return "list";
    case ValueKind::tuple:
      return "tuple";
    case ValueKind::dict:
      return "dict";
    case ValueKind::set:
      return "set";
    case ValueKind::opaque:
      return "object";
  }
  return "unknown";
}

ValueRef ValueTree::push(const Value& value) {
  // Refs are 32-bit to keep the arena small; only a multi-gigabyte input could exhaust them.
  if (values_.size() >= kMaxIndex) throw std::length_error("too many values in one document");
  charge(sizeof(Value));
  values_.push_back(value);
  return static_cast<ValueRef>(values_.size() - 1);
}

ValueRef ValueTree::push_text(ValueKind kind, std::uint64_t offset, std::string_view text) {
  if (text.size() > kMaxIndex - text_pool_.size()) throw std::length_error("too much text in one document");
  charge(text.size());
  const ValueRef ref = push(Value(kind, offset, 0, run(text_pool_.size(), text.size())));
  text_pool_.append(text);
  return ref;
}

void ValueTree::push_slots(std::span<const ValueRef> items) {
  if (items.size() > kMaxIndex - slots_.size()) throw std::length_error("too many container slots in one document");
  charge(items.size() * sizeof(ValueRef));
  slots_.insert(slots_.end(), items.begin(), items.end());
}

ValueRef ValueTree::add_none(std::uint64_t offset) { return push(Value(ValueKind::none, offset, 0, 0)); }

ValueRef ValueTree::add_bool(std::uint64_t offset, bool value) {
  return push(Value(ValueKind::boolean, offset, 0, value ? 1U : 0U));
}

ValueRef ValueTree::add_integer(std::uint64_t offset, bool negative, std::uint64_t magnitude) {
  return push(Value(ValueKind::integer, offset, negative && magnitude != 0 ? Value::kNegative : 0, magnitude));
}

ValueRef ValueTree::add_big_integer(std::uint64_t offset) { return push(Value(ValueKind::big_integer, offset, 0, 0)); }

ValueRef ValueTree::add_float(std::uint64_t offset, double value) {
  return push(Value(ValueKind::floating, offset, 0, std::bit_cast<std::uint64_t>(value)));
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
  return push(Value(kind, offset, 0, run(slots_.size(), 0)));
}

bool ValueTree::is_container(ValueRef ref) const {
  switch (values_[ref].kind()) {
    case ValueKind::list:
    case ValueKind::tuple:
    case ValueKind::dict:
    case ValueKind::set:
      return true;
    default:
      return false;
  }
}

void ValueTree::append(ValueRef container, std::span<const ValueRef> items) {
  if (items.empty()) return;
  Value& value = values_[container];
  const std::uint64_t end = slots_.size();
  if (!value.has(Value::kChained)) {
    const std::uint64_t count = run_count(value.payload());
    // An empty run may start anywhere; a run that ends where the slots end just grows.
    const std::uint64_t start = count == 0 ? end : run_start(value.payload());
    if (start + count == end) {
      if (count + items.size() > kMaxIndex) throw std::length_error("too many items in one container");
      push_slots(items);
      value.set_payload(run(start, count + items.size()));
      return;
    }
    // Other containers were filled since: from now on a chain of runs, the first one this.
    if (chains_.size() >= kMaxIndex || segments_.size() >= kMaxIndex) {
      throw std::length_error("too many container runs in one document");
    }
    charge(sizeof(Chain) + sizeof(Segment));
    segments_.push_back({static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(count), kNoSegment});
    const auto segment = static_cast<std::uint32_t>(segments_.size() - 1);
    chains_.push_back({segment, segment, static_cast<std::uint32_t>(count)});
    value.set(Value::kChained, true);
    value.set_payload(chains_.size() - 1);
  }
  Chain& chain = chains_[value.payload()];
  if (chain.count + items.size() > kMaxIndex) throw std::length_error("too many items in one container");
  Segment& last = segments_[chain.last];
  if (std::uint64_t{last.start} + last.count == end) {
    last.count += static_cast<std::uint32_t>(items.size());
  } else {
    if (segments_.size() >= kMaxIndex) throw std::length_error("too many container runs in one document");
    charge(sizeof(Segment));
    segments_.push_back({static_cast<std::uint32_t>(end), static_cast<std::uint32_t>(items.size()), kNoSegment});
    chain.last = segments_[chain.last].next = static_cast<std::uint32_t>(segments_.size() - 1);
  }
  chain.count += static_cast<std::uint32_t>(items.size());
  push_slots(items);
}

void ValueTree::finish() {
  if (chains_.empty()) return;
  for (Value& value : values_) {
    if (!value.has(Value::kChained)) continue;
    const Chain& chain = chains_[value.payload()];
    if (chain.count > kMaxIndex - slots_.size()) throw std::length_error("too many container slots in one document");
    charge(std::uint64_t{chain.count} * sizeof(ValueRef));
    const std::uint64_t start = slots_.size();
    slots_.reserve(slots_.size() + chain.count);
    for (std::uint32_t s = chain.first; s != kNoSegment; s = segments_[s].next) {
      for (std::uint32_t i = 0; i < segments_[s].count; ++i) slots_.push_back(slots_[segments_[s].start + i]);
    }
    value.set(Value::kChained, false);
    value.set_payload(run(start, chain.count));
  }
  chains_ = {};
  segments_ = {};
}

std::optional<std::uint64_t> ValueTree::as_unsigned(ValueRef ref) const {
  const Value& value = values_[ref];
  if (value.kind() != ValueKind::integer || value.has(Value::kNegative)) return std::nullopt;
  return value.payload();
}

std::optional<std::int64_t> ValueTree::as_signed(ValueRef ref) const {
  const Value& value = values_[ref];
  if (value.kind() != ValueKind::integer) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const std::uint64_t magnitude = value.payload();
  if (!value.has(Value::kNegative)) {
    if (magnitude > kMax) return std::nullopt;
    return static_cast<std::int64_t>(magnitude);
  }
  if (magnitude > kMax + 1) return std::nullopt;
  if (magnitude == kMax + 1) return std::numeric_limits<std::int64_t>::min();
  return -static_cast<std::int64_t>(magnitude);
}

std::optional<bool> ValueTree::as_bool(ValueRef ref) const {
  const Value& value = values_[ref];
  if (value.kind() != ValueKind::boolean) return std::nullopt;
  return value.payload() != 0;
}

std::optional<double> ValueTree::as_float(ValueRef ref) const {
  const Value& value = values_[ref];
  if (value.kind() != ValueKind::floating) return std::nullopt;
  return std::bit_cast<double>(value.payload());
}

bool ValueTree::is_negative_integer(ValueRef ref) const {
  const Value& value = values_[ref];
  return value.kind() == ValueKind::integer && value.has(Value::kNegative);
}

std::string_view ValueTree::text(ValueRef ref) const {
  const Value& value = values_[ref];
  switch (value.kind()) {
    case ValueKind::text:
    case ValueKind::bytes:
    case ValueKind::opaque:
      return std::string_view(text_pool_).substr(run_start(value.payload()), run_count(value.payload()));
    default:
      return {};
  }
}

std::span<const ValueRef> ValueTree::items(ValueRef ref) const {
  if (!is_container(ref)) return {};
  const Value& value = values_[ref];
  if (value.has(Value::kChained)) throw std::logic_error("ValueTree::items before finish()");
  return std::span<const ValueRef>(slots_).subspan(run_start(value.payload()), run_count(value.payload()));
}

}  // namespace memtool::trace::detail
