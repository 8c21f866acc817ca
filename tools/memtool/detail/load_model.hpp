// Loading any event-bearing input (memtool trace, PyTorch snapshot) into a TraceModel and
// finding its iterations: the first step of every analysing verb.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "memtool/trace/input.hpp"
#include "memtool/trace/iterations.hpp"
#include "memtool/trace/model.hpp"

namespace memtool::cli {

struct LoadModelOptions {
  std::optional<std::size_t> device;  // snapshots: which device's trace
  bool use_marks = true;              // explicit iteration marks win over detection
  bool progress = true;               // progress lines on stderr for large inputs
};

struct LoadedModel {
  std::string path;
  trace::LoadSummary summary;
  trace::TraceModel model;
  trace::Iterations iterations;
};

// Throws trace::InputError on unreadable, corrupt or unsupported input. A truncated memtool
// trace is loaded up to its last complete record, with a warning on stderr. The file is opened
// once (a pipe or FIFO works); a caller that already read it passes its MappedFile.
[[nodiscard]] LoadedModel load_model(const std::string& path, const LoadModelOptions& options);
[[nodiscard]] LoadedModel load_model(const trace::MappedFile& input, const std::string& path,
                                     const LoadModelOptions& options);

// "memtool trace", "PyTorch snapshot (pickle, protocol 4)", ...
[[nodiscard]] std::string describe_input(const trace::LoadSummary& summary);

}  // namespace memtool::cli
