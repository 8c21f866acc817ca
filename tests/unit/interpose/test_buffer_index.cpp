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
  index.erase(0x20000);
  std::vector<std::uint64_t> after;
  index.scan(words, after);
  CHECK(after == std::vector<std::uint64_t>{0x10000});
}

TEST_CASE("the address bounds follow insertions and removals at either end", "[interpose][index]") {
  BufferIndex index;
  index.insert({0x5000, 0x100, MemoryKind::device});
  index.insert({0x1000, 0x100, MemoryKind::device});  // a new lowest
  index.insert({0x9000, 0x100, MemoryKind::device});  // a new highest
  index.insert({0x3000, 0x100, MemoryKind::device});  // interior
  CHECK(index.find(0x1000));
  CHECK(index.find(0x90ff));
  index.erase(0x3000);  // interior: the others stay found
  CHECK(index.find(0x1080));
  CHECK(index.find(0x9080));
  index.erase(0x9000);  // the highest: 0x9000 is gone, 0x5000 still found
  CHECK_FALSE(index.find(0x9000));
  CHECK(index.find(0x50ff));
  index.erase(0x1000);  // the lowest
  CHECK_FALSE(index.find(0x1000));
  CHECK(index.find(0x5000));
  index.erase(0x5000);
  CHECK(index.size() == 0);
  CHECK_FALSE(index.find(0x5000));
  // A stale entry replaced by a smaller buffer at the same base shrinks the bounds.
  index.insert({0x8000, 0x1000, MemoryKind::device});
  index.insert({0x8000, 0x10, MemoryKind::device});
  CHECK(index.find(0x800f));
  CHECK_FALSE(index.find(0x8010));
}

TEST_CASE("recycled map nodes: more frees than the free list keeps, then reuse", "[interpose][index]") {
  BufferIndex index;
  constexpr std::uint64_t kBuffers = 6000;  // above the 4096 nodes kept for reuse
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t i = 0; i < kBuffers; ++i) index.insert({0x100000 + i * 0x100, 0x80, MemoryKind::device});
    CHECK(index.size() == kBuffers);
    CHECK(index.live_bytes() == kBuffers * 0x80);
    CHECK(index.find(0x100000 + 4321 * 0x100 + 0x7f)->base == 0x100000 + 4321 * 0x100);
    CHECK_FALSE(index.find(0x100000 + 4321 * 0x100 + 0x80));
    for (std::uint64_t i = 0; i < kBuffers; i += 2) REQUIRE(index.erase(0x100000 + i * 0x100));
    for (std::uint64_t i = 1; i < kBuffers; i += 2) REQUIRE(index.erase(0x100000 + i * 0x100));
    CHECK(index.size() == 0);
    CHECK(index.live_bytes() == 0);
  }
}
