// Snapshot schema walk: device_traces → validated entries → events (see snapshot_walker.hpp).
//
// Two passes. The first decodes every entry of the chosen device, interns the frames of its
// allocations and computes the reserved-bytes figures; it is the only one that can fail, so a
// visitor never sees half a snapshot. The second delivers definitions, then events, pairing
// frees with live allocations so no allocation is freed twice.
#include "snapshot_walker.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/limits.hpp"

namespace memtool::trace::detail {
namespace {

enum class Action : std::uint8_t {
  alloc,
  free_requested,
  free_completed,
  legacy_free,
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  oom,
  snapshot,
  other,
};

Action parse_action(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, Action>, 10> kActions{{
      {"alloc", Action::alloc},
      {"free_requested", Action::free_requested},
      {"free_completed", Action::free_completed},
      {"free", Action::legacy_free},
      {"segment_alloc", Action::segment_alloc},
      {"segment_free", Action::segment_free},
      {"segment_map", Action::segment_map},
      {"segment_unmap", Action::segment_unmap},
      {"oom", Action::oom},
      {"snapshot", Action::snapshot},
  }};
  for (const auto& [name, action] : kActions) {
    if (name == text) return action;
  }
  return Action::other;
}

struct Entry {
  Action action = Action::other;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  std::uint64_t time_ns = 0;
  StackId stack;
  ValueRef ref = 0;  // where the entry is in the document, for messages
};

struct FrameKey {
  std::uint32_t function;
  std::uint32_t file;
  std::uint32_t line;
  friend bool operator==(const FrameKey&, const FrameKey&) = default;
};

struct StackKeyHash {
  std::size_t operator()(const std::vector<FrameKey>& frames) const noexcept {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const FrameKey& frame : frames) {
      for (std::uint32_t part : {frame.function, frame.file, frame.line}) {
        hash = (hash ^ part) * 0x100000001b3ULL;
      }
    }
    return static_cast<std::size_t>(hash);
  }
};

// What the walk keeps per distinct string and per distinct stack, beyond their frames: the
// interning maps' nodes, charged to the memory budget.
constexpr std::uint64_t kInternedStringBytes = 128;
constexpr std::uint64_t kInternedStackBytes = 160;

class SnapshotWalker {
 public:
  SnapshotWalker(const ValueTree& tree, std::size_t input_bytes, DecodeBudget& memory, const std::string& name)
      : tree_(tree),
        name_(name),
        input_bytes_(input_bytes),
        budget_(16 * static_cast<std::uint64_t>(input_bytes) + (1U << 20U)),
        memory_(memory) {}

  SnapshotImportStats run(ValueRef root, EventVisitor& visitor, const SnapshotImportOptions& options) {
    decode(root, options);
    if (options.progress) options.progress(input_bytes_, input_bytes_);  // decoded and validated
    deliver(visitor);
    return stats_;
  }

 private:
  [[noreturn]] void fail(ValueRef at, const std::string& message) const {
    throw InputError(name_, tree_.offset(at), message);
  }

  // Every container slot we look at costs one unit; legitimate snapshots use far less than
  // the budget, while memo references that multiply the walk of a small file run out of it.
  void charge(std::size_t units, ValueRef at) {
    work_ += units;
    if (work_ > budget_) {
      fail(at, "the document's shared references demand more work than its size allows");
    }
  }

  // What the walk keeps (entries, interned strings and stacks) and the events it will deliver
  // are charged to the memory budget the decoder started: one DUP'd entry dict costs a byte
  // of input but an entry, an event and what the visitor keeps for it.
  void charge_memory(std::uint64_t bytes, ValueRef at) {
    if (!memory_.try_charge(bytes)) fail(at, memory_.message());
  }

  bool is_sequence(ValueRef ref) const {
    return tree_.kind(ref) == ValueKind::list || tree_.kind(ref) == ValueKind::tuple;
  }

  // One pass over a dict's pairs, picking the keys we want; a later key overrides an earlier
  // one, as in Python and in nlohmann.
  template <std::size_t N>
  std::array<std::optional<ValueRef>, N> fields(ValueRef dict, const std::array<std::string_view, N>& keys) {
    std::array<std::optional<ValueRef>, N> found{};
    const auto items = tree_.items(dict);
    charge(items.size() / 2, dict);
    for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
      if (tree_.kind(items[i]) != ValueKind::text) continue;
      const std::string_view key = tree_.text(items[i]);
      for (std::size_t k = 0; k < N; ++k) {
        if (keys[k] == key) found[k] = items[i + 1];
      }
    }
    return found;
  }

  std::string where(std::size_t index) const { return fmt::format("device_traces[{}][{}]", stats_.device, index); }

  std::uint64_t unsigned_field(ValueRef value, const std::string& context, std::string_view field) {
    if (auto number = tree_.as_unsigned(value)) return *number;
    if (tree_.is_negative_integer(value)) {
      fail(value, fmt::format("{}: '{}' is negative", context, field));
    }
    if (tree_.kind(value) == ValueKind::big_integer) {
      fail(value, fmt::format("{}: '{}' is too large", context, field));
    }
    fail(value, fmt::format("{}: '{}' is a {}, expected a non-negative integer", context, field,
                            to_string(tree_.kind(value))));
  }

  std::uint64_t required(const std::optional<ValueRef>& value, ValueRef entry, const std::string& context,
                         std::string_view field) {
    if (!value) fail(entry, fmt::format("{}: '{}' is missing", context, field));
    return unsigned_field(*value, context, field);
  }

  std::uint64_t optional_field(const std::optional<ValueRef>& value, const std::string& context,
                               std::string_view field) {
    if (!value || tree_.kind(*value) == ValueKind::none) return 0;
    return unsigned_field(*value, context, field);
  }

  // --- pass 1 -----------------------------------------------------------------------------

  void decode(ValueRef root, const SnapshotImportOptions& options) {
    if (tree_.kind(root) != ValueKind::dict) {
      fail(root, fmt::format("a memory snapshot is a dict, this document is a {}", to_string(tree_.kind(root))));
    }
    const auto [traces, segments] = fields(root, std::array<std::string_view, 2>{"device_traces", "segments"});
    if (!traces) {
      fail(root, "the snapshot has no 'device_traces' (record it with torch.cuda.memory._record_memory_history)");
    }
    if (!is_sequence(*traces)) {
      fail(*traces, fmt::format("'device_traces' is a {}, expected a list", to_string(tree_.kind(*traces))));
    }
    const auto devices = tree_.items(*traces);
    charge(devices.size(), *traces);
    stats_.device_count = devices.size();
    for (std::size_t d = 0; d < devices.size(); ++d) {
      if (!is_sequence(devices[d])) {
        fail(devices[d],
             fmt::format("device_traces[{}] is a {}, expected a list", d, to_string(tree_.kind(devices[d]))));
      }
    }
    if (options.device) {
      if (*options.device >= devices.size()) {
        fail(*traces, fmt::format("device {} was asked for but the snapshot has {} device traces", *options.device,
                                  devices.size()));
      }
      stats_.device = *options.device;
    } else {
      for (std::size_t d = 0; d < devices.size(); ++d) {
        if (tree_.items(devices[d]).size() > tree_.items(devices[stats_.device]).size()) stats_.device = d;
      }
    }
    if (devices.empty()) return;

    const auto trace = tree_.items(devices[stats_.device]);
    stats_.entries = trace.size();
    charge_memory(trace.size() * sizeof(Entry), devices[stats_.device]);  // before reserving them
    entries_.reserve(trace.size());
    for (std::size_t i = 0; i < trace.size(); ++i) {
      charge(1, trace[i]);
      entries_.push_back(decode_entry(trace[i], i));
    }
    choose_free_source();
    for (const Entry& entry : entries_) {
      if (delivers_event(entry)) charge_memory(DecodeBudget::kDeliveredEventBytes, entry.ref);
    }
    compute_reserved(segments);
  }

  Entry decode_entry(ValueRef ref, std::size_t index) {
    if (tree_.kind(ref) != ValueKind::dict) {
      fail(ref, fmt::format("{} is a {}, expected a dict", where(index), to_string(tree_.kind(ref))));
    }
    static constexpr std::array<std::string_view, 6> kKeys{"action", "addr", "size", "stream", "time_us", "frames"};
    const auto [action, addr, size, stream, time_us, frames] = fields(ref, kKeys);
    if (!action) fail(ref, fmt::format("{}: 'action' is missing", where(index)));
    if (tree_.kind(*action) != ValueKind::text) {
      fail(*action, fmt::format("{}: 'action' is a {}, expected a str", where(index), to_string(tree_.kind(*action))));
    }
    Entry entry;
    entry.ref = ref;
    entry.action = parse_action(tree_.text(*action));
    const std::string context = fmt::format("{} ({})", where(index), tree_.text(*action).substr(0, 40));
    switch (entry.action) {
      case Action::alloc:
        entry.addr = required(addr, ref, context, "addr");
        entry.size = required(size, ref, context, "size");
        if (entry.size > kMaxAccountedBytes) {
          fail(*size,
               fmt::format("{}: 'size' {} is over 2^62 bytes, more than memtool accounts for", context, entry.size));
        }
        entry.stack = intern_frames(frames, context);
        break;
      case Action::free_requested:
      case Action::free_completed:
      case Action::legacy_free:
        entry.addr = required(addr, ref, context, "addr");
        entry.size = optional_field(size, context, "size");
        break;
      case Action::segment_alloc:
      case Action::segment_free:
      case Action::segment_map:
      case Action::segment_unmap:
        entry.addr = optional_field(addr, context, "addr");
        entry.size = required(size, ref, context, "size");
        if (entry.size > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          fail(*size, fmt::format("{}: 'size' is too large", context));
        }
        break;
      case Action::oom:
      case Action::snapshot:
      case Action::other:
        return entry;  // tolerated, not interpreted
    }
    entry.stream = optional_field(stream, context, "stream");
    const std::uint64_t micros = optional_field(time_us, context, "time_us");
    if (micros > std::numeric_limits<std::uint64_t>::max() / 1000) {
      fail(*time_us, fmt::format("{}: 'time_us' is too large", context));
    }
    entry.time_ns = micros * 1000;
    return entry;
  }

  StringId intern_string(ValueRef text) {
    if (auto it = string_by_value_.find(text); it != string_by_value_.end()) return it->second;
    charge_memory(kInternedStringBytes, text);
    const std::string_view content = tree_.text(text);
    auto [it, inserted] = string_ids_.try_emplace(content, StringId(static_cast<std::uint32_t>(strings_.size())));
    if (inserted) strings_.push_back(content);
    string_by_value_.emplace(text, it->second);
    return it->second;
  }

  std::uint32_t frame_text(const std::optional<ValueRef>& value, const std::string& context, std::size_t k,
                           std::string_view field) {
    if (!value || tree_.kind(*value) == ValueKind::none) return StringId::kInvalid;
    if (tree_.kind(*value) != ValueKind::text) {
      fail(*value,
           fmt::format("{}: frames[{}].{} is a {}, expected a str", context, k, field, to_string(tree_.kind(*value))));
    }
    return intern_string(*value).value();
  }

  StackId intern_frames(const std::optional<ValueRef>& frames, const std::string& context) {
    if (!frames || tree_.kind(*frames) == ValueKind::none) return StackId{};
    if (auto it = stack_by_value_.find(*frames); it != stack_by_value_.end()) return it->second;
    if (!is_sequence(*frames)) {
      fail(*frames, fmt::format("{}: 'frames' is a {}, expected a list", context, to_string(tree_.kind(*frames))));
    }
    const auto items = tree_.items(*frames);
    charge(items.size(), *frames);
    charge_memory(kInternedStackBytes + items.size() * (sizeof(FrameKey) + sizeof(StackFrame)), *frames);
    std::vector<FrameKey> key;
    key.reserve(items.size());
    static constexpr std::array<std::string_view, 3> kKeys{"filename", "line", "name"};
    for (std::size_t k = 0; k < items.size(); ++k) {
      if (tree_.kind(items[k]) != ValueKind::dict) {
        fail(items[k],
             fmt::format("{}: frames[{}] is a {}, expected a dict", context, k, to_string(tree_.kind(items[k]))));
      }
      const auto [filename, line, function] = fields(items[k], kKeys);
      FrameKey frame{};
      frame.file = frame_text(filename, context, k, "filename");
      frame.function = frame_text(function, context, k, "name");
      const std::uint64_t line_number = optional_field(line, fmt::format("{}: frames[{}]", context, k), "line");
      if (line_number > std::numeric_limits<std::uint32_t>::max()) {
        fail(*line, fmt::format("{}: frames[{}].line is too large", context, k));
      }
      frame.line = static_cast<std::uint32_t>(line_number);
      key.push_back(frame);
    }
    StackId id;
    if (!key.empty()) {
      auto [it, inserted] = stack_ids_.try_emplace(std::move(key), StackId(static_cast<std::uint32_t>(stacks_.size())));
      if (inserted) {
        std::vector<StackFrame> symbolic;
        symbolic.reserve(it->first.size());
        for (const FrameKey& frame : it->first) {
          symbolic.push_back(StackFrame{0, StringId(frame.function), StringId(frame.file), frame.line});
        }
        stacks_.push_back(std::move(symbolic));
      }
      id = it->second;
    }
    stack_by_value_.emplace(*frames, id);
    return id;
  }

  // The program's view of a free is free_requested (the tensor died); free_completed follows
  // once the stream's work is done. Older snapshots only have "free".
  void choose_free_source() {
    for (const Entry& entry : entries_) {
      switch (entry.action) {
        case Action::free_requested:
          ++stats_.free_requested;
          break;
        case Action::free_completed:
          ++stats_.free_completed;
          break;
        case Action::legacy_free:
          ++stats_.legacy_frees;
          break;
        default:
          break;
      }
    }
    if (stats_.free_requested > 0) {
      stats_.free_source = FreeSource::free_requested;
    } else if (stats_.free_completed > 0) {
      stats_.free_source = FreeSource::free_completed;
    } else if (stats_.legacy_frees > 0) {
      stats_.free_source = FreeSource::legacy_free;
    }
  }

  [[nodiscard]] Action free_action() const {
    switch (stats_.free_source) {
      case FreeSource::free_completed:
        return Action::free_completed;
      case FreeSource::legacy_free:
        return Action::legacy_free;
      default:
        return Action::free_requested;
    }
  }

  // At most one event per entry: its allocation, or its free when frees come from its action.
  [[nodiscard]] bool delivers_event(const Entry& entry) const {
    return entry.action == Action::alloc || (stats_.free_source != FreeSource::none && entry.action == free_action());
  }

  // Sum of total_size over the dump-time segments of the imported device; nullopt when the
  // snapshot has no usable `segments` (we only need them for a statistic, so no error).
  std::optional<std::uint64_t> dump_time_reserved(const std::optional<ValueRef>& segments) {
    if (!segments || !is_sequence(*segments)) return std::nullopt;
    const auto items = tree_.items(*segments);
    charge(items.size(), *segments);
    std::uint64_t total = 0;
    static constexpr std::array<std::string_view, 2> kKeys{"device", "total_size"};
    for (ValueRef segment : items) {
      if (tree_.kind(segment) != ValueKind::dict) return std::nullopt;
      const auto [device, total_size] = fields(segment, kKeys);
      if (!device || !total_size) return std::nullopt;
      const auto device_index = tree_.as_unsigned(*device);
      const auto bytes = tree_.as_unsigned(*total_size);
      if (!device_index || !bytes) return std::nullopt;
      if (*device_index != stats_.device) continue;
      if (__builtin_add_overflow(total, *bytes, &total)) return std::nullopt;
    }
    return total;
  }

  void compute_reserved(const std::optional<ValueRef>& segments) {
    std::int64_t level = 0;  // relative to the unknown level before the first entry
    std::int64_t lowest = 0;
    std::int64_t highest = 0;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const Entry& entry = entries_[i];
      const auto size = static_cast<std::int64_t>(entry.size);  // checked <= INT64_MAX
      bool overflow = false;
      switch (entry.action) {
        case Action::segment_alloc:
          ++stats_.segment_allocs;
          overflow = __builtin_add_overflow(level, size, &level);
          break;
        case Action::segment_map:
          ++stats_.segment_maps;
          overflow = __builtin_add_overflow(level, size, &level);
          break;
        case Action::segment_free:
          ++stats_.segment_frees;
          overflow = __builtin_sub_overflow(level, size, &level);
          break;
        case Action::segment_unmap:
          ++stats_.segment_unmaps;
          overflow = __builtin_sub_overflow(level, size, &level);
          break;
        case Action::oom:
          ++stats_.ooms;
          continue;
        case Action::snapshot:
          ++stats_.snapshot_markers;
          continue;
        case Action::other:
          ++stats_.other_actions;
          continue;
        default:
          continue;
      }
      if (overflow) {
        fail(entry.ref, fmt::format("{}: reserved bytes overflow 64 bits", where(i)));
      }
      if (level > highest) {
        highest = level;
        stats_.reserved_peak_seq = i;
      }
      if (level < lowest) lowest = level;
    }
    // The level before the trace is at least what keeps it non-negative throughout, and, when
    // the dump-time segments are known, what they hold minus the trace's net change.
    std::uint64_t start = static_cast<std::uint64_t>(0) - static_cast<std::uint64_t>(lowest);  // -lowest >= 0
    if (auto at_dump = dump_time_reserved(segments)) {
      stats_.reserved_start_from_segments = true;
      std::uint64_t derived = 0;
      bool valid = true;
      if (level >= 0) {
        valid = *at_dump >= static_cast<std::uint64_t>(level);
        if (valid) derived = *at_dump - static_cast<std::uint64_t>(level);
      } else {
        valid = !__builtin_add_overflow(*at_dump, static_cast<std::uint64_t>(0) - static_cast<std::uint64_t>(level),
                                        &derived);
      }
      if (valid && derived > start) start = derived;
    }
    stats_.reserved_bytes_start = start;
    stats_.reserved_bytes_peak = saturating_add(start, static_cast<std::uint64_t>(highest));
    stats_.reserved_bytes_end = level >= 0
                                    ? saturating_add(start, static_cast<std::uint64_t>(level))
                                    : start - (static_cast<std::uint64_t>(0) - static_cast<std::uint64_t>(level));
  }

  static std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    std::uint64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
  }

  // --- pass 2 -----------------------------------------------------------------------------

  void deliver(EventVisitor& visitor) {
    visitor.on_metadata("source", "pytorch-memory-snapshot");
    visitor.on_metadata("device", fmt::format("{}", stats_.device));
    for (std::size_t i = 0; i < strings_.size(); ++i) {
      visitor.on_string(StringId(static_cast<std::uint32_t>(i)), strings_[i]);
    }
    for (std::size_t i = 0; i < stacks_.size(); ++i) {
      visitor.on_stack(StackId(static_cast<std::uint32_t>(i)), stacks_[i]);
    }
    stats_.strings = strings_.size();
    stats_.stacks = stacks_.size();

    std::unordered_map<std::uint64_t, std::uint64_t> live;  // address → size
    std::uint64_t live_bytes = 0;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const Entry& entry = entries_[i];
      try {
        deliver_entry(visitor, i, live, live_bytes);
      } catch (const EventRejected& rejected) {
        fail(entry.ref, fmt::format("{}: {}", where(i), rejected.what()));
      }
    }
    stats_.live_at_end = live.size();
  }

  void deliver_entry(EventVisitor& visitor, std::size_t i, std::unordered_map<std::uint64_t, std::uint64_t>& live,
                     std::uint64_t& live_bytes) {
    const Entry& entry = entries_[i];
    const EventHeader header{i, entry.time_ns, ThreadId{0}};
    if (entry.action == Action::alloc) {
      auto [it, inserted] = live.try_emplace(entry.addr, entry.size);
      if (!inserted) {
        ++stats_.allocs_over_live;
        live_bytes -= it->second < live_bytes ? it->second : live_bytes;
        it->second = entry.size;
      }
      live_bytes = saturating_add(live_bytes, entry.size);
      if (live_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = live_bytes;
      ++stats_.allocs;
      visitor.on_alloc(
          AllocEvent{header, entry.addr, entry.size, MemoryKind::device, StreamHandle{entry.stream}, entry.stack});
    } else if (delivers_event(entry)) {
      auto it = live.find(entry.addr);
      if (it == live.end()) {
        ++stats_.unmatched_frees;
        return;
      }
      live_bytes -= it->second < live_bytes ? it->second : live_bytes;
      live.erase(it);
      ++stats_.frees;
      visitor.on_free(FreeEvent{header, entry.addr, MemoryKind::device, StreamHandle{entry.stream}});
    }
  }

  const ValueTree& tree_;
  const std::string& name_;
  std::size_t input_bytes_;
  std::uint64_t budget_;
  std::uint64_t work_ = 0;
  DecodeBudget& memory_;
  SnapshotImportStats stats_;
  std::vector<Entry> entries_;

  std::vector<std::string_view> strings_;  // views into the tree's text pool
  std::unordered_map<std::string_view, StringId> string_ids_;
  std::unordered_map<ValueRef, StringId> string_by_value_;
  std::vector<std::vector<StackFrame>> stacks_;
  std::unordered_map<std::vector<FrameKey>, StackId, StackKeyHash> stack_ids_;
  std::unordered_map<ValueRef, StackId> stack_by_value_;
};

}  // namespace

SnapshotImportStats deliver_snapshot(const ValueTree& tree, ValueRef root, std::size_t input_bytes,
                                     DecodeBudget& memory, const std::string& name, EventVisitor& visitor,
                                     const SnapshotImportOptions& options) {
  SnapshotWalker walker(tree, input_bytes, memory, name);
  return walker.run(root, visitor, options);
}

}  // namespace memtool::trace::detail
