// libFuzzer target for the MiniMalloc CSV problem reader: any byte string must parse into a
// problem that satisfies every validation rule, or be refused with InputError.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/problem_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const memtool::trace::Problem problem = memtool::trace::parse_problem_csv(bytes, "fuzz.csv");
    std::unordered_set<std::uint64_t> ids;
    for (const auto& buffer : problem.buffers) {
      if (!ids.insert(buffer.id).second) __builtin_trap();
      if (buffer.size == 0 || buffer.intervals.size() != 1) __builtin_trap();
      if (buffer.alignment == 0 || (buffer.alignment & (buffer.alignment - 1)) != 0) __builtin_trap();
      const auto& interval = buffer.intervals.front();
      if (interval.begin >= interval.end || interval.end > problem.time_horizon) __builtin_trap();
    }
  } catch (const memtool::trace::InputError& error) {
    if (error.offset() > size) __builtin_trap();
  }
  return 0;
}
