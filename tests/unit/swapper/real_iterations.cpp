// Loads the fixture logs through the trace analysis tests' log reader (real_iterations.hpp).
#include "real_iterations.hpp"

#include <map>
#include <mutex>

#include "fixture_log.hpp"
#include "memtool/trace/iterations.hpp"
#include "memtool/trace/model.hpp"

namespace memtool::test {

const swapper::TraceInput& real_iteration(const std::string& model) {
  static std::mutex mutex;
  static std::map<std::string, swapper::TraceInput> loaded;
  const std::lock_guard lock(mutex);
  auto it = loaded.find(model);
  if (it == loaded.end()) {
    trace::TraceModel trace_model;
    load_fixture_log(fixture_path(model + ".log"), trace_model);
    const trace::Iterations iterations = trace::find_iterations(trace_model);
    swapper::TraceInputOptions options;
    options.compute = swapper::ComputeModel::bytes;
    it = loaded.emplace(model, swapper::to_swap_input(trace_model, iterations, options)).first;
  }
  return it->second;
}

}  // namespace memtool::test
