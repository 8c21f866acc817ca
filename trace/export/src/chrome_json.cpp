// export_chrome_json: the window in Chrome's JSON trace event format, for viewers older than
// Perfetto's protobuf import (chrome://tracing, Speedscope, Perfetto's legacy JSON loader).
//
// The same picture as the Perfetto export, in its vocabulary: process and thread names ("M"), a
// "memory" counter with live and reserved bytes ("C"), one nestable async slice per buffer
// lifetime ("b"/"e", category = its stream, id = its buffer id: async slices may overlap
// freely), iterations as duration slices on their own thread ("B"/"E"), and launches, copies,
// memsets and syncs as thread-scoped instants ("i") on their stream's thread. Timestamps are
// microseconds from the window's first event (fractions keep the nanoseconds).
#include <fmt/format.h>

#include <map>

#include "memtool/trace/lifetimes.hpp"
#include "window_walk.hpp"

namespace memtool::trace {
namespace {

using detail::json_string;

class ChromeJsonWriter final : public detail::WindowVisitor {
 public:
  ChromeJsonWriter(const ExportSource& source, EventWindow window, ByteSink& out)
      : model_(source.model),
        iterations_(source.iterations),
        window_(window),
        clock_(source.model, window),
        out_(out) {}

  void begin(const std::string& name) {
    write(
        fmt::format("{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"source\":{},\"first_event\":{},\"end_event\":{}}},"
                    "\"traceEvents\":[\n",
                    json_string(name), window_.first, window_.end));
    record(fmt::format(R"({{"ph":"M","pid":1,"tid":0,"name":"process_name","args":{{"name":{}}}}})",
                       json_string("memtool: " + name)));
    record(R"({"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"iterations"}})");
    summaries_ = summarize_iterations(model_, iterations_);
  }

  void before_event(std::uint64_t index) override {
    ts_ = timestamp(clock_.at(index));
    if (!counted_start_) {
      counted_start_ = true;
      counter();
    }
    iteration_boundaries(index);
    const auto activity = detail::activity_of(model_, index);
    if (!activity) return;
    const std::string bytes = activity->bytes ? fmt::format(",\"bytes\":{}", *activity->bytes) : std::string{};
    const int tid = activity->mark ? 1 : thread_of(model_.event(index).stream);
    record(fmt::format(R"({{"ph":"i","s":"t","pid":1,"tid":{},"ts":{},"name":{},"args":{{"event":{}{}}}}})", tid, ts_,
                       json_string(activity->name), index, bytes));
  }

  void buffer_begins(BufferId id, std::uint64_t /*event*/, bool before_window) override {
    const BufferRecord& b = model_.buffer(id);
    if (before_window) ts_ = timestamp(clock_.at(window_.first));
    const int tid = thread_of(b.stream.value());
    record(fmt::format(
        R"({{"ph":"b","cat":"buffers","id":"0x{:x}","pid":1,"tid":{},"ts":{},"name":{},"args":{{"buffer":{},"address":"0x{:x}","size":{},"memory":"{}","stream":"0x{:x}"{}}}}})",
        id.value(), tid, ts_, json_string(human_bytes(b.size)), id.value(), b.address, b.size, to_string(b.kind),
        b.stream.value(), before_window ? ",\"live_before_window\":true" : ""));
    live_ += b.size;
    reserved_ += detail::driver_footprint(b.size);
    changed_ = changed_ || !before_window;
  }

  void buffer_ends(BufferId id, std::uint64_t /*event*/, bool after_window) override {
    const BufferRecord& b = model_.buffer(id);
    if (after_window) {
      ts_ = timestamp(clock_.at(window_.end));
    } else {
      live_ -= b.size;
      reserved_ -= detail::driver_footprint(b.size);
      changed_ = true;
    }
    record(fmt::format(R"({{"ph":"e","cat":"buffers","id":"0x{:x}","pid":1,"tid":{},"ts":{},"name":{}{}}})", id.value(),
                       thread_of(b.stream.value()), ts_, json_string(human_bytes(b.size)),
                       after_window ? R"(,"args":{"live_after_window":true})" : ""));
  }

  void after_event(std::uint64_t /*index*/) override {
    if (changed_) counter();
    changed_ = false;
  }

  ExportStats finish(std::uint64_t buffers) {
    ts_ = timestamp(clock_.at(window_.end));
    if (cursor_.open()) record(fmt::format(R"({{"ph":"E","pid":1,"tid":1,"ts":{}}})", ts_));
    write("\n]}\n");
    ExportStats stats;
    stats.buffers = buffers;
    stats.records = records_;
    return stats;
  }

 private:
  std::string timestamp(std::uint64_t ns) const {
    const std::uint64_t relative = ns - clock_.origin();
    return fmt::format("{}.{:03}", relative / 1000, relative % 1000);
  }

  void write(std::string_view text) { out_.write(text); }

  void record(std::string_view json) {
    if (records_ != 0) write(",\n");
    write(json);
    ++records_;
  }

  void counter() {
    record(fmt::format(
        R"({{"ph":"C","pid":1,"tid":0,"ts":{},"name":"memory","args":{{"live bytes":{},"reserved bytes":{}}}}})", ts_,
        live_, reserved_));
  }

  int thread_of(std::uint64_t stream) {
    auto [it, inserted] = threads_.try_emplace(stream, static_cast<int>(threads_.size()) + 2);
    if (inserted) {
      const std::string name = stream == 0 ? "stream 0 (legacy default)" : fmt::format("stream 0x{:x}", stream);
      record(fmt::format(R"({{"ph":"M","pid":1,"tid":{},"name":"thread_name","args":{{"name":{}}}}})", it->second,
                         json_string(name)));
    }
    return it->second;
  }

  void iteration_boundaries(std::uint64_t index) {
    const auto end = [&] { record(fmt::format(R"({{"ph":"E","pid":1,"tid":1,"ts":{}}})", ts_)); };
    cursor_.advance(index, end, [&](std::size_t k) {
      const IterationSummary& s = summaries_[k];
      record(fmt::format(
          R"({{"ph":"B","pid":1,"tid":1,"ts":{},"name":"iteration {}{}","args":{{"allocs":{},"frees":{},"peak_live_bytes":{}}}}})",
          ts_, k, iterations_.spans[k].warm_up ? " (warm-up)" : "", s.allocs, s.frees, s.peak.bytes));
    });
  }

  const TraceModel& model_;
  const Iterations& iterations_;
  EventWindow window_;
  detail::ExportClock clock_;
  ByteSink& out_;
  std::string ts_ = "0.000";
  std::uint64_t records_ = 0;
  std::uint64_t live_ = 0;
  std::uint64_t reserved_ = 0;
  bool changed_ = false;
  bool counted_start_ = false;
  std::map<std::uint64_t, int> threads_;
  std::vector<IterationSummary> summaries_;
  detail::IterationCursor cursor_{iterations_, window_};
};

}  // namespace

ExportStats export_chrome_json(const ExportSource& source, const ExportOptions& options, ByteSink& out) {
  const EventWindow window = export_window(source, options);
  ChromeJsonWriter writer(source, window, out);
  writer.begin(source.name);
  return detail::walk_and_finish(writer, source.model, window, options, out);
}

}  // namespace memtool::trace
