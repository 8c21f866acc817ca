// Argument checks of `memtool simulate` (see simulate_args.hpp).
#include "detail/simulate_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "detail/size_arg.hpp"
#include "memtool/engine/baselines.hpp"
#include "memtool/trace/name_table.hpp"

namespace memtool::cli {

std::optional<std::uint64_t> parse_capacity(std::string_view text) {
  const std::uint64_t bytes = parse_size_arg("--capacity", text).bytes;
  if (bytes == 0) return std::nullopt;  // as without the flag: unlimited
  return bytes;
}

std::vector<std::string> resolve_resources(const std::vector<std::string>& names) {
  std::vector<std::string> chosen;
  if (names.empty()) {
    for (const auto& r : engine::simulated_resources()) chosen.emplace_back(r.name);
    return chosen;
  }
  for (const std::string& name : names) {
    if (!engine::is_simulated_resource(name)) {
      throw std::invalid_argument(fmt::format("--resource: unknown resource '{}' (valid: {})", name,
                                              trace::names_of(engine::simulated_resources())));
    }
    if (std::find(chosen.begin(), chosen.end(), name) == chosen.end()) chosen.push_back(name);
  }
  return chosen;
}

}  // namespace memtool::cli
