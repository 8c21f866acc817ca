// The engine's log sink (see log.hpp).
#include "memtool/engine/log.hpp"

#include <atomic>

namespace memtool::engine {
namespace {
std::atomic<LogSink> g_sink{nullptr};
}  // namespace

void set_log_sink(LogSink sink) noexcept { g_sink.store(sink, std::memory_order_release); }

void log(LogLevel level, std::string_view line) noexcept {
  if (LogSink sink = g_sink.load(std::memory_order_acquire)) sink(level, line);
}

}  // namespace memtool::engine
