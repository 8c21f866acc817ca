// Command line of adversarial_train: the apps' conventions (--iterations, --seed, --module, exit 2
// on a bad value) plus the knobs of the adversarial schedule.
#pragma once

#include <cstdint>
#include <string>

namespace adversarial {

struct Options {
  int iterations = 12;
  std::uint64_t seed = 1;
  std::string module;    // empty on input: app_kernels.fakecuda beside the program
  int threads = 1;       // host threads, each with its own streams (1..8)
  int shape_period = 5;  // iterations between shape changes
  // Hidden: overwrite one word of one buffer between its fill and its verification, to prove
  // that the checker fails (exit 3) when memory is corrupted.
  bool self_test_corrupt = false;
};

// Parses argv; prints usage and exits 0 on --help, exits 2 on a bad option or value.
Options parse_options(int argc, char** argv);

}  // namespace adversarial
