// Format names, sinks, the export window and the dispatch by format (see export.hpp).
#include "memtool/trace/export.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace memtool::trace {

std::string_view to_string(ExportFormat format) {
  switch (format) {
    case ExportFormat::memory_viz:
      return "memory-viz";
    case ExportFormat::perfetto:
      return "perfetto";
    case ExportFormat::chrome_json:
      return "chrome-json";
    case ExportFormat::html:
      return "html";
  }
  return "unknown";
}

std::optional<ExportFormat> parse_export_format(std::string_view name) {
  for (ExportFormat f :
       {ExportFormat::memory_viz, ExportFormat::perfetto, ExportFormat::chrome_json, ExportFormat::html}) {
    if (to_string(f) == name) return f;
  }
  return std::nullopt;
}

void StringSink::write(std::string_view bytes) {
  text_.append(bytes);
  written_ += bytes.size();
}

FileSink::FileSink(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) throw std::runtime_error(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
  buffer_.reserve(std::size_t{1} << 20);
}

FileSink::~FileSink() {
  if (file_ == nullptr) return;
  if (!buffer_.empty()) std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
  std::fclose(file_);
}

void FileSink::write(std::string_view bytes) {
  if (file_ == nullptr) throw std::runtime_error(fmt::format("{} is already closed", path_));
  buffer_.append(bytes);
  written_ += bytes.size();
  if (buffer_.size() >= (std::size_t{1} << 20)) flush();
}

void FileSink::flush() {
  if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    throw std::runtime_error(fmt::format("error writing {}: {}", path_, std::strerror(errno)));
  }
  buffer_.clear();
}

void FileSink::close() {
  if (file_ == nullptr) return;
  flush();
  std::FILE* file = file_;
  file_ = nullptr;
  if (std::fclose(file) != 0)
    throw std::runtime_error(fmt::format("error writing {}: {}", path_, std::strerror(errno)));
}

EventWindow export_window(const ExportSource& source, const ExportOptions& options) {
  const std::uint64_t events = source.model.event_count();
  if (!options.first_iteration && !options.last_iteration) return {0, events};
  const auto& spans = source.iterations.spans;
  if (spans.empty()) throw std::invalid_argument("--iterations: no iterations were found in this input");
  const std::size_t first = options.first_iteration.value_or(0);
  const std::size_t last = options.last_iteration.value_or(spans.size() - 1);
  if (first > last || last >= spans.size()) {
    throw std::invalid_argument(
        fmt::format("--iterations {}:{}: the input has iterations 0 to {}", first, last, spans.size() - 1));
  }
  return {spans[first].first_event, spans[last].end_event};
}

ExportStats export_trace(ExportFormat format, const ExportSource& source, const ExportOptions& options, ByteSink& out) {
  switch (format) {
    case ExportFormat::memory_viz:
      return export_memory_viz(source, options, out);
    case ExportFormat::perfetto:
      return export_perfetto(source, options, out);
    case ExportFormat::chrome_json:
      return export_chrome_json(source, options, out);
    case ExportFormat::html:
      return export_html(source, options, out);
  }
  throw std::invalid_argument("unknown export format");
}

}  // namespace memtool::trace
