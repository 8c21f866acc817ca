// Names of the event model's enumerations, for reports and error messages.
#include "memtool/trace/event.hpp"

namespace memtool::trace {

std::string_view to_string(EventKind kind) {
  switch (kind) {
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  case EventKind::name:                                    \
    return #name;
#include "memtool/trace/events.def"
  }
  return "unknown";
}

std::string_view to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::device:
      return "device";
    case MemoryKind::async:
      return "async";
    case MemoryKind::managed:
      return "managed";
    case MemoryKind::vmm:
      return "vmm";
    case MemoryKind::pinned_host:
      return "pinned_host";
  }
  return "unknown";
}

std::string_view to_string(CopyKind kind) {
  switch (kind) {
    case CopyKind::unknown:
      return "unknown";
    case CopyKind::h2d:
      return "h2d";
    case CopyKind::d2h:
      return "d2h";
    case CopyKind::d2d:
      return "d2d";
    case CopyKind::h2h:
      return "h2h";
  }
  return "unknown";
}

std::string_view to_string(SyncKind kind) {
  switch (kind) {
    case SyncKind::context:
      return "context";
    case SyncKind::stream:
      return "stream";
    case SyncKind::event:
      return "event";
    case SyncKind::stream_wait_event:
      return "stream_wait_event";
  }
  return "unknown";
}

std::string_view to_string(GpuWorkKind kind) {
  switch (kind) {
    case GpuWorkKind::kernel:
      return "kernel";
    case GpuWorkKind::copy:
      return "copy";
    case GpuWorkKind::memset:
      return "memset";
  }
  return "unknown";
}

}  // namespace memtool::trace
