// build_report: every figure of `memtool report`, from the model, its iterations and lifetimes.
#include "detail/report_data.hpp"
#include "detail/symbolizer.hpp"
#include "detail/text_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace memtool::cli {
namespace {

using trace::BufferId;
using trace::TraceModel;

std::string frame_text(const TraceModel& model, const trace::StackFrame& frame, Symbolizer& symbolizer) {
  const auto function = model.string(frame.function);
  const auto file = model.string(frame.file);
  if (!function.empty() || !file.empty()) {
    std::string text{function.empty() ? "?" : function};
    if (!file.empty()) text += fmt::format(" ({}:{})", file, frame.line);
    return text;
  }
  return symbolizer.describe(frame.ip, model.modules(), [&](trace::StringId id) { return model.string(id); });
}

// The first frame that is the program's own: not in memtool's preload library, the driver or
// the CUDA runtime, and not an allocator's plumbing.
std::string allocation_site(const TraceModel& model, trace::StackId stack, Symbolizer& symbolizer) {
  const auto frames = model.stack(stack);
  const auto path_of = [&](trace::StringId id) { return model.string(id); };
  for (const auto& frame : frames) {
    const auto function = model.string(frame.function);
    if (function.starts_with("memtool") || function.starts_with("cuMem")) continue;
    if (frame.ip != 0 && (Symbolizer::in_object(frame.ip, model.modules(), path_of, "libmemtool") ||
                          Symbolizer::in_object(frame.ip, model.modules(), path_of, "libcuda") ||
                          Symbolizer::in_object(frame.ip, model.modules(), path_of, "libcudart")))
      continue;
    return frame_text(model, frame, symbolizer);
  }
  return frames.empty() ? std::string{} : frame_text(model, frames.front(), symbolizer);
}

// Kernel names that touched each of `ids`, first three distinct in launch order.
std::unordered_map<std::uint64_t, std::string> kernels_touching(const TraceModel& model,
                                                                const std::vector<BufferId>& ids) {
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> seen;
  for (BufferId id : ids) seen[id.value()];
  if (model.stats().launches == 0) return {};
  const auto events = model.events();
  for (std::size_t e = 0; e < events.size(); ++e) {
    if (events[e].kind != trace::EventKind::launch) continue;
    for (BufferId id : model.touched(e)) {
      auto it = seen.find(id.value());
      if (it == seen.end()) continue;
      auto& names = it->second;
      if (names.size() < 3 && std::find(names.begin(), names.end(), events[e].detail) == names.end())
        names.push_back(events[e].detail);
    }
  }
  std::unordered_map<std::uint64_t, std::string> out;
  for (const auto& [id, names] : seen) {
    std::string text;
    for (auto name : names) {
      if (!text.empty()) text += ", ";
      text += model.string(trace::StringId{name});
    }
    out[id] = std::move(text);
  }
  return out;
}

// Rows for several buffer tables at once: one pass over the launches finds the kernels of every
// listed buffer, and one symbolizer reads each ELF file once.
class RowBuilder {
 public:
  RowBuilder(const LoadedModel& loaded, const std::vector<std::vector<BufferId>>& tables) : loaded_(loaded) {
    std::vector<BufferId> all;
    for (const auto& ids : tables) all.insert(all.end(), ids.begin(), ids.end());
    kernels_ = kernels_touching(loaded.model, all);
  }

  std::vector<BufferRow> rows(const std::vector<BufferId>& ids) {
    const auto& model = loaded_.model;
    std::vector<BufferRow> rows;
    rows.reserve(ids.size());
    for (BufferId id : ids) {
      const auto& buffer = model.buffer(id);
      BufferRow row;
      row.id = id;
      row.size = buffer.size;
      row.alloc_event = buffer.alloc_event;
      row.free_event = buffer.free_event;
      row.alloc_iteration = loaded_.iterations.iteration_of(buffer.alloc_event);
      row.persistent = trace::is_persistent(buffer, loaded_.iterations);
      row.site = allocation_site(model, buffer.stack, symbolizer_);
      if (auto it = kernels_.find(id.value()); it != kernels_.end()) row.kernels = it->second;
      rows.push_back(std::move(row));
    }
    return rows;
  }

 private:
  const LoadedModel& loaded_;
  std::unordered_map<std::uint64_t, std::string> kernels_;
  Symbolizer symbolizer_;
};

std::string input_kind_name(trace::InputKind kind) {
  switch (kind) {
    case trace::InputKind::trace:
      return "trace";
    case trace::InputKind::snapshot_pickle:
      return "snapshot_pickle";
    case trace::InputKind::snapshot_json:
      return "snapshot_json";
    case trace::InputKind::problem_csv:
      return "problem_csv";
    case trace::InputKind::unknown:
      break;
  }
  return "unknown";
}

std::string_view source_name(trace::IterationSource source) {
  switch (source) {
    case trace::IterationSource::marks:
      return "marks";
    case trace::IterationSource::detector:
      return "detector";
    case trace::IterationSource::none:
      break;
  }
  return "none";
}

}  // namespace

std::optional<std::string> caching_allocator_warning(const LoadedModel& loaded) {
  if (loaded.summary.kind != trace::InputKind::trace) return std::nullopt;
  constexpr std::uint64_t kSegmentUnit = std::uint64_t{2} << 20;  // PyTorch rounds segments to 2 MiB
  std::uint64_t device_allocs = 0;
  std::uint64_t smallest = UINT64_MAX;
  for (const trace::BufferRecord& b : loaded.model.buffers()) {
    if (b.kind == trace::MemoryKind::pinned_host || b.kind == trace::MemoryKind::managed) continue;
    if (b.size < kSegmentUnit || b.size % kSegmentUnit != 0) return std::nullopt;
    ++device_allocs;
    smallest = std::min(smallest, b.size);
  }
  // Three or more segments, or a preallocated arena (JAX and TensorFlow take most of the device
  // in one or two allocations).
  if (device_allocs == 0 || (device_allocs < 3 && smallest < (std::uint64_t{1} << 30))) return std::nullopt;
  return fmt::format(
      "the trace's {} device {} of 2 MiB (the smallest {}): a caching allocator seems to sit in "
      "front of memtool, which then sees its segments, not the tensors. Record under `memtool record` or `memtool run` "
      "(they set PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async, "
      "TF_GPU_ALLOCATOR=cuda_malloc_async), or set these yourself",
      device_allocs, device_allocs == 1 ? "allocation is a whole multiple" : "allocations are all whole multiples",
      human_bytes(smallest));
}

ReportData build_report(const LoadedModel& loaded, const ReportOptions& options) {
  const auto& model = loaded.model;
  const auto& iterations = loaded.iterations;
  ReportData data;
  data.input = loaded.path;
  data.input_kind = input_kind_name(loaded.summary.kind);
  data.input_description = describe_input(loaded.summary);
  data.total_events = model.event_count();
  data.total_allocs = model.stats().allocs;
  data.total_frees = model.stats().frees;
  data.total_launches = model.stats().launches;
  data.anomalies = model.stats();
  data.caching_allocator_warning = caching_allocator_warning(loaded);
  if (loaded.summary.snapshot && loaded.summary.snapshot->reserved_bytes_peak > 0)
    data.reserved_peak = loaded.summary.snapshot->reserved_bytes_peak;

  data.iteration_source = std::string(source_name(iterations.source));
  data.period_events = iterations.period_events;
  data.period_allocs = iterations.period_allocs;
  data.steady_start = iterations.steady_start;
  const auto curve = trace::live_bytes_curve(model);
  data.iterations = trace::summarize_iterations(model, iterations, curve);
  data.warmup_iterations = static_cast<std::size_t>(
      std::count_if(data.iterations.begin(), data.iterations.end(), [](const auto& it) { return it.warm_up; }));

  std::map<std::uint64_t, std::size_t> graph_launches_per_iteration;  // count → iterations with it
  for (const auto& span : iterations.spans) {
    data.iteration_notes.emplace_back(span.warm_up ? "warm-up" : !span.complete ? "incomplete" : "");
    if (!span.complete && !span.warm_up) ++data.incomplete_iterations;
    if (span.complete && !span.warm_up && model.stats().graph_launches != 0) {
      const auto events = model.events().subspan(span.first_event, span.length());
      ++graph_launches_per_iteration[static_cast<std::uint64_t>(
          std::count_if(events.begin(), events.end(),
                        [](const trace::ModelEvent& e) { return e.kind == trace::EventKind::graph_launch; }))];
    }
  }
  // The steady iterations' usual count (the last may hold the program's teardown).
  std::size_t most = 0;
  for (const auto& [launches, iterations_with] : graph_launches_per_iteration) {
    if (iterations_with > most) {
      most = iterations_with;
      data.period_graph_launches = launches;
    }
  }
  const std::size_t count = data.iterations.size();
  data.selected_first = std::min(options.first_iteration.value_or(0), count);
  data.selected_end = std::min(options.last_iteration ? *options.last_iteration + 1 : count, count);
  if (data.selected_end < data.selected_first) data.selected_end = data.selected_first;

  data.peak = trace::peak_live_bytes(curve, 0, curve.size());
  data.peak_iteration = iterations.iteration_of(data.peak.event);
  data.live_at_end = curve.empty() ? 0 : curve.back();
  for (std::size_t i = 1; i < count; ++i)
    if (iterations.spans[i].complete)
      data.steady_state_peak = std::max(data.steady_state_peak, data.iterations[i].peak.bytes);
  if (count == 1) data.steady_state_peak = data.iterations[0].peak.bytes;
  if (count == 0) data.steady_state_peak = data.peak.bytes;

  for (BufferId id : trace::persistent_buffers(model, iterations)) {
    data.persistent_bytes += model.buffer(id).size;
    ++data.persistent_buffers;
  }
  auto leaked = trace::leaked_buffers(model, iterations);
  for (BufferId id : leaked) data.leaked_bytes += model.buffer(id).size;
  data.leaked_buffers = leaked.size();
  std::stable_sort(leaked.begin(), leaked.end(),
                   [&](BufferId a, BufferId b) { return model.buffer(a).size > model.buffer(b).size; });
  if (leaked.size() > options.rows) leaked.resize(options.rows);

  const auto largest = trace::largest_live_at(model, data.peak.event, options.rows);
  const auto longest = trace::longest_lifetimes(model, options.rows, &iterations);
  RowBuilder row_builder(loaded, {largest, longest, leaked});
  data.largest_at_peak = row_builder.rows(largest);
  data.longest_lifetimes = row_builder.rows(longest);
  data.leaks = row_builder.rows(leaked);

  // The chart covers the selected iterations, or the whole run without a selection.
  std::uint64_t first = 0;
  std::uint64_t end = curve.size();
  if ((options.first_iteration || options.last_iteration) && data.selected_end > data.selected_first) {
    first = data.iterations[data.selected_first].first_event;
    end = data.iterations[data.selected_end - 1].end_event;
  }
  if (!model.gpu_times().empty()) {
    const trace::GpuTimeIndex gpu(model);
    data.gpu.present = true;
    data.gpu.timed_launches = gpu.timed_launches();
    data.gpu.unjoined = model.stats().gpu_unjoined;
    data.gpu.mismatched = model.stats().gpu_mismatched;
    for (const auto& it : data.iterations)
      data.gpu.iteration_busy_ns.push_back(gpu.busy_ns(it.first_event, it.end_event));
    data.gpu.window = gpu.summarize(first, end, options.rows);
    for (const auto& k : data.gpu.window.kernels) data.gpu.kernel_names.emplace_back(model.string(k.kernel));
  }

  data.curve.assign(curve.begin() + static_cast<std::ptrdiff_t>(first),
                    curve.begin() + static_cast<std::ptrdiff_t>(end));
  data.curve_first_event = first;
  for (const auto& it : data.iterations)
    if (it.first_event >= first && it.first_event < end) data.curve_markers.push_back(it.first_event - first);
  return data;
}

}  // namespace memtool::cli
