// What `memtool simulate` prints: an aligned table (text) or {"resources": [...]} (JSON).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "detail/simulate_replay.hpp"

namespace memtool::cli {

struct SimulationReport {
  std::string input;        // the path
  std::string description;  // what it is (describe_input)
  std::size_t events = 0;
  std::optional<std::uint64_t> capacity;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> steady_iteration;  // events [first, end)
  std::vector<ResourceOutcome> outcomes;
};

[[nodiscard]] std::string render_simulation_text(const SimulationReport& report);
[[nodiscard]] std::string render_simulation_json(const SimulationReport& report);

}  // namespace memtool::cli
