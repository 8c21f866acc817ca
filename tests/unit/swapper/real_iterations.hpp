// The three real training iterations of tests/fixtures/traces (alexnet, mobilenet_v2, lstm) as
// swapper inputs, read from the fixture logs, which carry every operator's buffers (the
// snapshots of the same runs hold allocations only). Durations: the bytes model at its defaults.
#pragma once

#include <string>
#include <vector>

#include "memtool/swapper/trace_input.hpp"

namespace memtool::test {

inline const std::vector<std::string>& real_models() {
  static const std::vector<std::string> names{"alexnet", "mobilenet_v2", "lstm"};
  return names;
}

// Loaded once per model and process.
const swapper::TraceInput& real_iteration(const std::string& model);

}  // namespace memtool::test
