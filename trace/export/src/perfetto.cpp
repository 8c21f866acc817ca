// export_perfetto: the window as a Perfetto trace in its native protobuf format (a `Trace` of
// `TracePacket`s carrying TrackDescriptors and TrackEvents), opened by ui.perfetto.dev and
// trace_processor. Field numbers are those of perfetto/protos/perfetto/trace/*.proto (checked
// against the PyPI `perfetto` package's bindings by tests/cli/export/check_export.py).
//
// Tracks, all under one process track:
//   live bytes, reserved bytes  counters (requested sizes; the driver's granularity, see
//                               driver_footprint) after every allocation and free
//   iterations                  one slice per iteration, with its allocations, frees and peak
//   stream 0x…                  per stream: "buffers" (one slice per buffer lifetime; lanes with
//                               the same name, which the UI merges, because Perfetto wants the
//                               slices of one track nested) and "launches" (kernels, copies,
//                               memsets, syncs as instants at their host time: the trace has no
//                               GPU times yet — when it does, they become slices here)
//   pool plan                   the planned iteration's buffers at their planned place in time,
//                               with offsets, and a counter of the highest planned byte in use
//   swaps                       the swap schedule's transfers, when one is given
// Names that repeat (sizes, kernels) are interned, and so is every buffer's call stack (the
// text of its "stack" argument, InternedData.debug_annotation_string_values): a stack's text is
// written once, in the packet of its first use, and each buffer refers to it by its iid, so the
// file grows with the distinct stacks plus the events, never stacks times buffers. One packet sequence; the events stream in
// event order, the plan and swaps follow the walk in time order. A rank of a job
// (ExportOptions::rank) gets a track-id range and a packet sequence of its own, so the ranks'
// exports concatenate into one trace with a process track per rank.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "memtool/trace/lifetimes.hpp"
#include "plan_layout.hpp"
#include "protobuf_writer.hpp"
#include "window_walk.hpp"
#include "text.hpp"

namespace memtool::trace {
namespace {

using detail::ProtoMessage;

// Field numbers (perfetto.protos.*).
namespace f {
constexpr std::uint32_t kTracePacket = 1;           // Trace.packet
constexpr std::uint32_t kTimestamp = 8;             // TracePacket.timestamp
constexpr std::uint32_t kSequenceId = 10;           // TracePacket.trusted_packet_sequence_id
constexpr std::uint32_t kTrackEvent = 11;           // TracePacket.track_event
constexpr std::uint32_t kInternedData = 12;         // TracePacket.interned_data
constexpr std::uint32_t kSequenceFlags = 13;        // TracePacket.sequence_flags
constexpr std::uint32_t kTrackDescriptor = 60;      // TracePacket.track_descriptor
constexpr std::uint32_t kEventNames = 2;            // InternedData.event_names
constexpr std::uint32_t kAnnotationStrings = 29;    // InternedData.debug_annotation_string_values
constexpr std::uint32_t kInternedStringIid = 1;     // InternedString.iid
constexpr std::uint32_t kInternedStringText = 2;    // InternedString.str
constexpr std::uint32_t kIid = 1;                   // EventName.iid
constexpr std::uint32_t kInternedName = 2;          // EventName.name
constexpr std::uint32_t kEventType = 9;             // TrackEvent.type
constexpr std::uint32_t kEventTrack = 11;           // TrackEvent.track_uuid
constexpr std::uint32_t kEventNameIid = 10;         // TrackEvent.name_iid
constexpr std::uint32_t kCounterValue = 30;         // TrackEvent.counter_value
constexpr std::uint32_t kDebugAnnotations = 4;      // TrackEvent.debug_annotations
constexpr std::uint32_t kAnnotationName = 10;       // DebugAnnotation.name
constexpr std::uint32_t kAnnotationUint = 3;        // DebugAnnotation.uint_value
constexpr std::uint32_t kAnnotationBool = 2;        // DebugAnnotation.bool_value
constexpr std::uint32_t kAnnotationString = 6;      // DebugAnnotation.string_value
constexpr std::uint32_t kAnnotationPointer = 7;     // DebugAnnotation.pointer_value
constexpr std::uint32_t kAnnotationStringIid = 17;  // DebugAnnotation.string_value_iid
constexpr std::uint32_t kTrackUuid = 1;             // TrackDescriptor.uuid
constexpr std::uint32_t kTrackName = 2;             // TrackDescriptor.name
constexpr std::uint32_t kTrackProcess = 3;          // TrackDescriptor.process
constexpr std::uint32_t kTrackParent = 5;           // TrackDescriptor.parent_uuid
constexpr std::uint32_t kTrackCounter = 8;          // TrackDescriptor.counter
constexpr std::uint32_t kProcessPid = 1;            // ProcessDescriptor.pid
constexpr std::uint32_t kProcessName = 6;           // ProcessDescriptor.process_name
constexpr std::uint32_t kCounterUnit = 3;           // CounterDescriptor.unit
}  // namespace f

enum EventType : std::uint64_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4 };
constexpr std::uint64_t kUnitSizeBytes = 3;            // CounterDescriptor.UNIT_SIZE_BYTES
constexpr std::uint64_t kIncrementalStateCleared = 1;  // TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
constexpr std::uint64_t kNeedsIncrementalState = 2;    // TracePacket.SEQ_NEEDS_INCREMENTAL_STATE

// One annotation of an event: a name and an unsigned, pointer, bool or text value, or an
// interned text (number: its iid; text: its definition when this event is its first use, else
// empty).
struct Annotation {
  enum class Kind : std::uint8_t { uint, pointer, boolean, text, interned_text } kind;
  std::string_view name;
  std::uint64_t number = 0;
  std::string text;
};
Annotation uint_arg(std::string_view name, std::uint64_t v) { return {Annotation::Kind::uint, name, v, {}}; }
Annotation pointer_arg(std::string_view name, std::uint64_t v) { return {Annotation::Kind::pointer, name, v, {}}; }
Annotation bool_arg(std::string_view name, bool v) { return {Annotation::Kind::boolean, name, v ? 1u : 0u, {}}; }
Annotation text_arg(std::string_view name, std::string v) { return {Annotation::Kind::text, name, 0, std::move(v)}; }

class PerfettoWriter final : public detail::WindowVisitor {
 public:
  PerfettoWriter(const ExportSource& source, const ExportOptions& options, EventWindow window, ByteSink& out)
      : model_(source.model),
        iterations_(source.iterations),
        options_(options),
        window_(window),
        clock_(source.model, window),
        frames_(source.model, options.frames),
        out_(out) {
    if (options.rank) {
      uuid_base_ = (static_cast<std::uint64_t>(options.rank->rank) + 1) << kRankUuidShift;
      sequence_id_ = options.rank->rank + 1;
      time_shift_ = options.rank->time_shift_ns;
    }
  }

  void begin(const std::string& name) {
    ProtoMessage& p = start_packet(std::nullopt);
    const auto d = p.begin(f::kTrackDescriptor);
    p.varint_field(f::kTrackUuid, uuid_base_ + kProcessTrack);
    const auto process = p.begin(f::kTrackProcess);
    if (options_.rank) {  // pids of ranks on different nodes may collide: the rank numbers the process
      p.varint_field(f::kProcessPid, options_.rank->rank + 1);
      const auto& aligned = options_.rank->aligned_iteration;
      p.string_field(f::kProcessName,
                     detail::utf8_clean(fmt::format(
                         "rank {}: {} (pid {}; {})", options_.rank->rank, name, process_id(),
                         aligned ? fmt::format("iteration {} starts at the same time in every rank", *aligned)
                                 : std::string("no iteration found: not aligned"))));
    } else {
      p.varint_field(f::kProcessPid, process_id());
      p.string_field(f::kProcessName, detail::utf8_clean("memtool: " + name));
    }
    p.end(process);
    p.end(d);
    send();
    counter_track(kLiveTrack, "live bytes");
    counter_track(kReservedTrack, "reserved bytes (driver granularity)");
    track(kIterationTrack, kProcessTrack, "iterations");
    summaries_ = summarize_iterations(model_, iterations_);
  }

  void before_event(std::uint64_t index) override {
    now_ = clock_.at(index);
    if (!counted_start_) {
      counted_start_ = true;
      counters();
    }
    iteration_boundaries(index);
    const auto activity = detail::activity_of(model_, index);
    if (!activity) return;
    std::vector<Annotation> args{uint_arg("event", index)};
    if (activity->bytes) args.push_back(uint_arg("bytes", *activity->bytes));
    if (activity->mark) {
      event(kIterationTrack, kInstant, activity->name, std::move(args));
      return;
    }
    if (model_.event(index).kind == EventKind::launch)
      args.push_back(uint_arg("buffers_touched", model_.touched(index).size()));
    instant(model_.event(index).stream, activity->name, std::move(args));
  }

  void buffer_begins(BufferId id, std::uint64_t /*event*/, bool before_window) override {
    const BufferRecord& b = model_.buffer(id);
    if (before_window && !counted_start_) now_ = clock_.at(window_.first);
    Stream& stream = stream_of(b.stream.value());
    const std::uint32_t lane = stream.lanes.acquire();
    while (stream.lane_tracks.size() <= lane) {
      const std::uint64_t uuid = next_uuid_++;
      track(uuid, stream.group, "buffers");
      stream.lane_tracks.push_back(uuid);
    }
    lane_of_[id.value()] = {b.stream.value(), lane};
    std::vector<Annotation> args{uint_arg("buffer", id.value()), pointer_arg("address", b.address),
                                 uint_arg("size", b.size), text_arg("memory", std::string(to_string(b.kind))),
                                 uint_arg("alloc_event", b.alloc_event)};
    if (before_window) args.push_back(bool_arg("live_before_window", true));
    if (b.stack.valid()) args.push_back(stack_arg(b.stack));
    event(stream.lane_tracks[lane], kSliceBegin, human_bytes(b.size), std::move(args));
    live_ += b.size;
    reserved_ += detail::driver_footprint(b.size);
    changed_ = changed_ || !before_window;
  }

  void buffer_ends(BufferId id, std::uint64_t /*event*/, bool after_window) override {
    const BufferRecord& b = model_.buffer(id);
    const auto it = lane_of_.find(id.value());
    if (it == lane_of_.end()) return;
    Stream& stream = stream_of(it->second.first);
    std::vector<Annotation> args;
    if (after_window) {
      now_ = clock_.at(window_.end);
      args.push_back(bool_arg("live_after_window", true));
    } else {
      args.push_back(uint_arg("free_event", b.free_event));
      live_ -= b.size;
      reserved_ -= detail::driver_footprint(b.size);
      changed_ = true;
    }
    event(stream.lane_tracks[it->second.second], kSliceEnd, {}, std::move(args));
    stream.lanes.release(it->second.second);
    lane_of_.erase(it);
  }

  void after_event(std::uint64_t /*index*/) override {
    if (changed_) counters();
    changed_ = false;
  }

  ExportStats finish(std::uint64_t buffers) {
    now_ = clock_.at(window_.end);
    if (cursor_.open()) event(kIterationTrack, kSliceEnd, {}, {});
    if (options_.plan != nullptr) write_plan(*options_.plan);
    if (options_.swaps != nullptr) write_swaps(*options_.swaps);
    ExportStats stats;
    stats.buffers = buffers;
    stats.records = packets_;
    return stats;
  }

 private:
  static constexpr std::uint64_t kProcessTrack = 1, kLiveTrack = 2, kReservedTrack = 3, kIterationTrack = 4;
  static constexpr unsigned kRankUuidShift = 40;  // a rank's track ids: (rank + 1) << 40 onwards
  struct Stream {
    std::uint64_t group = 0;
    std::uint64_t launches = 0;
    std::vector<std::uint64_t> lane_tracks;
    detail::LaneSet lanes;
  };

  std::uint64_t process_id() const {
    for (const auto& [key, value] : model_.metadata()) {
      if (key == "pid") {
        try {
          return std::stoull(value);
        } catch (const std::exception&) {
          break;
        }
      }
    }
    return 1;
  }

  ProtoMessage& start_packet(std::optional<std::uint64_t> timestamp) {
    packet_.clear();
    if (timestamp) packet_.varint_field(f::kTimestamp, *timestamp + time_shift_);
    packet_.varint_field(f::kSequenceId, sequence_id_);
    packet_.varint_field(f::kSequenceFlags, packets_ == 0 ? kIncrementalStateCleared : kNeedsIncrementalState);
    return packet_;
  }

  void send() {
    scratch_.clear();
    ProtoMessage::append_length_delimited(scratch_, f::kTracePacket, packet_.bytes());
    out_.write(scratch_);
    ++packets_;
  }

  void track(std::uint64_t uuid, std::uint64_t parent, std::string_view name) {
    ProtoMessage& p = start_packet(std::nullopt);
    const auto d = p.begin(f::kTrackDescriptor);
    p.varint_field(f::kTrackUuid, uuid_base_ + uuid);
    p.varint_field(f::kTrackParent, uuid_base_ + parent);
    p.string_field(f::kTrackName, detail::utf8_clean(name));
    p.end(d);
    send();
  }

  void counter_track(std::uint64_t uuid, std::string_view name) {
    ProtoMessage& p = start_packet(std::nullopt);
    const auto d = p.begin(f::kTrackDescriptor);
    p.varint_field(f::kTrackUuid, uuid_base_ + uuid);
    p.varint_field(f::kTrackParent, uuid_base_ + kProcessTrack);
    p.string_field(f::kTrackName, name);
    const auto c = p.begin(f::kTrackCounter);
    p.varint_field(f::kCounterUnit, kUnitSizeBytes);
    p.end(c);
    p.end(d);
    send();
  }

  // One TrackEvent packet at now_. Slice ends carry no name.
  void event(std::uint64_t track_uuid, EventType type, std::string_view name, std::vector<Annotation> args,
             std::optional<std::int64_t> counter = std::nullopt) {
    std::uint64_t iid = 0;
    bool new_name = false;
    if (!name.empty()) {
      auto [it, inserted] = names_.try_emplace(std::string(name), names_.size() + 1);
      iid = it->second;
      new_name = inserted;
    }
    ProtoMessage& p = start_packet(now_);
    const bool new_text = std::any_of(args.begin(), args.end(), [](const Annotation& a) {
      return a.kind == Annotation::Kind::interned_text && !a.text.empty();
    });
    if (new_name || new_text) {
      const auto interned = p.begin(f::kInternedData);
      if (new_name) {
        const auto entry = p.begin(f::kEventNames);
        p.varint_field(f::kIid, iid);
        p.string_field(f::kInternedName, detail::utf8_clean(name));
        p.end(entry);
      }
      for (const Annotation& a : args) {
        if (a.kind != Annotation::Kind::interned_text || a.text.empty()) continue;
        const auto entry = p.begin(f::kAnnotationStrings);
        p.varint_field(f::kInternedStringIid, a.number);
        p.string_field(f::kInternedStringText, detail::utf8_clean(a.text));
        p.end(entry);
      }
      p.end(interned);
    }
    const auto e = p.begin(f::kTrackEvent);
    p.varint_field(f::kEventType, type);
    p.varint_field(f::kEventTrack, uuid_base_ + track_uuid);
    if (iid != 0) p.varint_field(f::kEventNameIid, iid);
    if (counter) p.int64_field(f::kCounterValue, *counter);
    for (const Annotation& a : args) {
      const auto d = p.begin(f::kDebugAnnotations);
      p.string_field(f::kAnnotationName, a.name);
      switch (a.kind) {
        case Annotation::Kind::uint:
          p.varint_field(f::kAnnotationUint, a.number);
          break;
        case Annotation::Kind::pointer:
          p.varint_field(f::kAnnotationPointer, a.number);
          break;
        case Annotation::Kind::boolean:
          p.bool_field(f::kAnnotationBool, a.number != 0);
          break;
        case Annotation::Kind::text:
          p.string_field(f::kAnnotationString, detail::utf8_clean(a.text));
          break;
        case Annotation::Kind::interned_text:
          p.varint_field(f::kAnnotationStringIid, a.number);
          break;
      }
      p.end(d);
    }
    p.end(e);
    send();
  }

  void counters() {
    event(kLiveTrack, kCounter, {}, {}, static_cast<std::int64_t>(live_));
    event(kReservedTrack, kCounter, {}, {}, static_cast<std::int64_t>(reserved_));
  }

  Stream& stream_of(std::uint64_t handle) {
    auto [it, inserted] = streams_.try_emplace(handle);
    if (inserted) {
      it->second.group = next_uuid_++;
      track(it->second.group, kProcessTrack,
            handle == 0 ? "stream 0 (legacy default)" : fmt::format("stream 0x{:x}", handle));
    }
    return it->second;
  }

  void instant(std::uint64_t stream_handle, std::string_view name, std::vector<Annotation> args) {
    Stream& stream = stream_of(stream_handle);
    if (stream.launches == 0) {
      stream.launches = next_uuid_++;
      track(stream.launches, stream.group, "launches");
    }
    event(stream.launches, kInstant, name.empty() ? "launch" : name, std::move(args));
  }

  void iteration_boundaries(std::uint64_t index) {
    cursor_.advance(
        index, [&] { event(kIterationTrack, kSliceEnd, {}, {}); },
        [&](std::size_t k) {
          const IterationSummary& s = summaries_[k];
          const IterationSpan& span = iterations_.spans[k];
          event(kIterationTrack, kSliceBegin, fmt::format("iteration {}{}", k, span.warm_up ? " (warm-up)" : ""),
                {uint_arg("iteration", k), uint_arg("first_event", s.first_event), uint_arg("allocs", s.allocs),
                 uint_arg("frees", s.frees), uint_arg("peak_live_bytes", s.peak.bytes),
                 bool_arg("complete", span.complete)});
        });
  }

  // The "stack" argument of a buffer: the stack's text interned, defined at its first use.
  Annotation stack_arg(StackId stack) {
    auto [it, inserted] = stack_iids_.try_emplace(stack.value(), stack_iids_.size() + 1);
    std::string text;
    if (inserted) {
      for (const ExportFrame& frame : frames_.frames(stack)) {
        if (!text.empty()) text += '\n';
        text += frame.name;
        if (!frame.filename.empty()) text += fmt::format(" ({}:{})", frame.filename, frame.line);
      }
      if (text.empty()) text = "(no frames)";  // a definition is never empty
    }
    return {Annotation::Kind::interned_text, "stack", it->second, std::move(text)};
  }

  // The plan's rectangles at the times of the planned iteration's events, in time order (ends
  // before begins at one time), lanes as for buffers, and the highest planned byte in use.
  void write_plan(const PoolPlanView& plan) {
    if (plan.iteration >= iterations_.spans.size()) return;
    const IterationSpan& span = iterations_.spans[plan.iteration];
    const std::vector<std::uint64_t> times = clock_.range(span.first_event, span.end_event);
    if (times.empty()) return;
    const auto time_of = [&](std::uint64_t relative) {
      return times[std::min<std::uint64_t>(relative, times.size() - 1)];
    };
    const std::uint64_t group = next_uuid_++;
    track(group, kProcessTrack,
          fmt::format("pool plan: iteration {} ({}): pool {}, lower bound {}", plan.iteration, plan.algorithm,
                      human_bytes(plan.pool_bytes), human_bytes(plan.lower_bound_bytes)));
    const std::uint64_t top_counter = next_uuid_++;
    {
      ProtoMessage& p = start_packet(std::nullopt);
      const auto d = p.begin(f::kTrackDescriptor);
      p.varint_field(f::kTrackUuid, uuid_base_ + top_counter);
      p.varint_field(f::kTrackParent, uuid_base_ + group);
      p.string_field(f::kTrackName, "highest planned byte in use");
      const auto c = p.begin(f::kTrackCounter);
      p.varint_field(f::kCounterUnit, kUnitSizeBytes);
      p.end(c);
      p.end(d);
      send();
    }
    struct Point {
      std::uint64_t time;
      bool begin;
      std::size_t rect;
    };
    const std::vector<detail::PlanRect> rects = detail::plan_rects(plan);
    std::vector<Point> points;
    points.reserve(rects.size() * 2);
    for (std::size_t r = 0; r < rects.size(); ++r) {
      points.push_back({rects[r].begin, true, r});
      points.push_back({rects[r].end, false, r});
    }
    std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
      if (a.time != b.time) return a.time < b.time;
      if (a.begin != b.begin) return !a.begin;  // ends first
      return a.rect < b.rect;
    });
    detail::LaneSet lanes;
    std::vector<std::uint64_t> lane_tracks;
    std::vector<std::uint32_t> lane_of(rects.size());
    std::multiset<std::uint64_t> tops;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Point& point = points[i];
      const detail::PlanRect& rect = rects[point.rect];
      now_ = time_of(point.time);
      if (point.begin) {
        const std::uint32_t lane = lanes.acquire();
        while (lane_tracks.size() <= lane) {
          lane_tracks.push_back(next_uuid_++);
          track(lane_tracks.back(), group, "planned buffers");
        }
        lane_of[point.rect] = lane;
        const auto& request = plan.problem.buffers[rect.buffer];
        event(lane_tracks[lane], kSliceBegin, human_bytes(request.size),
              {uint_arg("buffer", detail::plan_buffer_trace_id(request.id)), uint_arg("offset", rect.offset),
               uint_arg("footprint", rect.footprint), bool_arg("crosses_iteration", request.crosses_iteration)});
        tops.insert(rect.offset + rect.footprint);
      } else {
        event(lane_tracks[lane_of[point.rect]], kSliceEnd, {}, {});
        lanes.release(lane_of[point.rect]);
        tops.erase(tops.find(rect.offset + rect.footprint));
      }
      if (i + 1 == points.size() || points[i + 1].time != point.time) {
        event(top_counter, kCounter, {}, {}, static_cast<std::int64_t>(tops.empty() ? 0 : *tops.rbegin()));
      }
    }
  }

  void write_swaps(const SwapScheduleView& swaps) {
    const std::uint64_t group = next_uuid_++;
    track(group, kProcessTrack, fmt::format("swaps: {} (budget {})", swaps.name, human_bytes(swaps.budget_bytes)));
    std::vector<const SwapTransfer*> order;
    for (const SwapTransfer& t : swaps.transfers) {
      if (t.begin_event < t.end_event && t.end_event <= model_.event_count()) order.push_back(&t);
    }
    std::sort(order.begin(), order.end(),
              [](const SwapTransfer* a, const SwapTransfer* b) { return a->begin_event < b->begin_event; });
    const auto time_of = [&](std::uint64_t e) {
      return model_.event(std::min<std::uint64_t>(e, model_.event_count() - 1)).time_ns;
    };
    // Lanes by end time: a transfer takes the first lane whose last transfer has ended.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> lanes;  // (uuid, end event)
    for (const SwapTransfer* t : order) {
      std::size_t lane = 0;
      while (lane < lanes.size() && lanes[lane].second > t->begin_event) ++lane;
      if (lane == lanes.size()) {
        lanes.emplace_back(next_uuid_++, 0);
        track(lanes.back().first, group, "transfers");
      }
      lanes[lane].second = t->end_event;
      now_ = time_of(t->begin_event);
      event(lanes[lane].first, kSliceBegin,
            fmt::format("swap {} buffer {}", t->to_host ? "out" : "in", t->buffer.value()),
            {uint_arg("buffer", t->buffer.value()), uint_arg("bytes", t->bytes)});
      now_ = std::max(now_, time_of(t->end_event));
      event(lanes[lane].first, kSliceEnd, {}, {});
    }
  }

  const TraceModel& model_;
  const Iterations& iterations_;
  const ExportOptions& options_;
  EventWindow window_;
  detail::ExportClock clock_;
  detail::FrameTable frames_;
  ByteSink& out_;
  ProtoMessage packet_;
  std::string scratch_;
  std::uint64_t packets_ = 0;
  std::uint64_t next_uuid_ = 16;
  std::uint64_t uuid_base_ = 0;    // a rank's track ids (ExportOptions::rank)
  std::uint64_t sequence_id_ = 1;  // TracePacket.trusted_packet_sequence_id
  std::uint64_t time_shift_ = 0;   // added to every timestamp
  std::uint64_t now_ = 0;
  std::uint64_t live_ = 0;
  std::uint64_t reserved_ = 0;
  bool changed_ = false;
  bool counted_start_ = false;
  std::map<std::uint64_t, Stream> streams_;
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::uint32_t>> lane_of_;  // buffer → (stream, lane)
  std::unordered_map<std::string, std::uint64_t> names_;
  std::unordered_map<std::uint32_t, std::uint64_t> stack_iids_;  // stack id → iid of its text
  std::vector<IterationSummary> summaries_;
  detail::IterationCursor cursor_{iterations_, window_};
};

}  // namespace

ExportStats export_perfetto(const ExportSource& source, const ExportOptions& options, ByteSink& out) {
  const EventWindow window = export_window(source, options);
  PerfettoWriter writer(source, options, window, out);
  writer.begin(source.name);
  return detail::walk_and_finish(writer, source.model, window, options, out);
}

}  // namespace memtool::trace
