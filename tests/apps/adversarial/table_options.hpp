// Command line of table_train: how the grouped step's pointer table is made and what goes
// through it (README.md, "table_train"). Exit 2 on a bad option or value.
#pragma once

#include <cstdint>
#include <string>

namespace table {

// How the table gets its pointers.
enum class Source : std::uint8_t {
  pinned,    // written on the host in pinned memory, cuMemcpyHtoDAsync
  pageable,  // written on the host in ordinary memory, cuMemcpyHtoDAsync
  kernel,    // written on the device, one table_set launch per entry
  global,    // as pinned, then left in a device global by table_publish: the grouped kernels get no table
};

struct Options {
  int steps = 6;
  int layers = 4;          // each with its own table; a launch touches one layer's buffers
  int groups = 4;          // per layer, 1..16
  int words = 512 * 1024;  // 32-bit words per buffer (2 MiB)
  Source source = Source::pinned;
  bool written_only = false;    // only the written buffers through the table; what a kernel only reads is an argument
  bool async = false;           // cuMemAllocAsync / cuMemFreeAsync instead of cuMemAlloc / cuMemFree
  bool refresh = false;         // inputs and outputs allocated each step, the table rewritten each step
  bool table_in_large = false;  // the table inside a buffer of `words` words, at an offset
  bool interior = false;        // entries point kInteriorBytes into their buffers
  std::uint64_t seed = 1;
  std::string module;  // empty on input: app_kernels.fakecuda beside the program
  // Hidden: overwrite one word of group 0's weight through the table once, to prove that the
  // checker counts it (exit 3).
  bool self_test_corrupt = false;
};

constexpr int kMaxGroups = 16;
constexpr int kMaxLayers = 64;
constexpr int kInteriorBytes = 4096;

Options parse_options(int argc, char** argv);

}  // namespace table
