// Size arguments of the memtool command (see size_arg.hpp).
#include "detail/size_arg.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace memtool::cli {

trace::ByteSize parse_size_arg(std::string_view name, std::string_view text, const trace::ByteGrammar& grammar) {
  std::string problem;
  const auto size = trace::parse_bytes(text, grammar, &problem);
  if (!size) throw std::invalid_argument(fmt::format("{} '{}': {}", name, text, problem));
  return *size;
}

}  // namespace memtool::cli
