// The verb table (verbs.def) as data, for main.cpp (the verb list and each verb's --help) and
// the man pages (detail/man_page.cpp).
#pragma once

#include <array>
#include <string_view>

namespace memtool::cli {

inline constexpr std::string_view kProgramSummary =
    "record, analyse and shrink the GPU memory of repetitive CUDA programs";
inline constexpr std::string_view kProgramDescription =
    "memtool makes an unmodified CUDA training program use less GPU memory. Preloaded into the program "
    "(memtool run, memtool record), libmemtool.so interposes the CUDA driver API, records every buffer's "
    "lifetime and the kernels that touch it, finds the training step, and then serves each step from a planned "
    "pool (strategy pool) or keeps the device within a budget by moving idle buffers to the host (strategy "
    "swap). Offline, memtool report, plan, simulate and export show what a run used and what a plan would "
    "save. memtool doctor says what this machine allows.";
// Where memtool run and record find libmemtool.so (detail/preload_run.cpp).
inline constexpr std::string_view kLibraryLookup =
    "memtool run and memtool record preload libmemtool.so from $MEMTOOL_LIBRARY when set; else from ../lib "
    "(and ../lib64) beside the directory of the memtool executable, as installed (bin/memtool, "
    "lib/libmemtool.so), then the executable's own directory, then the build tree (build/tools/memtool/memtool, "
    "build/interpose/libmemtool.so).";

struct VerbInfo {
  std::string_view name;
  std::string_view summary;      // one line
  std::string_view description;  // one paragraph
  std::string_view example;      // one command line
};

inline constexpr std::array kVerbTable = {
#define MEMTOOL_VERB(name, summary, description, example) VerbInfo{#name, summary, description, example},
#include "verbs.def"
#undef MEMTOOL_VERB
};

// The table's row for `name`; nullptr when the verb has none.
[[nodiscard]] constexpr const VerbInfo* find_verb(std::string_view name) {
  for (const VerbInfo& verb : kVerbTable) {
    if (verb.name == name) return &verb;
  }
  return nullptr;
}

}  // namespace memtool::cli
