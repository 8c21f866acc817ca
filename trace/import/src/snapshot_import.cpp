// Entry points of the PyTorch snapshot importer: decode (pickle or JSON), then the shared
// schema walk (see memtool/trace/snapshot_import.hpp).
#include "memtool/trace/snapshot_import.hpp"

#include "file_bytes.hpp"
#include "json_reader.hpp"
#include "memtool/trace/input_error.hpp"
#include "pickle_reader.hpp"
#include "snapshot_walker.hpp"

namespace memtool::trace {

SnapshotImportStats import_snapshot_pickle(std::string_view bytes, const std::string& name, EventVisitor& visitor,
                                           const SnapshotImportOptions& options) {
  detail::DecodeBudget memory(bytes.size());
  const detail::PickleDocument document = detail::read_pickle(bytes, name, memory, options.progress);
  SnapshotImportStats stats =
      detail::deliver_snapshot(document.tree, document.root, bytes.size(), memory, name, visitor, options);
  stats.encoding = SnapshotEncoding::pickle;
  stats.pickle_protocol = document.protocol;
  return stats;
}

SnapshotImportStats import_snapshot_json(std::string_view text, const std::string& name, EventVisitor& visitor,
                                         const SnapshotImportOptions& options) {
  detail::DecodeBudget memory(text.size());
  const detail::JsonDocument document = detail::read_json(text, name, memory, options.progress);
  SnapshotImportStats stats =
      detail::deliver_snapshot(document.tree, document.root, text.size(), memory, name, visitor, options);
  stats.encoding = SnapshotEncoding::json;
  return stats;
}

SnapshotImportStats import_snapshot(std::string_view bytes, const std::string& name, EventVisitor& visitor,
                                    const SnapshotImportOptions& options) {
  if (!bytes.empty() && static_cast<unsigned char>(bytes.front()) == 0x80) {
    return import_snapshot_pickle(bytes, name, visitor, options);
  }
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && bytes[first] == '{') {
    return import_snapshot_json(bytes, name, visitor, options);
  }
  throw InputError(name, first == std::string_view::npos ? bytes.size() : first,
                   "not a PyTorch memory snapshot: expected a pickle (first byte 0x80) or a JSON object ('{')");
}

SnapshotImportStats import_snapshot_file(const std::string& path, EventVisitor& visitor,
                                         const SnapshotImportOptions& options) {
  const std::string bytes = detail::read_file_bytes(path);
  return import_snapshot(bytes, path, visitor, options);
}

std::string_view to_string(SnapshotEncoding encoding) {
  switch (encoding) {
    case SnapshotEncoding::pickle:
      return "pickle";
    case SnapshotEncoding::json:
      return "json";
  }
  return "unknown";
}

std::string_view to_string(FreeSource source) {
  switch (source) {
    case FreeSource::none:
      return "none";
    case FreeSource::free_requested:
      return "free_requested";
    case FreeSource::free_completed:
      return "free_completed";
    case FreeSource::legacy_free:
      return "free";
  }
  return "unknown";
}

}  // namespace memtool::trace
