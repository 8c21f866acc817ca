// libFuzzer target for the swap problem reader (memtool/swapper/problem.hpp): any byte string
// must read into a problem the swapper accepts (validate() passes on its iteration and link) and
// that writes back and reads again to the same text, or be refused with std::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "memtool/swapper/problem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  memtool::swapper::Problem problem;
  try {
    problem = memtool::swapper::read_problem(in);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  if (!memtool::swapper::validate(problem.iteration).empty()) __builtin_trap();
  if (!memtool::swapper::validate(problem.link).empty()) __builtin_trap();
  std::ostringstream once;
  memtool::swapper::write_problem(once, problem);
  std::istringstream again_in(once.str());
  std::ostringstream twice;
  memtool::swapper::write_problem(twice, memtool::swapper::read_problem(again_in));
  if (once.str() != twice.str()) __builtin_trap();
  return 0;
}
