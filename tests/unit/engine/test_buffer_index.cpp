// The index of live buffers: interior pointers, removal, range removal, scanning.
#include <catch2/catch.hpp>

#include "memtool/engine/buffer_index.hpp"

using namespace memtool::engine;
using memtool::trace::MemoryKind;

TEST_CASE("lookups find the buffer containing an address", "[engine][index]") {
  BufferIndex index;
  index.insert({0x1000, 0x100, MemoryKind::device});
  index.insert({0x2000, 0x10, MemoryKind::async});
  index.insert({0x3000, 0, MemoryKind::device});  // a zero-byte allocation still has its address
  CHECK(index.size() == 3);
  CHECK(index.live_bytes() == 0x110);
  CHECK(index.find(0x1000)->base == 0x1000);
  CHECK(index.find(0x10ff)->base == 0x1000);  // interior pointer
  CHECK_FALSE(index.find(0x1100));            // one past the end
  CHECK_FALSE(index.find(0xfff));
  CHECK(index.find(0x200f)->kind == MemoryKind::async);
  CHECK(index.find(0x3000)->base == 0x3000);
  CHECK_FALSE(index.find(0x3001));
  CHECK_FALSE(index.find(0));
  CHECK_FALSE(index.find(~0ULL));
}

TEST_CASE("removal", "[engine][index]") {
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

TEST_CASE("scan reports each touched buffer once, in first-touch order", "[engine][index]") {
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

TEST_CASE("the address bounds follow insertions and removals at either end", "[engine][index]") {
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

TEST_CASE("thousands of buffers in shared regions, all freed and allocated again, in rounds", "[engine][index]") {
  BufferIndex index;
  constexpr std::uint64_t kBuffers = 6000;  // 256-byte spacing: ~8,000 per 2 MiB region
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

TEST_CASE("lookups agree with a plain list under random allocations and frees", "[engine][index]") {
  // Sizes from 0 bytes to 200 MiB (past the region table's 64 MiB "large" threshold), bases
  // 256-aligned, never overlapping, regions shared and crossed; frees, range frees and
  // stale replacements mixed in; every lookup checked against a linear search.
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto random = [&state](std::uint64_t bound) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state % bound;
  };
  struct Ref {
    std::uint64_t base;
    std::uint64_t size;
  };
  std::vector<Ref> live;
  BufferIndex index;
  std::uint64_t cursor = 0x7f0000000000;
  auto overlaps = [&](std::uint64_t base, std::uint64_t size) {
    const std::uint64_t end = base + std::max<std::uint64_t>(size, 1);
    return std::any_of(live.begin(), live.end(), [&](const Ref& r) {
      return base < r.base + std::max<std::uint64_t>(r.size, 1) && r.base < end;
    });
  };
  auto reference_find = [&](std::uint64_t address) -> const Ref* {
    for (const Ref& r : live) {
      if (address - r.base < std::max<std::uint64_t>(r.size, 1)) return &r;
    }
    return nullptr;
  };
  std::uint64_t checked = 0;
  for (int step = 0; step < 4000; ++step) {
    const std::uint64_t what = random(100);
    if (what < 45 || live.empty()) {
      const std::uint64_t kind = random(20);
      const std::uint64_t size = kind == 0   ? 0
                                 : kind < 15 ? 256 * (1 + random(4096))
                                 : kind < 19 ? (1 + random(8)) << 21
                                             : (65 + random(136)) << 20;
      std::uint64_t base = random(3) == 0 ? cursor + random(1 << 22) * 256 : cursor;
      if (overlaps(base, size)) base = cursor;
      cursor = std::max(cursor, base + std::max<std::uint64_t>(size, 1) + 256 * random(64));
      cursor = (cursor + 255) & ~std::uint64_t{255};
      index.insert({base, size, MemoryKind::device});
      live.push_back({base, size});
    } else if (what < 85) {
      const std::size_t victim = random(live.size());
      REQUIRE(index.erase(live[victim].base));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
    } else if (what < 90) {
      const Ref& r = live[random(live.size())];  // a free that was never seen: same base, new size
      const std::uint64_t smaller = r.size / 2;
      index.insert({r.base, smaller, MemoryKind::device});
      live[static_cast<std::size_t>(&r - live.data())].size = smaller;
    } else {
      const Ref& r = live[random(live.size())];
      const std::uint64_t begin = r.base;
      const std::uint64_t end = begin + (8ULL << 20);
      const auto removed = index.erase_range(begin, end);
      const auto before = live.size();
      live.erase(
          std::remove_if(live.begin(), live.end(), [&](const Ref& x) { return x.base >= begin && x.base < end; }),
          live.end());
      REQUIRE(removed.size() == before - live.size());
    }
    for (int probe = 0; probe < 20; ++probe) {
      std::uint64_t address = 0;
      if (!live.empty() && probe % 2 == 0) {
        const Ref& r = live[random(live.size())];
        address = r.base + random(std::max<std::uint64_t>(r.size, 1) + 512);  // inside, or just past
      } else {
        address = 0x7f0000000000 + random(cursor - 0x7f0000000000 + 4096);
      }
      const Ref* expected = reference_find(address);
      const LiveBuffer* found = index.find(address);
      INFO("step " << step << " address " << address);
      REQUIRE((found == nullptr) == (expected == nullptr));
      if (found != nullptr) REQUIRE(found->base == expected->base);
      ++checked;
    }
    REQUIRE(index.size() == live.size());
  }
  CHECK(checked == 4000 * 20);
}

TEST_CASE("regions emptied by frees are dropped in bulk and lookups stay right", "[engine][index]") {
  BufferIndex index;
  constexpr std::uint64_t kRegion = 2ULL << 20;
  constexpr std::uint64_t kBuffers = 3000;  // each in a region of its own
  for (std::uint64_t i = 0; i < kBuffers; ++i) index.insert({0x7f0000000000 + i * kRegion, 4096, MemoryKind::device});
  for (std::uint64_t i = 0; i < kBuffers; ++i) {
    if (i % 6 != 0) REQUIRE(index.erase(0x7f0000000000 + i * kRegion));  // 2,500 regions emptied
  }
  for (std::uint64_t i = 0; i < kBuffers; ++i) {
    const std::uint64_t base = 0x7f0000000000 + i * kRegion;
    INFO(i);
    if (i % 6 == 0) {
      REQUIRE(index.find(base + 100) != nullptr);
      REQUIRE(index.find(base + 100)->base == base);
    } else {
      REQUIRE(index.find(base + 100) == nullptr);
    }
  }
  // Refilled, emptied and refilled again: the kept regions serve the new buffers.
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t i = 1; i < kBuffers; i += 6)
      index.insert({0x7f0000000000 + i * kRegion + 512, 64, MemoryKind::device});
    for (std::uint64_t i = 1; i < kBuffers; i += 6)
      CHECK(index.find(0x7f0000000000 + i * kRegion + 575)->base == 0x7f0000000000 + i * kRegion + 512);
    for (std::uint64_t i = 1; i < kBuffers; i += 6) REQUIRE(index.erase(0x7f0000000000 + i * kRegion + 512));
  }
  CHECK(index.size() == kBuffers / 6);
}
