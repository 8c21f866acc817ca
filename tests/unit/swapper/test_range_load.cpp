// The strategies' load per op (swapper/src/range_load.hpp): every answer against a plain array
// changed and scanned the way the strategies did before it, on random ranges that wrap around
// the iteration.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "range_load.hpp"
#include "transformer_iteration.hpp"

namespace md = memtool::swapper::detail;

namespace {

struct Scanned {
  std::vector<std::int64_t> values;
  void add(std::uint64_t begin, std::uint64_t end, std::int64_t delta) {
    const std::uint64_t n = values.size();
    end = std::min(end, begin + n);
    for (std::uint64_t u = begin; u < end; ++u) values[u % n] += delta;
  }
  [[nodiscard]] std::int64_t at(std::uint64_t u) const { return values[u % values.size()]; }
  [[nodiscard]] std::int64_t peak() const { return *std::max_element(values.begin(), values.end()); }
  [[nodiscard]] std::uint64_t first_over(std::uint64_t begin, std::uint64_t end, std::int64_t limit) const {
    for (std::uint64_t u = begin; u < end; ++u) {
      if (at(u) > limit) return u;
    }
    return end;
  }
  [[nodiscard]] std::uint64_t last_over(std::uint64_t begin, std::uint64_t end, std::int64_t limit) const {
    for (std::uint64_t u = end; u > begin; --u) {
      if (at(u - 1) > limit) return u - 1;
    }
    return end;
  }
};

}  // namespace

TEST_CASE("the range load answers as the scan of a plain array does", "[swapper][range_load]") {
  memtool::test::SplitMix random(7);
  for (const std::size_t n : {1U, 2U, 3U, 7U, 64U, 100U, 1000U}) {
    INFO("n = " << n);
    Scanned scanned;
    for (std::size_t i = 0; i < n; ++i) scanned.values.push_back(static_cast<std::int64_t>(random.next() % 1000));
    md::RangeLoad load(scanned.values);
    REQUIRE(load.size() == n);
    for (int step = 0; step < 400; ++step) {
      const std::uint64_t begin = random.next() % (3 * n);
      const std::uint64_t end = begin + random.next() % (n + 3);
      const auto delta = static_cast<std::int64_t>(random.next() % 200) - 100;
      scanned.add(begin, end, delta);
      load.add(begin, end, delta);
      REQUIRE(load.peak() == scanned.peak());
      const std::uint64_t u = random.next() % (3 * n);
      REQUIRE(load.at(u) == scanned.at(u));
      const std::uint64_t qb = random.next() % (2 * n);
      const std::uint64_t qe = qb + random.next() % (2 * n + 2);
      const std::int64_t limit = scanned.peak() - static_cast<std::int64_t>(random.next() % 300);
      REQUIRE(load.first_over(qb, qe, limit) == scanned.first_over(qb, qe, limit));
      REQUIRE(load.last_over(qb, qe, limit) == scanned.last_over(qb, qe, limit));
    }
  }
}

TEST_CASE("the range load: no op over the limit, empty ranges, a whole period at once", "[swapper][range_load]") {
  md::RangeLoad load(std::vector<std::uint64_t>{5, 9, 2, 9});
  CHECK(load.peak() == 9);
  CHECK(load.first_over(0, 4, 9) == 4);  // none above: the end
  CHECK(load.last_over(2, 2, 0) == 2);   // an empty range
  CHECK(load.first_over(2, 6, 8) == 3);  // op 3, then op 1 of the next period
  CHECK(load.last_over(2, 6, 8) == 5);
  load.add(3, 10, -1);  // more than a period: each op once
  CHECK(load.at(0) == 4);
  CHECK(load.at(7) == 8);
  CHECK(load.peak() == 8);
  md::RangeLoad empty(std::vector<std::uint64_t>{});
  CHECK(empty.size() == 0);
}
