// The engine's messages. The engine is a library below libmemtool.so's logging; the preload
// installs a sink that writes through memtool's log (MEMTOOL_LOG, MEMTOOL_LOG_FILE). Without a
// sink messages are dropped. The sink must not allocate a lock the engine may hold: it is
// called from under the engine's locks.
#pragma once

#include <string_view>

namespace memtool::engine {

enum class LogLevel : int { error = 1, warn = 2, info = 3, debug = 4 };
using LogSink = void (*)(LogLevel level, std::string_view line);

void set_log_sink(LogSink sink) noexcept;
void log(LogLevel level, std::string_view line) noexcept;

}  // namespace memtool::engine
