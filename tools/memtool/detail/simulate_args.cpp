// Argument checks of `memtool simulate` (see simulate_args.hpp).
#include "detail/simulate_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>
#include <utility>

#include "memtool/engine/baselines.hpp"

namespace memtool::cli {

std::uint64_t parse_capacity(std::string_view text) {
  const auto refuse = [&](std::string_view why) {
    return std::invalid_argument(fmt::format("--capacity '{}': {}", text, why));
  };
  std::uint64_t value = 0;
  const char* const end = text.data() + text.size();
  const auto [suffix_begin, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range) throw refuse("too large (at most 2^62 bytes)");
  if (ec != std::errc{} || suffix_begin == text.data()) {
    throw refuse("expected a size in bytes, e.g. 1000000, 512M or 8GiB (K, M, G, T: powers of 1024)");
  }
  std::string suffix(suffix_begin, end);
  std::transform(suffix.begin(), suffix.end(), suffix.begin(), [](unsigned char c) { return std::tolower(c); });
  unsigned shift = 0;
  bool known = false;
  for (const auto& [letter, bits] : {std::pair<std::string_view, unsigned>{"", 0}, {"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}}) {
    for (const std::string_view tail : {"", "b", "ib"}) {
      if ((letter.empty() && tail == "ib") || suffix != std::string(letter) + std::string(tail)) continue;
      known = true;
      shift = bits;
    }
  }
  if (!known) throw refuse("expected a size in bytes, e.g. 1000000, 512M or 8GiB (K, M, G, T: powers of 1024)");
  constexpr std::uint64_t kMax = std::uint64_t{1} << 62;
  if (value > (kMax >> shift)) throw refuse("too large (at most 2^62 bytes)");
  value <<= shift;
  if (value == 0) throw refuse("the device needs at least one byte");
  return value;
}

std::vector<std::string> resolve_resources(const std::vector<std::string>& names) {
  std::vector<std::string> chosen;
  if (names.empty()) {
    for (const auto& r : engine::simulated_resources()) chosen.emplace_back(r.name);
    return chosen;
  }
  for (const std::string& name : names) {
    if (!engine::is_simulated_resource(name)) {
      std::string valid;
      for (const auto& r : engine::simulated_resources()) valid += (valid.empty() ? "" : ", ") + std::string(r.name);
      throw std::invalid_argument(fmt::format("--resource: unknown resource '{}' (valid: {})", name, valid));
    }
    if (std::find(chosen.begin(), chosen.end(), name) == chosen.end()) chosen.push_back(name);
  }
  return chosen;
}

}  // namespace memtool::cli
