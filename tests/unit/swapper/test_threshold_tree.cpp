// ThresholdTree (swapper/src/threshold_tree.hpp), the bound's per-engine search, against a scan:
// random items coming and going, the lowest value and the items near it with their exact sums.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "threshold_tree.hpp"
#include "transformer_iteration.hpp"

namespace {

using memtool::swapper::detail::ThresholdTree;

struct Item {
  bool present = false;
  std::size_t from = 0;  // its size counts for positions [from, n)
  std::int64_t size = 0;
};

}  // namespace

TEST_CASE("ThresholdTree: the lowest value and the items near it, as a scan finds them", "[swapper][bound]") {
  memtool::test::SplitMix random(7);
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{64}, std::size_t{333}}) {
    INFO(n << " positions");
    std::vector<double> costs(n);
    // Increasing costs with ties, as -rate * key is for keys sorted in decreasing order.
    double cost = -1e6 * random.unit();
    for (double& c : costs) {
      if (random.next() % 3 != 0) cost += 1000 * random.unit();
      c = cost;
    }
    std::vector<Item> items(n);
    for (std::size_t p = 0; p < n; ++p) {
      items[p].from = p + 1 + random.next() % 3;
      items[p].size = static_cast<std::int64_t>(1 + random.next() % 5000);
    }
    ThresholdTree tree(costs);
    CHECK(tree.lowest() == std::numeric_limits<double>::infinity());
    for (int step = 0; step < 2000; ++step) {
      Item& item = items[random.next() % n];
      const std::size_t p = static_cast<std::size_t>(&item - items.data());
      item.present = !item.present;
      tree.set(p, item.present, item.from, item.present ? item.size : -item.size);

      std::vector<std::int64_t> before(n, 0);  // bytes before each position, by a scan
      for (const Item& other : items) {
        if (!other.present) continue;
        for (std::size_t q = other.from; q < n; ++q) before[q] += other.size;
      }
      double lowest = std::numeric_limits<double>::infinity();
      for (std::size_t q = 0; q < n; ++q) {
        if (items[q].present) lowest = std::min(lowest, costs[q] + static_cast<double>(before[q]));
      }
      REQUIRE(tree.lowest() == Approx(lowest).epsilon(1e-12));
      const double slack = 700;
      std::vector<std::size_t> seen;
      tree.near_lowest(slack, [&](std::size_t q, std::int64_t bytes) {
        CHECK(items[q].present);
        CHECK(bytes == before[q]);
        seen.push_back(q);
      });
      for (std::size_t q = 0; q < n; ++q) {
        const bool near = items[q].present && costs[q] + static_cast<double>(before[q]) <= lowest + slack - 1e-6;
        const bool found = std::find(seen.begin(), seen.end(), q) != seen.end();
        if (near) CHECK(found);
      }
    }
  }
}
