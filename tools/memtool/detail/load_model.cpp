// load_model: input → TraceModel → Iterations, with progress messages for big files.
#include "detail/load_model.hpp"

#include <fmt/format.h>

#include <chrono>

namespace memtool::cli {
namespace {

constexpr std::uint64_t kProgressThresholdBytes = std::uint64_t{64} << 20;

// Prints "reading FILE: 40% (…)" at most every half second, then a final line.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::string path) : path_(std::move(path)) {}
  void operator()(std::uint64_t done, std::uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (total == 0 || now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    fmt::print(stderr, "memtool: reading {}: {:.0f}%\n", path_,
               100.0 * static_cast<double>(done) / static_cast<double>(total));
  }

 private:
  std::string path_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

LoadedModel load_model(const std::string& path, const LoadModelOptions& options) {
  const trace::MappedFile input(path, trace::require_known_input(path));
  return load_model(input, path, options);
}

LoadedModel load_model(const trace::MappedFile& input, const std::string& path, const LoadModelOptions& options) {
  LoadedModel loaded;
  loaded.path = path;

  const std::uint64_t file_size = input.bytes().size();
  const bool show_progress = options.progress && file_size >= kProgressThresholdBytes;

  trace::LoadOptions load_options;
  load_options.snapshot.device = options.device;
  if (show_progress) {
    load_options.trace.progress = ProgressPrinter(path);
    load_options.snapshot.progress = ProgressPrinter(path);
  }
  // Reserved, not touched: pages the trace does not fill never become resident, while a guess a
  // little short doubles the vectors (and the peak) at the very end. Recorded traces take 12-20 B
  // per event (conv_train: 15.8), so 8 leaves room.
  loaded.model.reserve(file_size / 8, file_size / 32);

  loaded.summary = trace::load_events(input, path, loaded.model, load_options);
  if (loaded.summary.truncated) {
    const auto& t = *loaded.summary.trace;
    if (t.torn_bytes > 0) {
      fmt::print(stderr,
                 "memtool: warning: {}: the trace ends inside a record at byte {} (the writer "
                 "stopped early); using its {} complete records\n",
                 path, t.bytes_read, t.records);
    } else {
      fmt::print(stderr,
                 "memtool: warning: {}: the trace has no end record (the program was killed, or is still "
                 "running); using its {} records\n",
                 path, t.records);
    }
  }
  if (show_progress)
    fmt::print(stderr, "memtool: {}: {} events read; finding iterations\n", path, loaded.model.event_count());

  trace::IterationOptions iteration_options;
  iteration_options.use_marks = options.use_marks;
  loaded.iterations = trace::find_iterations(loaded.model, iteration_options);
  return loaded;
}

std::string describe_input(const trace::LoadSummary& summary) {
  switch (summary.kind) {
    case trace::InputKind::trace: {
      const auto& t = *summary.trace;
      return fmt::format("memtool trace v{}{}", t.version,
                         t.clean_end ? "" : (t.truncated ? ", truncated" : ", not closed"));
    }
    case trace::InputKind::snapshot_pickle:
    case trace::InputKind::snapshot_json: {
      const auto& s = *summary.snapshot;
      const std::string encoding =
          s.encoding == trace::SnapshotEncoding::pickle ? fmt::format("pickle protocol {}", s.pickle_protocol) : "JSON";
      return fmt::format("PyTorch memory snapshot ({}), device {} of {}", encoding, s.device, s.device_count);
    }
    default:
      return std::string(trace::to_string(summary.kind));
  }
}

}  // namespace memtool::cli
