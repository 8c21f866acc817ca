// `memtool simulate TRACE`: replay a recorded trace or a PyTorch snapshot, event by event,
// against each allocator — the driver's, CnMem-like, PyTorch's caching allocator and memtool's
// planned pool — on a simulated device (of --capacity bytes), and say what each held at its
// worst, how that compares with the live bytes, and which allocation it would have failed first.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.hpp"
#include "detail/load_model.hpp"
#include "detail/simulate_args.hpp"
#include "detail/simulate_output.hpp"
#include "detail/simulate_replay.hpp"
#include "memtool/engine/baselines.hpp"

namespace memtool::cli {
namespace {

struct SimulateArgs {
  std::string input;
  std::vector<std::string> resources;
  std::string capacity;
  std::string format = "text";
  std::optional<std::size_t> device;
};

int run_simulate(const SimulateArgs& args) {
  SimulationOptions options;
  try {
    options.resources = resolve_resources(args.resources);
    if (!args.capacity.empty()) options.capacity = parse_capacity(args.capacity);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "memtool: error: {}\n", e.what());
    return 2;
  }
  LoadModelOptions load_options;
  load_options.device = args.device;
  const LoadedModel loaded = load_model(args.input, load_options);
  for (auto it = loaded.iterations.spans.rbegin(); it != loaded.iterations.spans.rend(); ++it) {
    if (it->complete) {
      options.steady_iteration = std::pair(it->first_event, it->end_event);
      break;
    }
  }
  SimulationReport report;
  report.input = args.input;
  report.description = describe_input(loaded.summary);
  report.events = loaded.model.event_count();
  report.capacity = options.capacity;
  report.steady_iteration = options.steady_iteration;
  report.outcomes = simulate_trace(loaded.model, options);
  const std::string text =
      args.format == "json" ? render_simulation_json(report) : render_simulation_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

std::function<int()> setup_simulate(CLI::App& sub) {
  auto args = std::make_shared<SimulateArgs>();
  sub.add_option("input", args->input, "memtool trace, PyTorch snapshot (.pickle) or snapshot JSON")->required();
  std::string names;
  for (const auto& r : engine::simulated_resources()) names += fmt::format("\n  {}: {}", r.name, r.description);
  sub.add_option("--resource", args->resources, "resources to replay against, comma-separated (default: all):" + names)
      ->delimiter(',');
  sub.add_option("--capacity", args->capacity, "device memory, bytes (K, M, G, T suffixes; default: unlimited)");
  sub.add_option("--format", args->format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  sub.add_option("--device", args->device, "snapshots: which device's trace (default: the busiest)");
  return [args] { return run_simulate(*args); };
}

MEMTOOL_COMMAND("simulate", "Replay a trace against cudaMalloc, CnMem, PyTorch's caching allocator and the planned pool",
                setup_simulate);

}  // namespace
}  // namespace memtool::cli
