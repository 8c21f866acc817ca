// The allocator simulations on hand-checked sequences: the alloc/free order, cudaMalloc's
// rounding, CnMem's best fit with splitting and coalescing, PyTorch's rounding, pools, segment
// sizes, splitting rules and max_split_size.
#include <catch2/catch.hpp>

#include "memtool/planner/baselines.hpp"
#include "problem_builders.hpp"

using namespace planner_test;
namespace mp = memtool::planner;

namespace {
constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * 1024;

std::vector<mp::AllocationEvent> seq(std::initializer_list<std::pair<int, std::uint64_t>> steps) {
  // (+buffer, size) allocates, (-buffer, 0) frees.
  std::vector<mp::AllocationEvent> out;
  for (const auto& [b, size] : steps) {
    out.push_back({b > 0, static_cast<std::uint32_t>(b > 0 ? b : -b), size});
  }
  return out;
}
}  // namespace

TEST_CASE("allocation order: frees before allocations at one time, reallocation per interval", "[planner][baselines]") {
  auto p = problem_of({buffer(1, 10, {{0, 5}, {7, 9}}), buffer(2, 20, {{5, 7}})});
  const auto events = mp::allocation_sequence(p);
  REQUIRE(events.size() == 6);
  CHECK((events[0].allocate && events[0].buffer == 0));
  CHECK((!events[1].allocate && events[1].buffer == 0));  // t=5: free 0 before alloc 1
  CHECK((events[2].allocate && events[2].buffer == 1));
  CHECK((!events[3].allocate && events[3].buffer == 1));
  CHECK((events[4].allocate && events[4].buffer == 0 && events[4].size == 10));
}

TEST_CASE("cudaMalloc: 512 B granule up to 1 MiB, 2 MiB pages beyond", "[planner][baselines]") {
  CHECK(mp::simulate_cuda_malloc(seq({{1, 1}})) == 512);
  CHECK(mp::simulate_cuda_malloc(seq({{1, 1 * MiB}})) == 1 * MiB);
  CHECK(mp::simulate_cuda_malloc(seq({{1, 1 * MiB + 1}})) == 2 * MiB);
  CHECK(mp::simulate_cuda_malloc(seq({{1, 5 * MiB}, {2, 700}})) == 6 * MiB + 1024);
  CHECK(mp::simulate_cuda_malloc(seq({{1, 5 * MiB}, {-1, 0}, {2, 3 * MiB}})) == 6 * MiB);
}

TEST_CASE("cnmem: best fit, split, coalesce, grow at the top", "[planner][baselines]") {
  // 1 and 3 freed leave holes of 1000→1024 and 3000→3072 bytes; 2 sits between them.
  // A 900-byte request takes the 1024 hole (best fit), not the 3072 one: no growth.
  CHECK(mp::simulate_cnmem(seq({{1, 1000}, {2, 512}, {3, 3000}, {4, 512}, {-1, 0}, {-3, 0}, {5, 900}})) ==
        1024 + 512 + 3072 + 512);
  // Freed neighbours coalesce: 1 and 2 freed form one 2048 block that a 2000-byte request fits.
  CHECK(mp::simulate_cnmem(seq({{1, 1024}, {2, 1024}, {3, 512}, {-1, 0}, {-2, 0}, {4, 2000}})) == 2560);
  // Without coalescing it would grow; a free block at the top is extended instead of skipped.
  CHECK(mp::simulate_cnmem(seq({{1, 1024}, {2, 1024}, {-2, 0}, {3, 4096}})) == 1024 + 4096);
}

TEST_CASE("pytorch: small pool, 2 MiB segments, 512 B rounding", "[planner][baselines]") {
  CHECK(mp::simulate_pytorch_caching(seq({{1, 1}})) == 2 * MiB);
  // 4096 requests of 512 B fill exactly one 2 MiB segment; one more needs a second.
  std::vector<mp::AllocationEvent> many;
  for (std::uint32_t i = 0; i < 4096; ++i) many.push_back({true, i, 300});
  CHECK(mp::simulate_pytorch_caching(many) == 2 * MiB);
  many.push_back({true, 9999, 1});
  CHECK(mp::simulate_pytorch_caching(many) == 4 * MiB);
  // 1 MiB exactly is small: two fit one segment.
  CHECK(mp::simulate_pytorch_caching(seq({{1, 1 * MiB}, {2, 1 * MiB}})) == 2 * MiB);
}

TEST_CASE("pytorch: large pool, 20 MiB segments under 10 MiB, 2 MiB rounding above", "[planner][baselines]") {
  CHECK(mp::simulate_pytorch_caching(seq({{1, 1 * MiB + 1}})) == 20 * MiB);
  CHECK(mp::simulate_pytorch_caching(seq({{1, 10 * MiB}})) == 10 * MiB);
  CHECK(mp::simulate_pytorch_caching(seq({{1, 11 * MiB}})) == 12 * MiB);
  // Splitting: 3 × 6 MiB come out of one 20 MiB segment (rest 14 then 8 MiB > 1 MiB).
  CHECK(mp::simulate_pytorch_caching(seq({{1, 6 * MiB}, {2, 6 * MiB}, {3, 6 * MiB}})) == 20 * MiB);
  // The remaining 2 MiB is split off too (> 1 MiB), but a 3 MiB request does not fit it.
  CHECK(mp::simulate_pytorch_caching(seq({{1, 6 * MiB}, {2, 6 * MiB}, {3, 6 * MiB}, {4, 3 * MiB}})) == 40 * MiB);
  // Small and large pools never share: a small request after a large free still needs 2 MiB.
  CHECK(mp::simulate_pytorch_caching(seq({{1, 6 * MiB}, {-1, 0}, {2, 100}})) == 22 * MiB);
  // Reuse after free with coalescing: free 1 and 2 (adjacent), then 12 MiB fits the merged block.
  CHECK(mp::simulate_pytorch_caching(seq({{1, 6 * MiB}, {2, 6 * MiB}, {3, 6 * MiB}, {-1, 0}, {-2, 0}, {4, 12 * MiB}})) ==
        20 * MiB);
}

TEST_CASE("pytorch: a large block is not split when the rest is 1 MiB or less", "[planner][baselines]") {
  // 19.5 MiB from a 20 MiB segment would leave 0.5 MiB: not split, so the next 1.5 MiB request
  // gets a new segment. Requests ≥ 10 MiB get exact 2 MiB-rounded segments: 19.5 → 20 MiB.
  CHECK(mp::simulate_pytorch_caching(seq({{1, 19 * MiB + 512 * KiB}, {2, 1 * MiB + 512 * KiB}})) == 40 * MiB);
  // A 9 MiB request leaves 11 MiB: split; a second 9 MiB fits, leaving 2 MiB: split; 1.5 MiB fits.
  CHECK(mp::simulate_pytorch_caching(seq({{1, 9 * MiB}, {2, 9 * MiB}, {3, 1 * MiB + 512 * KiB}})) == 20 * MiB);
  // Small pool: the rest is split off when at least 512 B (1 MiB, then 1 MiB - 512 leaves
  // exactly 512 B, which a 1-byte request then takes).
  CHECK(mp::simulate_pytorch_caching(seq({{1, 1 * MiB}, {2, 1 * MiB - 512}, {3, 1}})) == 2 * MiB);
  CHECK(mp::simulate_pytorch_caching(seq({{1, 1 * MiB}, {2, 1 * MiB - 512}, {3, 1}, {4, 1}})) == 4 * MiB);
}

TEST_CASE("pytorch: max_split_size keeps oversize blocks whole", "[planner][baselines]") {
  mp::PytorchCachingOptions o;
  o.max_split_size = 8 * MiB;
  // 12 MiB freed is oversize: a 4 MiB request (under the limit) may not take it.
  CHECK(mp::simulate_pytorch_caching(seq({{1, 12 * MiB}, {-1, 0}, {2, 4 * MiB}}), o) == 32 * MiB);
  CHECK(mp::simulate_pytorch_caching(seq({{1, 12 * MiB}, {-1, 0}, {2, 4 * MiB}})) == 12 * MiB);
  // A 10 MiB request may take the 12 MiB block (less than 20 MiB larger), unsplit.
  CHECK(mp::simulate_pytorch_caching(seq({{1, 12 * MiB}, {-1, 0}, {2, 10 * MiB}, {3, 1 * MiB + 1}}), o) == 32 * MiB);
}

TEST_CASE("baselines on a problem: all three, never below the lower bound", "[planner][baselines]") {
  auto p = random_problem(7, {300, 500, 80, 0, false, true, false});
  const auto results = mp::simulate_baselines(p);
  REQUIRE(results.size() == 3);
  CHECK(results[0].name == "cudaMalloc");
  CHECK(results[1].name == "cnmem");
  CHECK(results[2].name == "pytorch");
  std::uint64_t live_peak = 0;
  for (const auto& r : results) CHECK(r.peak_reserved_bytes > 0);
  (void)live_peak;
}
