// libmemtool.so's settings, parsed and validated from the MEMTOOL_* environment variables of
// options.def. A bad value is an error (the library then stays out of the way); an unknown
// MEMTOOL_* variable is a warning (probably a typo).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/interpose/options_table.hpp"

namespace memtool::interpose {

enum class LogLevel : std::uint8_t { off = 0, error = 1, warn = 2, info = 3, debug = 4 };
// MEMTOOL_BUDGET: bytes, or a percentage of the device's memory (resolved per device).
struct Budget {
  std::uint64_t bytes = 0;  // 0 and percent 0: no budget
  double percent = 0;       // of the device's total memory, when bytes is 0
};
enum class SwapMode : std::uint8_t { uvm, explicit_copies };
// auto: memtool decides (the option says when); on and off: as the user says.
enum class Toggle : std::uint8_t { automatic, on, off };

// The C++ type an option of each OptionType parses to (a type without a line here does not compile).
template <OptionType T>
struct OptionValue;
#define MEMTOOL_OPTION_VALUE(kind, value_type) \
  template <>                                  \
  struct OptionValue<OptionType::kind> {       \
    using type = value_type;                   \
  }
MEMTOOL_OPTION_VALUE(flag, bool);
MEMTOOL_OPTION_VALUE(count, std::uint32_t);
MEMTOOL_OPTION_VALUE(count_or_zero, std::uint32_t);
MEMTOOL_OPTION_VALUE(bytes, std::uint64_t);
MEMTOOL_OPTION_VALUE(rate, std::uint64_t);  // bytes per second
MEMTOOL_OPTION_VALUE(buffer_size, std::uint64_t);
MEMTOOL_OPTION_VALUE(strategy, std::string);  // an engine strategy, or off
MEMTOOL_OPTION_VALUE(log_level, LogLevel);
MEMTOOL_OPTION_VALUE(path, std::string);
MEMTOOL_OPTION_VALUE(path_template, std::string);
MEMTOOL_OPTION_VALUE(regex, std::string);
MEMTOOL_OPTION_VALUE(toggle, Toggle);
MEMTOOL_OPTION_VALUE(budget, Budget);
MEMTOOL_OPTION_VALUE(swap_mode, SwapMode);
MEMTOOL_OPTION_VALUE(swap_policy, std::string);  // a swapper strategy, or belady
#undef MEMTOOL_OPTION_VALUE

struct Options {
#define MEMTOOL_OPTION(field, NAME, kind, default_value, description) \
  typename OptionValue<OptionType::kind>::type field{};
#include "memtool/interpose/options.def"
#undef MEMTOOL_OPTION
};

struct ParsedOptions {
  Options options;                    // defaults where a value was missing or bad
  std::vector<std::string> errors;    // one line each: "MEMTOOL_LOG='loud': expected ..."
  std::vector<std::string> warnings;  // unknown MEMTOOL_* variables
};

// getenv-like lookup: nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;

// Parses every option of the table. `environment` (NAME=VALUE strings, nullptr-terminated, may
// be nullptr) is scanned for unknown MEMTOOL_* names.
[[nodiscard]] ParsedOptions parse_options(const EnvLookup& lookup, const char* const* environment);

// The options' defaults, exactly as the table gives them.
[[nodiscard]] Options default_options();

// MEMTOOL_TRACE's placeholders: %p the pid, %r the rank (rank_from_environment, else "0"),
// %% a percent sign. Any other % sequence is kept as it is.
[[nodiscard]] std::string expand_path_template(std::string_view path_template, long pid, const EnvLookup& lookup);

[[nodiscard]] std::string_view to_string(LogLevel level);
[[nodiscard]] std::string_view to_string(Toggle toggle);
[[nodiscard]] std::string_view to_string(SwapMode mode);

}  // namespace memtool::interpose
