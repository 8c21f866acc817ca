// The converter from a trace model to the swapper's input (trace_input.hpp).
#include "memtool/swapper/trace_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "memtool/trace/lifetimes.hpp"

namespace memtool::swapper {
namespace {

using trace::EventKind;

bool is_op(EventKind kind) {
  return kind == EventKind::launch || kind == EventKind::graph_launch || kind == EventKind::copy ||
         kind == EventKind::memset;
}

bool device_memory(trace::MemoryKind kind) { return kind != trace::MemoryKind::pinned_host; }

OpKind op_kind(EventKind kind) {
  if (kind == EventKind::copy) return OpKind::copy;
  if (kind == EventKind::memset) return OpKind::memset;
  return OpKind::launch;
}

// How the k-th of `count` buffers an op touched is accessed.
AccessMode access_mode(const trace::ModelEvent& event, std::size_t k, std::size_t count) {
  if (event.kind == EventKind::memset) return AccessMode::write;
  if (event.kind != EventKind::copy) return AccessMode::read_write;
  const auto copy = static_cast<trace::CopyKind>(event.detail);
  if (count == 2) return k == 0 ? AccessMode::write : AccessMode::read;  // destination, then source
  if (copy == trace::CopyKind::h2d) return AccessMode::write;
  if (copy == trace::CopyKind::d2h) return AccessMode::read;
  return AccessMode::read_write;
}

std::size_t choose_iteration(const trace::Iterations& its, const TraceInputOptions& options) {
  if (!its.found() || its.spans.empty()) {
    throw std::invalid_argument("no training iteration found in this input: nothing to swap");
  }
  if (options.iteration) {
    if (*options.iteration >= its.spans.size()) {
      throw std::invalid_argument(
          fmt::format("iteration {}: the input has iterations 0 to {}", *options.iteration, its.spans.size() - 1));
    }
    return *options.iteration;
  }
  const std::size_t first = std::min(its.first_steady(), its.spans.size() - 1);
  for (std::size_t k = first; k + 1 < its.spans.size(); ++k) {
    const trace::IterationSpan& a = its.spans[k];
    const trace::IterationSpan& b = its.spans[k + 1];
    if (a.complete && b.complete && !a.warm_up && a.length() == b.length()) return k;
  }
  return first;
}

class Converter {
 public:
  Converter(const trace::TraceModel& model, const trace::Iterations& its, const TraceInputOptions& options)
      : model_(model), its_(its), options_(options) {}

  TraceInput run() {
    out_.iteration_index = choose_iteration(its_, options_);
    const trace::IterationSpan& span = its_.spans[out_.iteration_index];
    first_ = span.first_event;
    end_ = span.end_event;
    window_ = end_ - first_;
    out_.first_event = first_;
    out_.end_event = end_;
    find_ops();
    follow_next_iteration();
    collect_buffers();
    collect_accesses();
    set_durations();
    return std::move(out_);
  }

 private:
  void find_ops() {
    for (std::uint64_t e = first_; e < end_; ++e) {
      if (is_op(model_.event(e).kind)) op_events_.push_back(e);
      // A graph launch whose buffers the recorder read is one op like a launch; one it could not
      // read (or a trace from before it could) may have touched anything.
      if (model_.event(e).kind == EventKind::graph_launch && model_.event(e).detail != 0) graph_launch_ = true;
    }
    if (op_events_.empty()) {
      out_.pseudo_ops = true;
      for (std::uint64_t e = first_; e < end_; ++e) {
        const EventKind kind = model_.event(e).kind;
        if (kind == EventKind::alloc || kind == EventKind::free) op_events_.push_back(e);
      }
      out_.notes.push_back(
          "the input records no launches (a PyTorch snapshot holds allocations only): one op per allocation and "
          "free, each buffer assumed written right after its allocation and read last right before its free");
    }
    if (graph_launch_) {
      out_.notes.push_back("the iteration launches a CUDA graph, whose buffers nobody recorded: nothing is swappable");
    }
    // Relative event position → op index: the first op at or after it, and the op at it.
    first_op_from_.assign(window_ + 1, static_cast<std::uint32_t>(op_events_.size()));
    op_at_.assign(window_, kNone);
    for (std::size_t i = 0; i < op_events_.size(); ++i) op_at_[op_events_[i] - first_] = static_cast<std::uint32_t>(i);
    for (std::uint64_t r = window_; r > 0; --r) {
      first_op_from_[r - 1] = op_at_[r - 1] != kNone ? op_at_[r - 1] : first_op_from_[r];
    }
  }

  // Buffers freed in the next iteration are followed there when it has the same shape.
  void follow_next_iteration() {
    if (out_.pseudo_ops || end_ + window_ > model_.event_count()) return;
    for (std::uint64_t r = 0; r < window_; ++r) {
      if (is_op(model_.event(first_ + r).kind) != is_op(model_.event(end_ + r).kind)) return;
    }
    next_same_shape_ = true;
  }

  [[nodiscard]] bool is_pseudo_op_event(std::uint64_t e) const {
    return e >= first_ && e < end_ && op_at_[e - first_] != kNone;
  }
  // The last op strictly before relative position r (kNone when none).
  [[nodiscard]] std::uint32_t last_op_before(std::uint64_t r) const {
    const std::uint32_t next = first_op_from_[r];
    return next == 0 ? kNone : next - 1;
  }

  void add_buffer(const trace::BufferRecord& record, std::uint64_t id, Buffer buffer, std::uint64_t follow_until) {
    buffer.id = id;
    buffer.size = record.size;
    buffer.swappable = !graph_launch_ && record.kind != trace::MemoryKind::managed;
    if (!buffer.swappable) ++out_.unswappable_buffers;
    index_of_[id] = static_cast<std::uint32_t>(out_.iteration.buffers.size());
    follow_until_.push_back(follow_until);
    out_.iteration.buffers.push_back(std::move(buffer));
  }

  void collect_buffers() {
    const auto buffers = model_.buffers();
    const std::uint32_t n = static_cast<std::uint32_t>(op_events_.size());
    for (std::uint64_t id = 0; id < buffers.size(); ++id) {
      const trace::BufferRecord& b = buffers[id];
      if (!device_memory(b.kind) || b.alloc_event >= end_ || (b.freed() && b.free_event <= first_)) continue;
      const bool persistent = trace::is_persistent(b, its_);
      Buffer buffer;
      if (persistent) {
        buffer.persistent = true;
        add_buffer(b, id, std::move(buffer), end_);
        continue;
      }
      if (b.alloc_event < first_) {
        // From an earlier iteration. Freed in this one: its counterpart, allocated here and freed in
        // the next, stands for it. Still live at the end: it outlives an iteration.
        if (b.free_event < end_) continue;
        buffer.persistent = true;
        ++out_.long_lived_buffers;
        add_buffer(b, id, std::move(buffer), end_);
        continue;
      }
      const std::uint64_t a = b.alloc_event - first_;
      if (out_.pseudo_ops) {  // its own allocation and free are its ops
        buffer.alloc_before_op = op_at_[a];
        if (b.free_event < end_) {
          buffer.free_after_op = op_at_[b.free_event - first_];
        } else {
          buffer.persistent = true;
          ++out_.long_lived_buffers;
        }
        add_buffer(b, id, std::move(buffer), std::min(b.free_event, end_) + (b.free_event < end_ ? 1 : 0));
        continue;
      }
      const std::uint32_t alloc_op = first_op_from_[a];
      if (b.free_event < end_) {
        const std::uint32_t free_op = last_op_before(b.free_event - first_);
        if (alloc_op >= n || free_op == kNone || free_op < alloc_op) {
          ++out_.skipped_buffers;  // live during no op
          continue;
        }
        buffer.alloc_before_op = alloc_op;
        buffer.free_after_op = free_op;
        add_buffer(b, id, std::move(buffer), b.free_event);
        continue;
      }
      if (next_same_shape_ && b.free_event < end_ + window_) {
        // Crosses into the next iteration: live [alloc, n) here and, as the previous iteration's
        // copy, [0, free] — unless it meets no op on one side of the boundary.
        const std::uint32_t free_op = last_op_before(b.free_event - end_);
        if (free_op == kNone) {
          if (alloc_op >= n) {
            ++out_.skipped_buffers;
            continue;
          }
          buffer.alloc_before_op = alloc_op;
          buffer.free_after_op = n - 1;
        } else if (alloc_op >= n) {
          buffer.alloc_before_op = 0;
          buffer.free_after_op = free_op;
        } else if (free_op < alloc_op) {
          buffer.alloc_before_op = alloc_op;
          buffer.free_after_op = free_op;
        } else {
          buffer.persistent = true;  // its copies of consecutive iterations overlap
          ++out_.long_lived_buffers;
          add_buffer(b, id, std::move(buffer), end_);
          continue;
        }
        add_buffer(b, id, std::move(buffer), b.free_event);
        continue;
      }
      buffer.persistent = true;  // never freed, or freed more than an iteration later
      ++out_.long_lived_buffers;
      add_buffer(b, id, std::move(buffer), end_);
    }
    if (out_.long_lived_buffers > 0) {
      out_.notes.push_back(
          fmt::format("{} buffers live longer than an iteration (or are never freed): kept resident "
                      "as if persistent",
                      out_.long_lived_buffers));
    }
  }

  void note_access(std::uint32_t buffer, std::uint32_t op, AccessMode mode) {
    std::vector<Access>& list = out_.iteration.buffers[buffer].accesses;
    if (!list.empty() && list.back().op == op) {
      list.back().mode =
          static_cast<AccessMode>(static_cast<std::uint8_t>(list.back().mode) | static_cast<std::uint8_t>(mode));
      return;
    }
    list.push_back({op, mode});
  }

  void collect_accesses() {
    if (out_.pseudo_ops) {
      for (Buffer& buffer : out_.iteration.buffers) {
        if (buffer.persistent) continue;  // when it is used is unknown: never swapped
        const trace::BufferRecord& record = model_.buffer(trace::BufferId{buffer.id});
        if (is_pseudo_op_event(record.alloc_event)) {
          buffer.accesses.push_back({op_at_[record.alloc_event - first_], AccessMode::write});
        }
        if (record.freed() && is_pseudo_op_event(record.free_event)) {
          buffer.accesses.push_back({op_at_[record.free_event - first_], AccessMode::read});
        }
      }
      return;
    }
    const std::uint64_t last = next_same_shape_ ? end_ + window_ : end_;
    for (std::uint64_t e = first_; e < last; ++e) {
      const trace::ModelEvent& event = model_.event(e);
      if (!is_op(event.kind)) continue;
      const auto touched = model_.touched(e);
      const std::uint32_t op = op_at_[(e - first_) % window_];
      for (std::size_t k = 0; k < touched.size(); ++k) {
        const auto found = index_of_.find(touched[k].value());
        if (found == index_of_.end()) continue;
        const std::uint32_t b = found->second;
        const Buffer& buffer = out_.iteration.buffers[b];
        // Events of the next iteration count for the part of a buffer's life there, up to its free.
        if (e >= follow_until_[b] || (e >= end_ && buffer.persistent)) continue;
        note_access(b, op, access_mode(event, k, touched.size()));
      }
    }
    // A buffer's accesses in the next iteration were seen after those here: sort by op.
    for (Buffer& buffer : out_.iteration.buffers) {
      if (!buffer.persistent) {
        std::sort(buffer.accesses.begin(), buffer.accesses.end(),
                  [](const Access& x, const Access& y) { return x.op < y.op; });
      }
    }
  }

  void set_durations() {
    const std::size_t n = op_events_.size();
    std::unordered_map<std::uint64_t, std::uint64_t> gpu_ns;
    for (const trace::ModelGpuTime& t : model_.gpu_times()) {
      if (t.joined() && t.event >= first_ && t.event < end_ && t.end_ns >= t.start_ns)
        gpu_ns[t.event] = t.duration_ns();
    }
    out_.gpu_timed_ops = gpu_ns.size();
    ComputeModel compute = options_.compute;
    if (compute == ComputeModel::automatic) {
      if (!out_.pseudo_ops && 2 * gpu_ns.size() >= n && !gpu_ns.empty())
        compute = ComputeModel::gpu;
      else if (!out_.pseudo_ops)
        compute = ComputeModel::host;
      else
        compute = ComputeModel::bytes;
    }
    out_.compute = compute;
    std::vector<Op>& ops = out_.iteration.ops;
    ops.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const trace::ModelEvent& event = model_.event(op_events_[i]);
      ops[i].stream = event.stream;
      ops[i].kind = out_.pseudo_ops ? OpKind::launch : op_kind(event.kind);
      ops[i].duration_ns = bytes_model(op_events_[i]);
    }
    if (compute == ComputeModel::gpu) {
      std::size_t modelled = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const auto t = gpu_ns.find(op_events_[i]);
        if (t != gpu_ns.end())
          ops[i].duration_ns = t->second;
        else
          ++modelled;
      }
      if (modelled > 0) {
        out_.notes.push_back(
            fmt::format("{} of {} ops have no GPU time: their durations come from the bytes model", modelled, n));
      }
    } else if (compute == ComputeModel::host) {
      // The gap to the next op's event; the last op's to the next iteration's first op, if any.
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t t = model_.event(op_events_[i]).time_ns;
        std::uint64_t next = t;
        if (i + 1 < n)
          next = model_.event(op_events_[i + 1]).time_ns;
        else if (next_same_shape_)
          next = model_.event(end_ + (op_events_[0] - first_)).time_ns;
        ops[i].duration_ns = next > t ? next - t : 0;
      }
      out_.notes.push_back(
          "op durations are host-time gaps between consecutive ops: right only for a GPU-bound "
          "program; record with MEMTOOL_CUPTI for GPU times");
    } else if (compute == ComputeModel::bytes) {
      out_.notes.push_back(
          fmt::format("op durations: bytes touched at {:.0f} GB/s, at least {} us per op (no times "
                      "in the input)",
                      options_.bytes_per_ns, static_cast<double>(options_.min_op_ns) / 1000.0));
    }
  }

  // Bytes touched at the stated rate, at least the floor.
  [[nodiscard]] std::uint64_t bytes_model(std::uint64_t e) const {
    const trace::ModelEvent& event = model_.event(e);
    std::uint64_t bytes = 0;
    const bool sized = event.kind == EventKind::alloc || event.kind == EventKind::free ||
                       event.kind == EventKind::copy || event.kind == EventKind::memset;
    if (sized) {  // the event states its bytes
      bytes = event.bytes;
    } else {
      for (const trace::BufferId id : model_.touched(e)) bytes += model_.buffer(id).size;
    }
    const auto ns = static_cast<std::uint64_t>(static_cast<double>(bytes) / options_.bytes_per_ns);
    return std::max(ns, options_.min_op_ns);
  }

  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  const trace::TraceModel& model_;
  const trace::Iterations& its_;
  const TraceInputOptions& options_;
  TraceInput out_;
  std::uint64_t first_ = 0;
  std::uint64_t end_ = 0;
  std::uint64_t window_ = 0;
  bool graph_launch_ = false;
  bool next_same_shape_ = false;
  std::vector<std::uint64_t> op_events_;
  std::vector<std::uint32_t> first_op_from_;                   // per relative position (+1 sentinel)
  std::vector<std::uint32_t> op_at_;                           // per relative position: its op, or kNone
  std::unordered_map<std::uint64_t, std::uint32_t> index_of_;  // BufferId value → buffer index
  std::vector<std::uint64_t> follow_until_;                    // per buffer: its accesses are events before this
};

}  // namespace

std::string_view to_string(ComputeModel model) {
  switch (model) {
    case ComputeModel::automatic:
      return "auto";
    case ComputeModel::gpu:
      return "gpu";
    case ComputeModel::host:
      return "host";
    case ComputeModel::bytes:
      return "bytes";
  }
  return "?";
}

TraceInput to_swap_input(const trace::TraceModel& model, const trace::Iterations& iterations,
                         const TraceInputOptions& options) {
  return Converter(model, iterations, options).run();
}

}  // namespace memtool::swapper
