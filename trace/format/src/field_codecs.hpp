// How each kind of event field (event.hpp's field::) travels in a v1 record: its encoder and
// its decoder side by side, so the two cannot disagree, and the most bytes it takes. The writer
// and the reader handle every kind of events.def through encode_event / decode_event and
// record_bound below, so a kind added to the table needs nothing here unless it brings a new
// codec. docs/trace-format.md describes the same bytes.
//
// Decoders are templates over the reader's Cursor (u8, varint, u32, count, fail and the
// position `p`); every check they make throws through Cursor::fail with the field's name.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "delta_state.hpp"
#include "memtool/trace/event.hpp"
#include "wire.hpp"

namespace memtool::trace::wire {

inline constexpr std::size_t kHeaderBound = 3 * kMaxVarintBytes;  // seq, time, thread

// What encoding a record reads and changes besides the record: the running state (a copy for
// a note, which must leave the real one alone) and how many strings and stacks the file
// defines so far (a reference to any other id travels as "none").
struct EncodeContext {
  DeltaState& state;
  std::uint64_t strings = 0;
  std::uint64_t stacks = 0;
};

// The same for decoding, with the reader's buffer for touched lists (reused, no allocation per
// record once warm; what it holds is valid until the next record).
struct DecodeContext {
  DeltaState& state;
  std::uint64_t strings = 0;
  std::uint64_t stacks = 0;
  std::vector<std::uint64_t>& touched;
};

// An optional id as the writer sends it: id + 1 for one the file defines, 0 otherwise.
template <class Id>
[[nodiscard]] constexpr std::uint64_t defined_id_code(Id id, std::uint64_t defined) {
  return id.valid() && id.value() < defined ? optional_id(id) : 0;
}

// An optional id as the reader takes it: a reference to an id not defined yet is corrupt.
template <class Id, class Cursor>
Id read_defined_id(Cursor& c, std::uint64_t defined, const char* what) {
  const std::uint8_t* at = c.p;
  const std::uint64_t v = c.varint(what);
  if (v == 0) return Id{};
  if (v - 1 >= defined) {
    c.fail(at, std::is_same_v<Id, StackId> ? fmt::format("reference to undefined stack id {}", v - 1)
                                           : fmt::format("{} refers to undefined string id {}", what, v - 1));
  }
  return Id{static_cast<typename Id::rep_type>(v - 1)};
}

template <class Field>
struct Codec;

// A field of fixed size: no bytes beyond max_bytes.
struct FixedSize {
  template <class... Member>
  static constexpr std::size_t extra_bytes(const Member&...) {
    return 0;
  }
};
struct OneVarint : FixedSize {
  static constexpr std::size_t max_bytes = kMaxVarintBytes;
};

// A whole number in one varint: 64 bits as they are, 32 bits checked to fit, signed ones zigzag.
template <class Int>
struct IntegerCodec : OneVarint {
  template <class E>
  static void put(E& e, EncodeContext&, Int v) {
    if constexpr (std::is_signed_v<Int>) {
      e.varint(zigzag(v));
    } else {
      e.varint(v);
    }
  }
  template <class C>
  static void get(C& c, DecodeContext&, const char* what, Int& v) {
    const std::uint8_t* at = c.p;
    const std::uint64_t code = c.varint(what);
    if constexpr (std::is_signed_v<Int>) {
      const std::int64_t wide = unzigzag(code);
      if (wide < std::numeric_limits<Int>::min() || wide > std::numeric_limits<Int>::max()) {
        c.fail(at, fmt::format("{} {} does not fit 32 bits", what, wide));
      }
      v = static_cast<Int>(wide);
    } else {
      if constexpr (sizeof(Int) < sizeof(code)) {
        if (code > std::numeric_limits<Int>::max()) c.fail(at, fmt::format("{} {} does not fit 32 bits", what, code));
      }
      v = static_cast<Int>(code);
    }
  }
};
template <>
struct Codec<field::varint> : IntegerCodec<std::uint64_t> {};
template <>
struct Codec<field::u32> : IntegerCodec<std::uint32_t> {};
template <>
struct Codec<field::i32> : IntegerCodec<std::int32_t> {};

// A delta from one of the running values (`Running`), which it becomes when `kAdvances`.
template <std::uint64_t DeltaState::*Running, bool kAdvances, class Value>
struct RunningCodec : OneVarint {
  static std::uint64_t raw(std::uint64_t v) { return v; }
  static std::uint64_t raw(StreamHandle v) { return v.value(); }
  template <class E>
  static void put(E& e, EncodeContext& ctx, Value v) {
    e.varint(delta(raw(v), ctx.state.*Running));
    if constexpr (kAdvances) ctx.state.*Running = raw(v);
  }
  template <class C>
  static void get(C& c, DecodeContext& ctx, const char* what, Value& v) {
    const std::uint64_t value = undelta(ctx.state.*Running, c.varint(what));
    if constexpr (kAdvances) ctx.state.*Running = value;
    v = Value{value};
  }
};
template <>
struct Codec<field::address> : RunningCodec<&DeltaState::address, true, std::uint64_t> {};
template <>
struct Codec<field::address_ref> : RunningCodec<&DeltaState::address, false, std::uint64_t> {};
template <>
struct Codec<field::stream> : RunningCodec<&DeltaState::stream, true, StreamHandle> {};

// A reference to a string or a stack defined earlier (`Defined`: how many the file has), or none.
template <class Id, std::uint64_t EncodeContext::*Defined, std::uint64_t DecodeContext::*Known>
struct ReferenceCodec : OneVarint {
  template <class E>
  static void put(E& e, EncodeContext& ctx, Id v) {
    e.varint(defined_id_code(v, ctx.*Defined));
  }
  template <class C>
  static void get(C& c, DecodeContext& ctx, const char* what, Id& v) {
    v = read_defined_id<Id>(c, ctx.*Known, what);
  }
};
template <>
struct Codec<field::opt_string> : ReferenceCodec<StringId, &EncodeContext::strings, &DecodeContext::strings> {};
template <>
struct Codec<field::opt_stack> : ReferenceCodec<StackId, &EncodeContext::stacks, &DecodeContext::stacks> {};

// The count, then each address as a delta from the one before (the first from the running
// address, which stays as it was). The writer keeps the first kMaxTouched.
template <>
struct Codec<field::touched> {
  static constexpr std::size_t max_bytes = kMaxVarintBytes;  // the count
  static std::size_t extra_bytes(std::span<const std::uint64_t> v) {
    return std::min(v.size(), kMaxTouched) * kMaxVarintBytes;
  }
  template <class E>
  static void put(E& e, EncodeContext& ctx, std::span<const std::uint64_t> v) {
    const auto kept = v.first(std::min(v.size(), kMaxTouched));
    e.varint(kept.size());
    std::uint64_t prev = ctx.state.address;
    for (const std::uint64_t address : kept) {
      e.varint(delta(address, prev));
      prev = address;
    }
  }
  template <class C>
  static void get(C& c, DecodeContext& ctx, const char*, std::span<const std::uint64_t>& v) {
    const std::size_t count = c.count("touched buffer count", 1);
    ctx.touched.clear();
    std::uint64_t address = ctx.state.address;
    for (std::size_t i = 0; i < count; ++i) {
      address = undelta(address, c.varint("touched address"));
      ctx.touched.push_back(address);
    }
    v = ctx.touched;
  }
};

template <class Enum, Enum Last>
struct Codec<field::checked_enum<Enum, Last>> : FixedSize {
  static constexpr std::size_t max_bytes = 1;
  template <class E>
  static void put(E& e, EncodeContext&, Enum v) {
    e.u8(static_cast<std::uint8_t>(v));
  }
  template <class C>
  static void get(C& c, DecodeContext&, const char* what, Enum& v) {
    const std::uint8_t* at = c.p;
    const std::uint8_t value = c.u8(what);
    if (value > static_cast<std::uint8_t>(Last)) c.fail(at, fmt::format("unknown {} {}", what, value));
    v = static_cast<Enum>(value);
  }
};

// A flags byte: bits outside `known` are corrupt.
template <class C>
std::uint8_t read_flags(C& c, const char* what, std::uint8_t known) {
  const std::uint8_t* at = c.p;
  const std::uint8_t flags = c.u8(what);
  if ((flags & ~known) != 0) c.fail(at, fmt::format("unknown flag bits 0x{:02x}", flags));
  return flags;
}

template <>
struct Codec<field::async_flag> : FixedSize {
  static constexpr std::size_t max_bytes = 1;
  template <class E>
  static void put(E& e, EncodeContext&, bool async) {
    e.u8(async ? kAsyncFlag : 0);
  }
  template <class C>
  static void get(C& c, DecodeContext&, const char* what, bool& async) {
    async = (read_flags(c, what, kAsyncFlag) & kAsyncFlag) != 0;
  }
};

template <>
struct Codec<field::copy_flags> : FixedSize {
  static constexpr std::size_t max_bytes = 1;
  template <class E>
  static void put(E& e, EncodeContext&, CopyKind kind, bool async) {
    e.u8(static_cast<std::uint8_t>((static_cast<std::uint8_t>(kind) & kCopyKindMask) | (async ? kAsyncFlag : 0)));
  }
  template <class C>
  static void get(C& c, DecodeContext&, const char* what, CopyKind& kind, bool& async) {
    const std::uint8_t* at = c.p;
    const std::uint8_t flags = read_flags(c, what, kCopyKindMask | kAsyncFlag);
    async = (flags & kAsyncFlag) != 0;
    const auto value = static_cast<std::uint8_t>(flags & kCopyKindMask);
    if (value > static_cast<std::uint8_t>(CopyKind::h2h)) c.fail(at, fmt::format("unknown copy kind {}", value));
    kind = static_cast<CopyKind>(value);
  }
};

// A graph launch's buffers and whether they are all known, at the end of its record: a touched
// list, then a flags byte (bit 0: opaque). A record that ends before them (written before they
// existed) reads as nothing known.
template <>
struct Codec<field::graph_buffers> {
  static constexpr std::size_t max_bytes = Codec<field::touched>::max_bytes + 1;
  static std::size_t extra_bytes(std::span<const std::uint64_t> touched, bool) {
    return Codec<field::touched>::extra_bytes(touched);
  }
  template <class E>
  static void put(E& e, EncodeContext& ctx, std::span<const std::uint64_t> touched, bool nodes_read) {
    Codec<field::touched>::put(e, ctx, touched);
    e.u8(nodes_read ? 0 : kGraphOpaqueFlag);
  }
  template <class C>
  static void get(C& c, DecodeContext& ctx, const char* what, std::span<const std::uint64_t>& touched,
                  bool& nodes_read) {
    touched = {};
    nodes_read = false;
    if (c.left() == 0) return;
    Codec<field::touched>::get(c, ctx, what, touched);
    nodes_read = (read_flags(c, "graph launch flags", kGraphOpaqueFlag) & kGraphOpaqueFlag) == 0;
  }
};

// The event header: seq, time and thread, each a delta from the running value it becomes.
template <class E>
void put_header(E& e, EncodeContext& ctx, const EventHeader& h) {
  DeltaState& s = ctx.state;
  e.varint(delta(h.seq, s.seq));
  e.varint(delta(h.time_ns, s.time_ns));
  e.varint(delta(std::uint64_t{h.thread.value()}, s.thread));
  s.seq = h.seq;
  s.time_ns = h.time_ns;
  s.thread = h.thread.value();
}

template <class C>
void get_header(C& c, DecodeContext& ctx, EventHeader& h) {
  DeltaState& s = ctx.state;
  s.seq = h.seq = undelta(s.seq, c.varint("seq"));
  s.time_ns = h.time_ns = undelta(s.time_ns, c.varint("timestamp"));
  const std::uint8_t* at = c.p;
  const std::uint64_t thread = undelta(s.thread, c.varint("thread"));
  if (thread > std::numeric_limits<std::uint32_t>::max()) {
    c.fail(at, fmt::format("thread id {} does not fit 32 bits", thread));
  }
  s.thread = thread;
  h.thread = ThreadId{static_cast<std::uint32_t>(thread)};
}

// One event's payload: the header, then its fields in the order of events.def.
template <class E, class Event>
void encode_event(E& e, EncodeContext& ctx, const Event& event) {
  put_header(e, ctx, event.header);
  EventTraits<Event>::for_each_field(
      event, [&](auto field, const char*, const auto&... member) { Codec<decltype(field)>::put(e, ctx, member...); });
}

template <class C, class Event>
void decode_event(C& c, DecodeContext& ctx, Event& event) {
  get_header(c, ctx, event.header);
  EventTraits<Event>::for_each_field(event, [&](auto field, const char* what, auto&... member) {
    Codec<decltype(field)>::get(c, ctx, what, member...);
  });
}

// The most bytes an event's payload takes whatever its values (variable parts aside).
template <class Event>
constexpr std::size_t fixed_bound() {
  std::size_t n = kHeaderBound;
  Event event{};
  EventTraits<Event>::for_each_field(
      event, [&](auto field, const char*, const auto&...) { n += Codec<decltype(field)>::max_bytes; });
  return n;
}

// The most bytes this event's payload takes (a touched list adds to the fixed bound).
template <class Event>
std::size_t record_bound(const Event& event) {
  std::size_t n = fixed_bound<Event>();
  EventTraits<Event>::for_each_field(event, [&](auto field, const char*, const auto&... member) {
    n += Codec<decltype(field)>::extra_bytes(member...);
  });
  return n;
}

// Below 128, so the length prefix of a fixed-size record is one byte and the writer's hot path
// never moves a payload.
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  static_assert(fixed_bound<Type>() < 128, #Type ": a fixed-size record must stay below 128 bytes");
#include "memtool/trace/events.def"

}  // namespace memtool::trace::wire
