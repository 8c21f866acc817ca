// The option table (options.def) as data: name, type, default and description of every
// MEMTOOL_* variable. Header-only so that the memtool tool prints `memtool help env` from the
// very table libmemtool.so parses.
#pragma once

#include <array>
#include <string_view>

namespace memtool::interpose {

enum class OptionType {
  flag,
  count,
  bytes,
  budget,
  strategy,
  log_level,
  path,
  path_template,
  regex,
  toggle,
  swap_mode,
  swap_policy,
  rate,
  buffer_size,
  count_or_zero
};

struct OptionInfo {
  std::string_view name;  // MEMTOOL_...
  OptionType type;
  std::string_view default_value;
  std::string_view description;
};

inline constexpr std::array kOptionTable = {
#define MEMTOOL_OPTION(field, NAME, type, default_value, description) \
  OptionInfo{"MEMTOOL_" #NAME, OptionType::type, default_value, description},
#include "memtool/interpose/options.def"
#undef MEMTOOL_OPTION
};

// What a value of `type` looks like, for messages and help.
[[nodiscard]] constexpr std::string_view value_syntax(OptionType type) {
  switch (type) {
    case OptionType::flag:
      return "0|1";
    case OptionType::count:
      return "N";
    case OptionType::count_or_zero:
      return "N (0: none)";
    case OptionType::bytes:
      return "SIZE";
    case OptionType::budget:
      return "SIZE or P%";
    case OptionType::rate:
      return "SIZE[/s]";
    case OptionType::buffer_size:
      return "SIZE";
    case OptionType::strategy:
      return "record|off|pool|swap";
    case OptionType::log_level:
      return "off|error|warn|info|debug";
    case OptionType::path:
      return "PATH";
    case OptionType::path_template:
      return "PATH (%p, %r)";
    case OptionType::regex:
      return "REGEX";
    case OptionType::toggle:
      return "auto|on|off";
    case OptionType::swap_mode:
      return "explicit|uvm";
    case OptionType::swap_policy:
      return "ours|paper-doa|paper-aoa|paper-wdoa|paper-vote|save-on-cpu|belady";
  }
  return "?";
}

}  // namespace memtool::interpose
