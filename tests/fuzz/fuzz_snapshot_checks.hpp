// Shared by fuzz_pickle.cpp and fuzz_snapshot_json.cpp: runs the snapshot importer on the
// fuzzer's bytes and traps when an accepted document breaks the importer's promises
// (definitions before use, no second free of one allocation, counts that add up). Bad input
// must end in InputError; any other exception escapes and libFuzzer reports it.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_set>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/snapshot_import.hpp"

namespace memtool::fuzz {

class SnapshotChecker : public trace::EventVisitor {
 public:
  void on_string(trace::StringId id, std::string_view text) override {
    if (id.value() != strings) __builtin_trap();  // dense, in order
    ++strings;
    for (char c : text) sum += static_cast<unsigned char>(c);
  }
  void on_stack(trace::StackId id, std::span<const trace::StackFrame> frames) override {
    if (id.value() != stacks || frames.empty()) __builtin_trap();
    ++stacks;
    for (const auto& frame : frames) {
      if (frame.function.valid() && frame.function.value() >= strings) __builtin_trap();
      if (frame.file.valid() && frame.file.value() >= strings) __builtin_trap();
    }
  }
  void on_alloc(const trace::AllocEvent& event) override {
    if (event.stack.valid() && event.stack.value() >= stacks) __builtin_trap();
    live.insert(event.address);
    ++allocs;
  }
  void on_free(const trace::FreeEvent& event) override {
    if (live.erase(event.address) == 0) __builtin_trap();  // never a free without a live alloc
    ++frees;
  }

  std::uint32_t strings = 0;
  std::uint32_t stacks = 0;
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t sum = 0;
  std::unordered_set<std::uint64_t> live;
};

template <class Import>
void check_snapshot_import(std::string_view bytes, Import import) {
  SnapshotChecker checker;
  try {
    const trace::SnapshotImportStats stats = import(bytes, checker);
    if (stats.allocs != checker.allocs || stats.frees != checker.frees) __builtin_trap();
    if (stats.strings != checker.strings || stats.stacks != checker.stacks) __builtin_trap();
    if (stats.frees > stats.allocs) __builtin_trap();
    if (stats.reserved_bytes_peak < stats.reserved_bytes_start ||
        stats.reserved_bytes_peak < stats.reserved_bytes_end) {
      __builtin_trap();
    }
  } catch (const trace::InputError& error) {
    if (error.offset() > bytes.size()) __builtin_trap();
  }
}

}  // namespace memtool::fuzz
