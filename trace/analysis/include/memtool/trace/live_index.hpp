// LiveIndex: the live buffers of a trace by base address, for TraceModel while it loads: exact
// lookup, insert, erase, and the greatest base at or below an address (an interior pointer's
// buffer). Sorted blocks of at most kBlockEntries entries of 16 bytes, in address order: 16 to
// 32 bytes per live buffer where a std::map node takes 64 with its allocation, so a trace of
// millions of buffers never freed (each one live to the end) loads in far less memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "memtool/trace/ids.hpp"

namespace memtool::trace {

class LiveIndex {
 public:
  struct Entry {
    std::uint64_t address = 0;
    BufferId id;
  };

  // The entry at exactly `address`, or nullptr. Valid until the next insert or erase.
  [[nodiscard]] Entry* find(std::uint64_t address);
  // Inserts (address, id) and returns its entry and true; when `address` is in already, its
  // entry (unchanged) and false.
  std::pair<Entry*, bool> try_emplace(std::uint64_t address, BufferId id);
  // Removes the entry at `address`; false when there is none.
  bool erase(std::uint64_t address);
  // The entry with the greatest address <= `address`, or nullptr.
  [[nodiscard]] const Entry* at_or_below(std::uint64_t address) const;
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  static constexpr std::size_t kBlockEntries = 512;
  using Block = std::vector<Entry>;
  // The block that holds `address` if any entry does: the last whose first address <= address
  // (0 when none is). blocks_ must not be empty.
  [[nodiscard]] std::size_t block_for(std::uint64_t address) const;
  Block make_block() const;

  std::vector<Block> blocks_;  // each sorted and non-empty; every address of block i < those of i + 1
  std::size_t size_ = 0;
};

}  // namespace memtool::trace
