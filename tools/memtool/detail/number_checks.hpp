// Option checks CLI11 lacks: its Range lets NaN through (every comparison with NaN is false),
// and an unsigned option takes "-1" as 2^64 - 1. A failed check is a usage error (exit 2).
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace memtool::cli {

// A number that is neither NaN nor infinite (combine with CLI::Range or NonNegativeNumber).
inline CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value)) {
          return "must be a finite number, not '" + text + "'";
        }
        return {};
      },
      "FINITE");
}

// A finite number at least 0 ("-1" is refused before an unsigned option wraps it).
inline CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || value < 0) {
          return "must be a number of 0 or more, not '" + text + "'";
        }
        return {};
      },
      "NONNEGATIVE");
}

}  // namespace memtool::cli
