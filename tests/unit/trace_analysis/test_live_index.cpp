// LiveIndex against std::map on random inserts, erases and lookups (exact and at-or-below),
// with addresses rising, falling and scattered, so blocks fill, split and empty.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <random>

#include "memtool/trace/live_index.hpp"

using memtool::trace::BufferId;
using memtool::trace::LiveIndex;

namespace {

void check_same(const LiveIndex& index, const std::map<std::uint64_t, std::uint64_t>& expect, std::uint64_t probe) {
  const LiveIndex::Entry* got = index.at_or_below(probe);
  auto it = expect.upper_bound(probe);
  if (it == expect.begin()) {
    REQUIRE(got == nullptr);
  } else {
    --it;
    REQUIRE(got != nullptr);
    REQUIRE(got->address == it->first);
    REQUIRE(got->id.value() == it->second);
  }
}

}  // namespace

TEST_CASE("LiveIndex agrees with std::map", "[model][live_index]") {
  for (const int pattern : {0, 1, 2}) {  // rising, falling, scattered addresses
    INFO("pattern " << pattern);
    std::mt19937_64 random(42 + pattern);
    LiveIndex index;
    std::map<std::uint64_t, std::uint64_t> expect;
    std::uint64_t next = pattern == 1 ? 100'000'000 : 0;
    for (std::uint64_t step = 0; step < 60'000; ++step) {
      const std::uint64_t roll = random() % 10;
      if (roll < 6) {  // insert
        std::uint64_t address = 0;
        if (pattern == 0) address = (next += 512);
        if (pattern == 1) address = (next -= 512);
        if (pattern == 2) address = (random() % 20'000) * 512;
        const auto [entry, inserted] = index.try_emplace(address, BufferId{step});
        const bool fresh = expect.try_emplace(address, step).second;
        REQUIRE(inserted == fresh);
        REQUIRE(entry->address == address);
        REQUIRE(entry->id.value() == expect.at(address));
      } else if (roll < 9 && !expect.empty()) {  // erase one that is there, or one that is not
        auto it = expect.lower_bound((random() % 20'000) * 512);
        if (it == expect.end()) it = expect.begin();
        const std::uint64_t address = random() % 4 == 0 ? it->first + 1 : it->first;
        REQUIRE(index.erase(address) == (expect.erase(address) == 1));
      } else {  // look up
        const std::uint64_t probe = random() % (20'000 * 512 + 1000);
        const LiveIndex::Entry* exact = index.find(probe);
        REQUIRE((exact != nullptr) == (expect.count(probe) == 1));
        check_same(index, expect, probe);
      }
      REQUIRE(index.size() == expect.size());
    }
    for (const auto& [address, id] : expect) {
      check_same(index, expect, address);
      check_same(index, expect, address + 100);
    }
  }
}
