// TraceWriter: encodes events into one preallocated buffer under a short lock and hands full
// buffers to write(2). Used inside the preload library, so nothing here throws, uses iostreams
// or allocates per event: the only allocations are the buffer (at open) and the intern tables
// (once per distinct string or stack). Layout of every record: docs/trace-format.md.
// With Options::map_file the buffer is a shared window of the file (writer.hpp): a record's tag
// is stored last, so a process that dies inside a record leaves a zero where its tag goes, and
// the bytes past the last record are always zeros.
#include "memtool/trace/writer.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "delta_state.hpp"
#include "field_codecs.hpp"
#include "wire.hpp"

namespace memtool::trace {

namespace {

using wire::Tag;

// Compile-time bounds of the payloads of the records that are not events (events: their
// codecs' bounds, field_codecs.hpp). Below 128, so the length prefix is one byte and the hot
// path never moves a payload.
constexpr std::size_t kV = wire::kMaxVarintBytes;
constexpr std::size_t kGpuTimeBound = 1 + 7 * kV;  // flags seq start duration device stream kernel bytes
constexpr std::size_t kEndBound = 4 * kV;
static_assert(kGpuTimeBound < 128 && kEndBound < 128);

constexpr std::size_t kMinBufferBytes = 4096;

// FNV-1a over the fields of the frames (not their padding bytes).
std::uint64_t hash_frames(std::span<const StackFrame> frames) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ULL;
  };
  mix(frames.size());
  for (const StackFrame& f : frames) {
    mix(f.ip);
    mix(f.function.value());
    mix(f.file.value());
    mix(f.line);
  }
  return h;
}

bool same_frame(const StackFrame& a, const StackFrame& b) {
  return a.ip == b.ip && a.function == b.function && a.file == b.file && a.line == b.line;
}

struct TransparentStringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct TraceWriter::Impl {
  // The lock around one call, or nothing when the caller serialises every call.
  class Guard {
   public:
    explicit Guard(const Impl& w) : mutex_(w.locking ? &w.mutex : nullptr) {
      if (mutex_ != nullptr) mutex_->lock();
    }
    ~Guard() {
      if (mutex_ != nullptr) mutex_->unlock();
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    std::mutex* mutex_;
  };

  // What every event touches comes first, in as few cache lines as it fits.
  // Set in a forked child: every entry point checks it before taking the (possibly
  // forever-locked) mutex.
  std::atomic<bool> abandoned{false};
  bool locking = true;  // false: Options::caller_serialises
  bool failed = false;
  bool closed = false;
  int fd = -1;
  int error = 0;  // errno of the I/O error that set `failed`
  std::size_t used = 0;
  std::size_t capacity = 0;
  std::byte* data = nullptr;  // the buffer, or the mapped window of the file
  std::unique_ptr<std::byte[]> buffer;
  bool mapped = false;                         // data is a window of the file at offset bytes_out (map_file)
  std::size_t window_bytes = 0;                // the size of a window (Options::buffer_bytes, whole pages)
  std::uint64_t file_cap = ~std::uint64_t{0};  // blocks are never reserved past this offset
  wire::DeltaState state;
  std::uint64_t records = 0;  // every record but the end record
  std::uint64_t events = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t limit = ~std::uint64_t{0};  // bytes a record may reach: Options::max_bytes less the end record

  mutable std::mutex mutex;
  bool limit_reached = false;
  void (*on_limit)(void*, std::uint64_t) = nullptr;
  void* on_limit_context = nullptr;
  bool leak_on_destroy = false;  // the child could not prove the state consistent
  std::uint32_t strings = 0;
  std::uint32_t stacks = 0;

  std::unordered_map<std::string, std::uint32_t, TransparentStringHash, std::equal_to<>> string_ids;
  // Stacks: hash → ids; the frames of stack i are stack_frames[stack_spans[i]].
  std::unordered_multimap<std::uint64_t, std::uint32_t> stack_ids;
  std::vector<StackFrame> stack_frames;
  std::vector<std::pair<std::size_t, std::size_t>> stack_spans;

  [[nodiscard]] bool usable() const { return !failed && !closed && fd >= 0; }

  bool write_out(const std::byte* from, std::size_t n) {
    while (n != 0) {
      const ssize_t r = ::write(fd, from, n);
      if (r <= 0) {  // 0 for a non-empty write would loop forever: treat it as an error
        if (r < 0 && errno == EINTR) continue;
        failed = true;
        error = r < 0 ? errno : EIO;
        return false;
      }
      from += r;
      n -= static_cast<std::size_t>(r);
      bytes_out += static_cast<std::uint64_t>(r);
    }
    return true;
  }

  bool flush_locked() {
    if (failed || fd < 0) return false;
    if (mapped) return true;  // every record is in the file already
    const std::size_t n = used;
    used = 0;
    return write_out(data, n);
  }

  // Mapped: the next window, from the page holding the write position, with room for `need`
  // bytes; its blocks reserved first, so a full disk fails here and never as SIGBUS on a store.
  bool move_window(std::size_t need) {
    if (failed || fd < 0) return false;
    static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t position = bytes_out + used;
    const std::uint64_t start = position / page * page;
    const auto offset = static_cast<std::size_t>(position - start);
    std::uint64_t size = std::max<std::uint64_t>(window_bytes, offset + need);
    size = (size + page - 1) / page * page;
    if (file_cap > start && size > file_cap - start) size = std::max<std::uint64_t>(file_cap - start, offset + need);
    unmap_window();
    int err = ::fallocate(fd, 0, static_cast<off_t>(start), static_cast<off_t>(size));
    void* window = MAP_FAILED;
    if (err == 0) {
      window = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
      if (window == MAP_FAILED) err = errno;
    } else {
      err = errno;
    }
    bytes_out = start;
    used = offset;
    if (window == MAP_FAILED) {
      failed = true;
      error = err;
      return false;
    }
    data = static_cast<std::byte*>(window);
    capacity = static_cast<std::size_t>(size);
    return true;
  }

  void unmap_window() {
    if (mapped && data != nullptr) ::munmap(data, capacity);
    if (mapped) {
      data = nullptr;
      bytes_out += used;  // the window's records stay counted; the position is kept
      used = 0;
      capacity = 0;
    }
  }

  // Room for a record of `need` bytes after `used`.
  bool make_room(std::size_t need) { return mapped ? move_window(need) : flush_locked(); }

  // Streams an oversized record through the buffer, flushing whenever it fills.
  struct StreamingEncoder {
    Impl& w;

    bool room(std::size_t n) {
      if (w.failed) return false;
      return w.capacity - w.used >= n || w.flush_locked();  // never mapped: emit moves the window
    }
    void u8(std::uint8_t v) {
      if (room(1)) w.buffer[w.used++] = std::byte{v};
    }
    void varint(std::uint64_t v) {
      if (!room(wire::kMaxVarintBytes)) return;
      wire::DirectEncoder e{w.data + w.used};
      e.varint(v);
      w.used = static_cast<std::size_t>(e.pos - w.data);
    }
    void bytes(const void* data, std::size_t n) {
      const auto* src = static_cast<const std::byte*>(data);
      while (n != 0) {
        if (!room(1)) return;
        const std::size_t chunk = std::min(n, w.capacity - w.used);
        std::memcpy(w.data + w.used, src, chunk);
        w.used += chunk;
        src += chunk;
        n -= chunk;
      }
    }
  };

  // Appends one record: tag, varint payload length, payload from `body`. `bound` is an upper
  // bound of the payload size. Caller holds the lock and checked usable().
  // Returns whether the record was written (not: the size limit ended the trace first, or an
  // I/O error).
  template <class Body>
  bool emit(Tag tag, std::size_t bound, const Body& body) {
    const std::size_t len_reserve = wire::varint_size(bound);
    const std::size_t need = 1 + len_reserve + bound;
    if (bytes_out + used + need > limit) {
      end_at_limit();
      return false;
    }
    if (mapped || need <= capacity) {
      if (used + need > capacity && !make_room(need)) return false;
      std::byte* start = data + used;
      std::byte* payload = start + 1 + len_reserve;
      wire::DirectEncoder e{payload};
      body(e);
      const auto len = static_cast<std::size_t>(e.pos - payload);
      std::byte* end = nullptr;
      if (len_reserve == 1) {  // fixed-size records: bound < 128, so is len
        start[1] = std::byte{static_cast<std::uint8_t>(len)};
        end = payload + len;
      } else {
        wire::DirectEncoder l{start + 1};
        l.varint(len);
        if (l.pos != payload) {
          std::memmove(l.pos, payload, len);
          std::memset(l.pos + len, 0, static_cast<std::size_t>(payload - l.pos));  // past the record: zeros
        }
        end = l.pos + len;
      }
      // The tag last: in a mapped file, a record whose tag is still zero was never finished.
      std::atomic_signal_fence(std::memory_order_release);
      start[0] = std::byte{static_cast<std::uint8_t>(tag)};
      used = static_cast<std::size_t>(end - data);
    } else {
      wire::CountingEncoder c;
      body(c);
      StreamingEncoder s{*this};
      s.u8(static_cast<std::uint8_t>(tag));
      s.varint(c.size);
      body(s);
      if (failed) return false;
    }
    ++records;
    return true;
  }

  // The end record, the last flush, the file closed. Caller holds the lock.
  void finish_locked() {
    if (usable()) {
      const std::uint64_t counted = records;
      emit(Tag::end, kEndBound, [&](auto& e) {
        e.varint(counted);
        e.varint(events);
        e.varint(strings);
        e.varint(stacks);
      });
      records = counted;  // the end record does not count itself
      flush_locked();
    }
    if (mapped) {  // the reserved tail past the end record goes
      unmap_window();
      if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(bytes_out)) != 0 && !failed) {
        failed = true;
        error = errno;
      }
    }
    if (fd >= 0 && ::close(fd) != 0 && errno != EINTR) {
      failed = true;
      error = errno;
    }
    fd = -1;
    closed = true;
    if (!mapped) data = nullptr;
    buffer.reset();
  }

  void end_at_limit() {
    limit = ~std::uint64_t{0};  // the end record always fits: its bytes were kept back
    limit_reached = true;
    finish_locked();
    if (on_limit != nullptr) on_limit(on_limit_context, events);
  }

  // Ids this writer never defined would make the file unreadable: they travel as "none".
  [[nodiscard]] std::uint64_t string_ref(StringId id) const { return wire::defined_id_code(id, strings); }

  // Every event: check, lock, encode from the running state, emit; an event (not a note) then
  // moves the running state on and is counted. The body starts from the running state each
  // time it runs (twice for a record larger than the buffer), so it can never advance it twice.
  template <class Event>
  void write_event(const Event& event) {
    if (abandoned.load(std::memory_order_relaxed)) return;
    const Guard lock(*this);
    if (!usable()) return;
    wire::DeltaState next;
    const bool written = emit(Tag{EventTraits<Event>::tag}, wire::record_bound(event), [&](auto& e) {
      next = state;
      wire::EncodeContext context{next, strings, stacks};
      wire::encode_event(e, context, event);
    });
    if (written && EventTraits<Event>::is_event) {
      state = next;
      ++events;
    }
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TraceWriter::~TraceWriter() {
  if (impl_ == nullptr) return;
  if (impl_->abandoned.load(std::memory_order_relaxed)) {
    if (impl_->leak_on_destroy) (void)impl_.release();
    return;
  }
  close();
}

std::unique_ptr<TraceWriter> TraceWriter::open(const std::string& path, std::string* error) {
  return open(path, Options{}, error);
}

std::unique_ptr<TraceWriter> TraceWriter::open(const std::string& path, const Options& options, std::string* error) {
  auto fail = [&](const char* what, int err) -> std::unique_ptr<TraceWriter> {
    if (error != nullptr) {
      try {
        *error = path + ": " + what + ": " + std::strerror(err);
      } catch (...) {  // out of memory while reporting: the nullptr says enough
      }
    }
    return nullptr;
  };
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
  if (impl == nullptr) return fail("cannot create trace writer", ENOMEM);
  impl->capacity = std::max(options.buffer_bytes, kMinBufferBytes);
  impl->locking = !options.caller_serialises;
  if (options.max_bytes != 0) {
    // Room is kept for the end record (tag, length, payload), so the file never exceeds max_bytes.
    constexpr std::uint64_t kEndRecordBytes = 2 + kEndBound;
    impl->limit = options.max_bytes > kEndRecordBytes ? options.max_bytes - kEndRecordBytes : 0;
  }
  impl->on_limit = options.on_limit;
  impl->on_limit_context = options.on_limit_context;
  if (options.max_bytes != 0) impl->file_cap = options.max_bytes;
  // O_NONBLOCK: opening a FIFO for writing would wait for a reader, inside the program we
  // are preloaded into. Only a regular file is a trace (ENXIO: a FIFO nobody reads).
  // Not O_TRUNC: a trace another process writes is left whole (its lock, below).
  // A shared writable mapping needs a descriptor open for reading too.
  bool map_file = options.map_file;
  impl->fd = ::open(path.c_str(), (map_file ? O_RDWR : O_WRONLY) | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (impl->fd < 0 && map_file && errno == EACCES) {  // a file we may write but not read: no mapping
    map_file = false;
    impl->fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  }
  if (impl->fd < 0) {
    const int err = errno;
    return fail(err == ENXIO ? "cannot open for writing (a FIFO?)" : "cannot open for writing", err);
  }
  struct stat st {};
  if (::fstat(impl->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(impl->fd);
    if (error != nullptr) {
      try {
        *error = path + ": not a regular file (a FIFO, device or directory): a trace must be a file";
      } catch (...) {}
    }
    return nullptr;
  }
  // One writer per trace: the lock is the open file's (kept while it is open, also by forked
  // children, which write no trace); a file system without flock is taken as it is.
  if (::flock(impl->fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    ::close(impl->fd);
    if (options.in_use != nullptr) *options.in_use = true;
    return fail("another process is writing this trace (it holds its lock)", EWOULDBLOCK);
  }
  if (::ftruncate(impl->fd, 0) != 0) {
    const int err = errno;
    ::close(impl->fd);
    return fail("cannot truncate", err);
  }
  ::fcntl(impl->fd, F_SETFL, ::fcntl(impl->fd, F_GETFL) & ~O_NONBLOCK);
  // The header goes out at once: even a process that dies before the first flush leaves a
  // file that is recognisably a (truncated) trace.
  if (!impl->write_out(reinterpret_cast<const std::byte*>(wire::kHeaderV1.data()), wire::kHeaderV1.size())) {
    const int err = errno;
    ::close(impl->fd);
    return fail("cannot write the trace header", err);
  }
  if (map_file) {
    static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    impl->window_bytes = (impl->capacity + page - 1) / page * page;
    impl->mapped = true;
    if (!impl->move_window(0)) {  // no fallocate or mmap here: the buffer and write(2)
      impl->mapped = false;
      impl->capacity = std::max(options.buffer_bytes, kMinBufferBytes);
      impl->failed = false;
      impl->error = 0;
      impl->used = 0;
      impl->bytes_out = wire::kHeaderV1.size();
      if (::ftruncate(impl->fd, static_cast<off_t>(impl->bytes_out)) != 0) {
        const int err = errno;
        ::close(impl->fd);
        return fail("cannot truncate", err);
      }
    }
  }
  if (!impl->mapped) {
    impl->buffer.reset(new (std::nothrow) std::byte[impl->capacity]);
    if (impl->buffer == nullptr) {
      ::close(impl->fd);
      return fail("cannot allocate the trace buffer", ENOMEM);
    }
    impl->data = impl->buffer.get();
  }
  std::unique_ptr<TraceWriter> writer(new (std::nothrow) TraceWriter(std::move(impl)));
  if (writer == nullptr) return fail("cannot create trace writer", ENOMEM);
  return writer;
}

StringId TraceWriter::intern(std::string_view text) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return StringId{};
  text = text.substr(0, wire::kMaxStringBytes);
  const Impl::Guard lock(w);
  if (auto it = w.string_ids.find(text); it != w.string_ids.end()) return StringId{it->second};
  if (!w.usable() || w.strings == StringId::kInvalid - 1) return StringId{};
  const std::uint32_t id = w.strings;
  try {
    w.string_ids.emplace(std::string(text), id);
  } catch (...) {  // out of memory: the caller gets "no name" rather than an exception
    return StringId{};
  }
  if (!w.emit(Tag::string_def, 2 * kV + text.size(), [&](auto& e) {
        e.varint(id);
        wire::put_string(e, text);
      })) {
    w.string_ids.erase(w.string_ids.find(text));  // not in the file: the id must not be used
    return StringId{};
  }
  ++w.strings;
  return StringId{id};
}

StackId TraceWriter::intern_stack(std::span<const StackFrame> frames) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return StackId{};
  frames = frames.first(std::min(frames.size(), wire::kMaxStackFrames));
  const std::uint64_t hash = hash_frames(frames);
  const Impl::Guard lock(w);
  for (auto [it, last] = w.stack_ids.equal_range(hash); it != last; ++it) {
    const auto [offset, count] = w.stack_spans[it->second];
    if (count == frames.size() &&
        std::equal(frames.begin(), frames.end(), w.stack_frames.begin() + static_cast<std::ptrdiff_t>(offset),
                   same_frame)) {
      return StackId{it->second};
    }
  }
  if (!w.usable() || w.stacks == StackId::kInvalid - 1) return StackId{};
  const std::uint32_t id = w.stacks;
  try {
    w.stack_spans.emplace_back(w.stack_frames.size(), frames.size());
    w.stack_frames.insert(w.stack_frames.end(), frames.begin(), frames.end());
    w.stack_ids.emplace(hash, id);
  } catch (...) {  // out of memory: undo what went in, the caller gets "no stack"
    w.stack_spans.resize(id);
    return StackId{};
  }
  const bool written = w.emit(Tag::stack_def, 2 * kV + frames.size() * 4 * kV, [&](auto& e) {
    e.varint(id);
    e.varint(frames.size());
    std::uint64_t prev_ip = 0;
    for (const StackFrame& f : frames) {
      e.varint(wire::delta(f.ip, prev_ip));
      prev_ip = f.ip;
      e.varint(w.string_ref(f.function));
      e.varint(w.string_ref(f.file));
      e.varint(f.line);
    }
  });
  if (!written) {  // not in the file: forget it, the id must not be used
    for (auto [it, last] = w.stack_ids.equal_range(hash); it != last; ++it) {
      if (it->second == id) {
        w.stack_ids.erase(it);
        break;
      }
    }
    w.stack_frames.resize(w.stack_spans[id].first);
    w.stack_spans.resize(id);
    return StackId{};
  }
  ++w.stacks;
  return StackId{id};
}

void TraceWriter::write_metadata(std::string_view key, std::string_view value) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  key = key.substr(0, wire::kMaxStringBytes);
  value = value.substr(0, wire::kMaxStringBytes);
  const Impl::Guard lock(w);
  if (!w.usable()) return;
  w.emit(Tag::metadata, 2 * kV + key.size() + value.size(), [&](auto& e) {
    wire::put_string(e, key);
    wire::put_string(e, value);
  });
}

void TraceWriter::write_module(const ModuleMapping& module) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  const Impl::Guard lock(w);
  if (!w.usable()) return;
  const std::uint64_t path = w.string_ref(module.path);
  w.emit(Tag::module, 4 * kV, [&](auto& e) {
    e.varint(module.start);
    e.varint(wire::delta(module.end, module.start));
    e.varint(module.file_offset);
    e.varint(path);
  });
}

#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  void TraceWriter::write(const Type& event) { impl_->write_event(event); }
#include "memtool/trace/events.def"

void TraceWriter::write(const GpuTimeRecord& record) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  const Impl::Guard lock(w);
  if (!w.usable()) return;
  std::uint64_t seq = 0;
  if (record.joined()) {
    seq = wire::delta(record.event_seq, w.state.gpu_seq);
    w.state.gpu_seq = record.event_seq;
  }
  const std::uint64_t start = wire::delta(record.start_ns, w.state.gpu_start);
  w.state.gpu_start = record.start_ns;
  const std::uint64_t duration = record.end_ns >= record.start_ns ? record.end_ns - record.start_ns : 0;
  const std::uint64_t kernel = w.string_ref(record.kernel);
  const auto flags = static_cast<std::uint8_t>(
      (static_cast<std::uint8_t>(record.kind) & wire::kGpuKindMask) |
      ((static_cast<std::uint8_t>(record.copy_kind) << wire::kGpuCopyKindShift) & wire::kGpuCopyKindMask) |
      (record.joined() ? wire::kGpuJoinedFlag : 0));
  w.emit(Tag::gpu_time, kGpuTimeBound, [&](auto& e) {
    e.u8(flags);
    e.varint(seq);
    e.varint(start);
    e.varint(duration);
    e.varint(record.device);
    e.varint(record.stream);
    e.varint(kernel);
    e.varint(record.bytes);
  });
}

bool TraceWriter::flush() {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return false;
  const Impl::Guard lock(w);
  if (w.fd < 0) return !w.failed;
  return w.flush_locked();
}

bool TraceWriter::close() {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return false;
  const Impl::Guard lock(w);
  if (w.closed) return !w.failed;
  w.finish_locked();
  return !w.failed;
}

void TraceWriter::abandon_after_fork() {
  Impl& w = *impl_;
  if (w.abandoned.exchange(true)) return;
  // Only this thread survived the fork. If another parent thread held the lock at that moment,
  // the tables may be half-updated: never touch (or free) them again.
  if (!w.mutex.try_lock()) {
    w.leak_on_destroy = true;
  } else {
    w.mutex.unlock();
    w.buffer.reset();  // the parent writes these records, not us
    w.used = 0;
  }
  if (w.mapped && w.data != nullptr) ::munmap(w.data, w.capacity);  // the parent's file: never written here
  w.data = nullptr;
  w.capacity = 0;
  if (w.fd >= 0) ::close(w.fd);  // our copy of the descriptor; the parent's stays open
  w.fd = -1;
}

std::uint64_t TraceWriter::records_written() const {
  const Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return w.records;
  const Impl::Guard lock(w);
  return w.records;
}

std::uint64_t TraceWriter::bytes_written() const {
  const Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return w.bytes_out;
  const Impl::Guard lock(w);
  return w.mapped ? w.bytes_out + w.used : w.bytes_out;
}

bool TraceWriter::mapped() const { return impl_->mapped; }

bool TraceWriter::limit_reached() const {
  const Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return w.limit_reached;
  const Impl::Guard lock(w);
  return w.limit_reached;
}

bool TraceWriter::failed() const {
  const Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return w.failed;
  const Impl::Guard lock(w);
  return w.failed;
}

int TraceWriter::error_number() const {
  const Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return w.error;
  const Impl::Guard lock(w);
  return w.error;
}

}  // namespace memtool::trace
