// The index of live buffers: interior pointers, removal, range removal, scanning.
#include <catch2/catch.hpp>

#include "memtool/interpose/buffer_index.hpp"

using namespace memtool::interpose;
using memtool::trace::MemoryKind;

TEST_CASE("lookups find the buffer containing an address", "[interpose][index]") {
  BufferIndex index;
  index.insert({0x1000, 0x100, MemoryKind::device});
  index.insert({0x2000, 0x10, MemoryKind::async});
  index.insert({0x3000, 0, MemoryKind::device});  // a zero-byte allocation still has its address
  CHECK(index.size() == 3);
  CHECK(index.live_bytes() == 0x110);
  CHECK(index.find(0x1000)->base == 0x1000);
  CHECK(index.find(0x10ff)->base == 0x1000);  // interior pointer
  CHECK_FALSE(index.find(0x1100));             // one past the end
  CHECK_FALSE(index.find(0xfff));
  CHECK(index.find(0x200f)->kind == MemoryKind::async);
  CHECK(index.find(0x3000)->base == 0x3000);
  CHECK_FALSE(index.find(0x3001));
  CHECK_FALSE(index.find(0));
  CHECK_FALSE(index.find(~0ULL));
}

TEST_CASE("removal", "[interpose][index]") {
  BufferIndex index;
  index.insert({0x1000, 0x100, MemoryKind::device});
  CHECK_FALSE(index.erase(0x1010));  // only a base frees
  CHECK(index.erase(0x1000)->size == 0x100);
  CHECK_FALSE(index.erase(0x1000));
  CHECK_FALSE(index.find(0x1000));
  CHECK(index.live_bytes() == 0);

  // A stale entry at a reused base is replaced, and the live bytes stay right.
  index.insert({0x1000, 0x100, MemoryKind::device});
  index.insert({0x1000, 0x40, MemoryKind::device});
  CHECK(index.size() == 1);
  CHECK(index.live_bytes() == 0x40);

  index.insert({0x200000, 0x200000, MemoryKind::vmm});
  index.insert({0x400000, 0x200000, MemoryKind::vmm});
  index.insert({0x600000, 0x200000, MemoryKind::vmm});
  const auto removed = index.erase_range(0x200000, 0x600000);
  CHECK(removed.size() == 2);
  CHECK(index.find(0x600000));
  CHECK_FALSE(index.find(0x400000));
  CHECK(index.live_bytes() == 0x40 + 0x200000);
}

TEST_CASE("scan reports each touched buffer once, in first-touch order", "[interpose][index]") {
  BufferIndex index;
  index.insert({0x10000, 0x1000, MemoryKind::device});
  index.insert({0x20000, 0x1000, MemoryKind::device});
  const std::uint64_t words[] = {7, 0x20010, 0x10000, 0x20ff0, 0x3f800000, 0x10fff, 0x11000};
  std::vector<std::uint64_t> bases{0xdead};  // scan appends
  index.scan(words, bases);
  CHECK(bases == std::vector<std::uint64_t>{0xdead, 0x20000, 0x10000});
  // The recorder's variant (its own lock excludes writers) finds the same.
  std::vector<std::uint64_t> unlocked{0xbeef};
  index.scan_unlocked(words, unlocked);
  CHECK(unlocked == std::vector<std::uint64_t>{0xbeef, 0x20000, 0x10000});
  index.erase(0x20000);
  unlocked.clear();
  index.scan_unlocked(words, unlocked);
  CHECK(unlocked == std::vector<std::uint64_t>{0x10000});
}
