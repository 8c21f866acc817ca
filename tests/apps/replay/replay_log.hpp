// A real PyTorch training run (tests/fixtures/traces/*.log, format in that folder's README) as
// a program to replay through the driver API: every allocation, free and operator in order,
// with the operators' read and written buffers resolved to the allocations live at that point.
//
// Buffers are "slots": one per allocation of the log, numbered densely in log order. Steps
// repeat: a run longer than the log replays its last iteration again with fresh slots for the
// buffers allocated inside it (the logs have no frees across iteration boundaries; the parser
// checks), while persistent buffers keep theirs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace replay {

struct Op {
  enum class Kind : std::uint8_t { alloc, free, launch };
  Kind kind = Kind::alloc;
  std::uint32_t slot = 0;       // alloc / free
  std::uint64_t size = 0;       // alloc
  std::uint32_t kernel = 0;     // launch: index into Program::kernel_names
  std::uint32_t first_ref = 0;  // launch: refs[first_ref, first_ref + ref_count)
  std::uint32_t ref_count = 0;
};

// One buffer an operator touches.
struct Ref {
  std::uint32_t slot = 0;
  bool read = false;
  bool write = false;
};

struct Program {
  std::string model;                      // from the header comment, or the file name
  std::vector<std::string> kernel_names;  // distinct operator names, in first-seen order
  std::vector<Op> setup;                  // before "I 0": model and optimizer construction
  std::vector<std::vector<Op>> steps;     // one per "I n"
  std::vector<Ref> refs;
  std::uint32_t slots = 0;     // allocations in the log
  std::uint64_t max_refs = 0;  // most buffers one operator touches
};

// Parses a log; on a malformed line prints "<path>:<line>: <why>" to stderr and exits 2.
Program parse_log(const std::string& path);

// Allocations in a step.
std::uint64_t allocations(const std::vector<Op>& step);

}  // namespace replay
