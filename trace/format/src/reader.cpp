// The trace reader: walks the records of a v1 trace held in memory (mmap or bytes), checks
// every field against the format's rules and the bytes that remain, and hands the decoded
// records to the visitor. Hostile input cannot make it crash, loop or allocate more than a
// small multiple of the input size: every count is capped by the bytes left in its record.
#include "memtool/trace/reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "delta_state.hpp"
#include "field_codecs.hpp"
#include "memtool/trace/input_error.hpp"
#include "memtool/trace/mapped_file.hpp"
#include "wire.hpp"

namespace memtool::trace {

namespace {

using wire::Tag;

constexpr std::uint64_t kProgressStep = std::uint64_t{16} << 20;
constexpr std::size_t kMinFrameBytes = 4;  // ip, function, file, line: one byte each at least
constexpr std::size_t kMaxRecordBytes = 1 + wire::kMaxVarintBytes + wire::kMaxPayloadBytes;

class TraceParser {
 public:
  TraceParser(std::span<const std::byte> bytes, std::string name, EventVisitor& visitor,
              const TraceReadOptions& options)
      : data_(reinterpret_cast<const std::uint8_t*>(bytes.data())),
        size_(bytes.size()),
        name_(std::move(name)),
        visitor_(visitor),
        options_(options) {}

  TraceReadResult run() {
    if (!read_header()) {  // a cut inside the header line: an empty trace, still being born
      result_.truncated = true;
      result_.torn_bytes = size_;
      return result_;
    }
    result_.version = wire::kVersion;
    result_.bytes_read = pos_;
    while (pos_ < size_) {
      if (!read_record()) break;
      result_.bytes_read = pos_;
      if (options_.progress && pos_ >= next_progress_) {
        options_.progress(pos_, size_);
        next_progress_ = pos_ + kProgressStep;
      }
    }
    result_.truncated = !result_.clean_end;
    result_.torn_bytes = unfinished_bytes_ ? *unfinished_bytes_ : size_ - result_.bytes_read;
    if (options_.progress) options_.progress(result_.bytes_read, size_);
    return result_;
  }

 private:
  // A bounded view of one record's payload; every read checks the payload's end.
  struct Cursor {
    const TraceParser& parser;
    const std::uint8_t* p;
    const std::uint8_t* end;

    [[nodiscard]] std::uint64_t offset() const { return parser.offset_of(p); }
    [[nodiscard]] std::size_t left() const { return static_cast<std::size_t>(end - p); }

    [[noreturn]] void fail(const std::uint8_t* at, const std::string& message) const {
      parser.fail(parser.offset_of(at), message);
    }

    std::uint8_t u8(const char* what) {
      if (p == end) fail(p, fmt::format("record ends before its {}", what));
      return *p++;
    }

    std::uint64_t varint(const char* what) {
      // Most fields are one or two bytes: take them without the general loop.
      if (p != end && *p < 0x80) return *p++;
      if (end - p >= 2 && p[1] < 0x80) {
        const std::uint64_t v = (p[0] & 0x7fu) | (std::uint64_t{p[1]} << 7);
        p += 2;
        return v;
      }
      return varint_slow(what);
    }

    std::uint64_t varint_slow(const char* what) {
      const std::uint8_t* start = p;
      std::uint64_t v = 0;
      for (unsigned i = 0; i < wire::kMaxVarintBytes; ++i) {
        if (p == end) fail(start, fmt::format("record ends inside its {}", what));
        const std::uint8_t b = *p++;
        if (i == wire::kMaxVarintBytes - 1 && b > 1) {
          fail(start, fmt::format("{} varint overflows 64 bits", what));
        }
        v |= std::uint64_t{b & 0x7fu} << (7 * i);
        if ((b & 0x80) == 0) return v;
      }
      fail(start, fmt::format("{} varint overflows 64 bits", what));  // unreachable
    }

    std::uint32_t u32(const char* what) {
      const std::uint8_t* start = p;
      const std::uint64_t v = varint(what);
      if (v > std::numeric_limits<std::uint32_t>::max()) {
        fail(start, fmt::format("{} {} does not fit 32 bits", what, v));
      }
      return static_cast<std::uint32_t>(v);
    }

    std::string_view string(const char* what) {
      const std::uint8_t* start = p;
      const std::uint64_t n = varint(what);
      if (n > left()) {
        fail(start, fmt::format("{} of {} bytes runs past its record ({} bytes left)", what, n, left()));
      }
      const std::string_view s(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
      p += n;
      return s;
    }

    // Reads a count of items that take at least `min_bytes` each: a count the record cannot
    // hold is corruption, so no caller ever reserves memory for it.
    std::size_t count(const char* what, std::size_t min_bytes) {
      const std::uint8_t* start = p;
      const std::uint64_t n = varint(what);
      if (n > left() / min_bytes) {
        fail(start, fmt::format("absurd {} {}: the record has {} bytes left", what, n, left()));
      }
      return static_cast<std::size_t>(n);
    }
  };

  [[noreturn]] void fail(std::uint64_t offset, const std::string& message) const {
    throw InputError(name_, offset, message);
  }
  [[nodiscard]] std::uint64_t offset_of(const std::uint8_t* p) const { return static_cast<std::uint64_t>(p - data_); }

  // "MEMTOOL-TRACE <version>\n". False when the bytes end inside a valid-looking header.
  bool read_header() {
    const std::string_view magic = wire::kMagic;
    const std::size_t n = std::min(size_, magic.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (data_[i] != static_cast<std::uint8_t>(magic[i])) {
        fail(0, "not a memtool trace (bad magic; expected \"MEMTOOL-TRACE <version>\")");
      }
    }
    if (size_ < magic.size()) return false;
    std::uint64_t version = 0;
    std::size_t i = magic.size();
    for (;; ++i) {
      if (i == size_) return false;
      const std::uint8_t c = data_[i];
      if (c == '\n') break;
      if (c < '0' || c > '9' || i - magic.size() == wire::kMaxVersionDigits) {
        fail(i, "bad version line in the trace header");
      }
      version = version * 10 + (c - '0');
    }
    if (i == magic.size()) fail(i, "the trace header has no version number");
    if (version != wire::kVersion) {
      fail(magic.size(),
           fmt::format("unsupported trace format version {} (this reader reads {})", version, wire::kVersion));
    }
    pos_ = i + 1;
    return true;
  }

  // One record at pos_. False when the bytes end inside it (the caller stops, truncated).
  bool read_record() {
    const std::size_t start = pos_;
    const std::uint8_t tag = data_[start];
    if (result_.clean_end) fail(start, "data after the end-of-trace record");
    if (tag == 0) {
      // A mapped writer (TraceWriter::Options::map_file) that died: zeros past its last record,
      // or one record it never finished (it stores the tag last) and then zeros. Anything
      // longer than one record before the zeros is corruption.
      std::size_t last = size_;
      while (last > start && data_[last - 1] == 0) --last;
      if (last - start > kMaxRecordBytes) fail(start, "invalid record tag 0");
      unfinished_bytes_ = last - start;
      return false;
    }
    // Length prefix: running out of bytes is a cut; a malformed varint is corruption.
    std::uint64_t length = 0;
    std::size_t p = start + 1;
    for (unsigned i = 0;; ++i) {  // usually one byte: every fixed-size record is < 128
      if (p == size_) return false;
      const std::uint8_t b = data_[p++];
      if (i == wire::kMaxVarintBytes - 1 && b > 1) fail(start + 1, "record length overflows");
      length |= std::uint64_t{b & 0x7fu} << (7 * i);
      if ((b & 0x80) == 0) break;
    }
    if (length > wire::kMaxPayloadBytes) {
      fail(start + 1, fmt::format("record length {} exceeds the limit of {} bytes", length, wire::kMaxPayloadBytes));
    }
    if (length > size_ - p) return false;
    Cursor c{*this, data_ + p, data_ + p + length};
    try {
      decode(static_cast<Tag>(tag), c);
    } catch (const EventRejected& rejected) {  // the visitor cannot take this event
      fail(start, fmt::format("event seq {}: {}", state_.seq, rejected.what()));
    }
    pos_ = p + static_cast<std::size_t>(length);
    return true;
  }

  void decode(Tag tag, Cursor& c) {
    switch (tag) {
      case Tag::metadata: {
        const std::string_view key = c.string("metadata key");
        const std::string_view value = c.string("metadata value");
        visitor_.on_metadata(key, value);
        break;
      }
      case Tag::string_def:
        decode_string(c);
        break;
      case Tag::stack_def:
        decode_stack(c);
        break;
      case Tag::module:
        decode_module(c);
        break;
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  case Tag::name:                                          \
    decode_event<Type>(c, &EventVisitor::on_##name);       \
    break;
#include "memtool/trace/events.def"
      case Tag::gpu_time:
        decode_gpu_time(c);
        break;
      case Tag::end:
        decode_end(c);
        return;  // not counted as a record
      default:
        break;  // a record type from a newer writer: skipped whole
    }
    ++result_.records;
  }

  void decode_string(Cursor& c) {
    const std::uint8_t* at = c.p;
    const std::uint64_t id = c.varint("string id");
    if (id != strings_) {
      c.fail(at, fmt::format("string id {} defined out of order (expected {})", id, strings_));
    }
    if (strings_ == StringId::kInvalid - 1) c.fail(at, "too many strings");
    const std::string_view text = c.string("string");
    ++strings_;
    visitor_.on_string(StringId{static_cast<std::uint32_t>(id)}, text);
  }

  void decode_stack(Cursor& c) {
    const std::uint8_t* at = c.p;
    const std::uint64_t id = c.varint("stack id");
    if (id != stacks_) {
      c.fail(at, fmt::format("stack id {} defined out of order (expected {})", id, stacks_));
    }
    if (stacks_ == StackId::kInvalid - 1) c.fail(at, "too many stacks");
    const std::size_t count = c.count("stack frame count", kMinFrameBytes);
    frames_.clear();
    std::uint64_t ip = 0;
    for (std::size_t i = 0; i < count; ++i) {
      StackFrame f;
      ip = wire::undelta(ip, c.varint("frame ip"));
      f.ip = ip;
      f.function = string_ref(c, "frame function");
      f.file = string_ref(c, "frame file");
      f.line = c.u32("frame line");
      frames_.push_back(f);
    }
    ++stacks_;
    visitor_.on_stack(StackId{static_cast<std::uint32_t>(id)}, frames_);
  }

  void decode_module(Cursor& c) {
    ModuleMapping m;
    m.start = c.varint("module start");
    m.end = wire::undelta(m.start, c.varint("module end"));
    m.file_offset = c.varint("module file offset");
    m.path = string_ref(c, "module path");
    visitor_.on_module(m);
  }

  // Every event: its fields decoded from the running state, which an event (not a note)
  // moves on; counted; delivered once all its fields checked out.
  template <class Event>
  void decode_event(Cursor& c, void (EventVisitor::*deliver)(const Event&)) {
    Event e;
    if constexpr (EventTraits<Event>::is_event) {
      wire::DecodeContext context{state_, strings_, stacks_, touched_};
      wire::decode_event(c, context, e);
      ++result_.events;
    } else {
      wire::DeltaState unchanged = state_;
      wire::DecodeContext context{unchanged, strings_, stacks_, touched_};
      wire::decode_event(c, context, e);
    }
    (visitor_.*deliver)(e);
  }

  StringId string_ref(Cursor& c, const char* what) { return wire::read_defined_id<StringId>(c, strings_, what); }

  // An enum stored in one byte read at `at`: a value past `last` is corrupt or from a newer writer.
  template <class Kind>
  static Kind checked_kind(Cursor& c, const std::uint8_t* at, std::uint8_t value, Kind last, const char* what) {
    if (value > static_cast<std::uint8_t>(last)) {
      c.fail(at, fmt::format("unknown {} {}", what, value));
    }
    return static_cast<Kind>(value);
  }

  void decode_gpu_time(Cursor& c) {
    GpuTimeRecord r;
    const std::uint8_t* at = c.p;
    const std::uint8_t flags = c.u8("gpu time flags");
    constexpr auto known =
        static_cast<std::uint8_t>(wire::kGpuKindMask | wire::kGpuCopyKindMask | wire::kGpuJoinedFlag);
    if ((flags & ~known) != 0) c.fail(at, fmt::format("unknown gpu time flag bits 0x{:02x}", flags));
    r.kind = checked_kind(c, at, static_cast<std::uint8_t>(flags & wire::kGpuKindMask), GpuWorkKind::memset,
                          "gpu work kind");
    r.copy_kind =
        checked_kind(c, at, static_cast<std::uint8_t>((flags & wire::kGpuCopyKindMask) >> wire::kGpuCopyKindShift),
                     CopyKind::h2h, "copy kind");
    const std::uint64_t seq = c.varint("gpu time event seq");
    if ((flags & wire::kGpuJoinedFlag) != 0) {
      state_.gpu_seq = r.event_seq = wire::undelta(state_.gpu_seq, seq);
      if (r.event_seq == GpuTimeRecord::kNoEvent) c.fail(at, "gpu time names event seq 2^64-1");
    }
    state_.gpu_start = r.start_ns = wire::undelta(state_.gpu_start, c.varint("gpu start"));
    const std::uint8_t* duration_at = c.p;
    const std::uint64_t duration = c.varint("gpu duration");
    if (duration > ~r.start_ns) c.fail(duration_at, "gpu time ends past 2^64 ns");
    r.end_ns = r.start_ns + duration;
    r.device = c.u32("gpu device");
    r.stream = c.u32("gpu stream");
    r.kernel = string_ref(c, "gpu kernel name");
    r.bytes = c.varint("gpu bytes");
    visitor_.on_gpu_time(r);
  }

  // The writer's own counts: a mismatch means records were lost or forged.
  void decode_end(Cursor& c) {
    const std::uint8_t* at = c.p;
    const std::array<std::uint64_t, 4> said{c.varint("record count"), c.varint("event count"), c.varint("string count"),
                                            c.varint("stack count")};
    const std::array<std::uint64_t, 4> seen{result_.records, result_.events, strings_, stacks_};
    static constexpr std::array<const char*, 4> kNames{"records", "events", "strings", "stacks"};
    for (std::size_t i = 0; i < said.size(); ++i) {
      if (said[i] != seen[i]) {
        c.fail(at,
               fmt::format("the end-of-trace record counts {} {} but the file holds {}", said[i], kNames[i], seen[i]));
      }
    }
    result_.clean_end = true;
  }

  const std::uint8_t* data_;
  std::size_t size_;
  std::string name_;
  EventVisitor& visitor_;
  const TraceReadOptions& options_;

  std::size_t pos_ = 0;
  // Set when the bytes stop at a zero tag: the extent of the unfinished record before the zeros.
  std::optional<std::size_t> unfinished_bytes_;
  std::uint64_t next_progress_ = kProgressStep;
  wire::DeltaState state_;
  std::uint64_t strings_ = 0;
  std::uint64_t stacks_ = 0;
  TraceReadResult result_;
  std::vector<StackFrame> frames_;      // reused: no allocation per record once warm
  std::vector<std::uint64_t> touched_;  // reused
};

}  // namespace

bool is_trace_bytes(std::span<const std::byte> bytes) {
  const std::string_view magic = wire::kMagic;
  return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

bool is_trace_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::array<std::byte, wire::kMagic.size()> head{};
  std::size_t got = 0;
  while (got < head.size()) {
    const ssize_t r = ::read(fd, head.data() + got, head.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fd);
  return is_trace_bytes(std::span<const std::byte>(head.data(), got));
}

TraceReadResult read_trace_bytes(std::span<const std::byte> bytes, std::string display_name, EventVisitor& visitor,
                                 const TraceReadOptions& options) {
  return TraceParser(bytes, std::move(display_name), visitor, options).run();
}

TraceReadResult read_trace(const std::string& path, EventVisitor& visitor, const TraceReadOptions& options) {
  // A stream that does not start like a trace is refused after its head, not read whole.
  const MappedFile file(path, [&path](std::string_view head) {
    const std::string_view magic = wire::kMagic;
    if (!std::string_view(head).starts_with(magic.substr(0, std::min(head.size(), magic.size())))) {
      throw InputError(path, 0, "not a memtool trace (bad magic; expected \"MEMTOOL-TRACE <version>\")");
    }
  });
  return read_trace_bytes(file.bytes(), path, visitor, options);
}

}  // namespace memtool::trace
