// The swap rule itself (eviction_rule.hpp), on scripted candidates: its order (farthest next use
// first, unknown futures first of all, ties by least recent use then the caller's tie, those that
// leave at once last), the horizon, the host limit, stopping as soon as the bytes fit, kept
// candidates put back, and the swap-ins due (soonest first, the first without room holding the rest).
#include <catch2/catch.hpp>

#include <vector>

#include "memtool/swapper/eviction_rule.hpp"

namespace ms = memtool::swapper;
using ms::EvictionRule;
using ms::kUnknownUse;
using ms::Offer;
using ms::RuleCandidate;

namespace {

RuleCandidate candidate(std::uint64_t handle, std::uint64_t next, std::uint64_t last = 0, bool at_once = false,
                        std::uint64_t bytes = 10) {
  RuleCandidate c;
  c.handle = handle;
  c.next_use = next;
  c.last_use = last;
  c.tie = handle;
  c.bytes = bytes;
  c.at_once = at_once;
  return c;
}

constexpr auto kNoHostLimit = [] { return kUnknownUse; };

// One pass that sends out everything offered until `room_after` candidates are out.
std::vector<std::uint64_t> victims(std::vector<RuleCandidate> heap, std::uint64_t horizon, std::size_t room_after,
                                   EvictionRule::Pass* pass = nullptr) {
  EvictionRule::make_heap(heap);
  std::vector<std::uint64_t> out;
  const EvictionRule::Pass p = EvictionRule::send_out(
      heap, horizon, [&] { return out.size() >= room_after; }, kNoHostLimit,
      [&](const RuleCandidate& c) {
        out.push_back(c.handle);
        return Offer::sent;
      });
  if (pass != nullptr) *pass = p;
  return out;
}

}  // namespace

TEST_CASE("the rule's order: farthest first, unknown first of all, ties by least recent use, at once last",
          "[swapper][rule]") {
  const std::vector<RuleCandidate> all = {
      candidate(1, 5),                         // next use 5
      candidate(2, 9),                         // 9: farther
      candidate(3, kUnknownUse, 7),            // unknown, used at 7
      candidate(4, kUnknownUse, 2),            // unknown, used at 2: less recently
      candidate(5, 9, 1),                      // 9, used at 1: before 2 (used at 0)
      candidate(6, 100, 0, /*at_once*/ true),  // farthest, but must leave at once
      candidate(7, 5),                         // ties with 1 on every key: the caller's tie (handle)
  };
  CHECK(victims(all, 0, all.size()) == std::vector<std::uint64_t>{4, 3, 2, 5, 1, 7, 6});
  CHECK(EvictionRule::leaves_before(candidate(1, 5), candidate(7, 5)));
  CHECK_FALSE(EvictionRule::leaves_before(candidate(7, 5), candidate(1, 5)));
}

TEST_CASE("the rule stops as soon as the bytes fit, and at the first candidate needed within the horizon",
          "[swapper][rule]") {
  const std::vector<RuleCandidate> all = {candidate(1, 3), candidate(2, 8), candidate(3, 6), candidate(4, 1)};
  CHECK(victims(all, 0, 0).empty());  // fits already: none leaves
  CHECK(victims(all, 0, 2) == std::vector<std::uint64_t>{2, 3});
  // Needed within 3: 1 (next use 3) and 4 stay, however short of room.
  CHECK(victims(all, 3, all.size()) == std::vector<std::uint64_t>{2, 3});
  CHECK(EvictionRule::needed_within(3, 3));
  CHECK_FALSE(EvictionRule::needed_within(4, 3));
  CHECK_FALSE(EvictionRule::needed_within(kUnknownUse, kUnknownUse - 1));
}

TEST_CASE("the rule keeps to the host limit, and puts back what the caller keeps", "[swapper][rule]") {
  std::vector<RuleCandidate> heap = {candidate(1, 9, 0, false, 30), candidate(2, 8, 0, false, 10),
                                     candidate(3, 7, 0, false, 10), candidate(4, 6, 0, false, 10)};
  EvictionRule::make_heap(heap);
  std::uint64_t host_left = 25;
  std::vector<std::uint64_t> out;
  const EvictionRule::Pass pass = EvictionRule::send_out(
      heap, 0, [&] { return out.size() >= 2; }, [&] { return host_left; },
      [&](const RuleCandidate& c) {
        if (c.handle == 2) return Offer::kept;  // a candidate still, not now
        if (c.handle == 4) return Offer::dropped;
        out.push_back(c.handle);
        host_left -= c.bytes;
        return Offer::sent;
      });
  // 1 (30 B) passes the host's 25 B: it stays; 2 is kept; 3 goes (15 B left); 4 is dropped.
  CHECK(out == std::vector<std::uint64_t>{3});
  CHECK(pass.sent == 1);
  CHECK(pass.host_full);
  // 1 and 2 are back in the heap in the rule's order; 3 and 4 are not.
  std::vector<std::uint64_t> left;
  (void)EvictionRule::send_out(
      heap, 0, [] { return false; }, kNoHostLimit,
      [&](const RuleCandidate& c) {
        left.push_back(c.handle);
        return Offer::sent;
      });
  CHECK(left == std::vector<std::uint64_t>{1, 2});
  CHECK(heap.empty());
}

TEST_CASE("a candidate keyed by next use alone is ordered and sent out as the full candidate with those keys",
          "[swapper][rule]") {
  // The simulator's 16-byte entries (NextUseCandidate) against RuleCandidates with the same next
  // use and tie: the same pass, the same kept ones put back, on repeated next uses and ties.
  std::vector<RuleCandidate> full;
  std::vector<ms::NextUseCandidate> compact;
  for (std::uint32_t h = 0; h < 64; ++h) {
    const std::uint64_t next = (h * 37U) % 11U;  // repeats: ties broken by `tie`
    RuleCandidate f = candidate(h, next);
    f.tie = 1000U - h;
    full.push_back(f);
    compact.push_back({next, 1000U - h, h});
  }
  CHECK(sizeof(ms::NextUseCandidate) == 16);
  for (std::size_t a = 0; a < full.size(); ++a) {
    for (std::size_t b = 0; b < full.size(); ++b) {
      CHECK(EvictionRule::leaves_before(full[a], full[b]) == EvictionRule::leaves_before(compact[a], compact[b]));
    }
  }
  // Every third offered is kept, every fifth dropped; passes until the heaps are empty of all
  // but those needed within the horizon.
  const auto decide = [](std::uint64_t handle) {
    return handle % 3 == 0 ? Offer::kept : handle % 5 == 0 ? Offer::dropped : Offer::sent;
  };
  EvictionRule::make_heap(full);
  EvictionRule::make_heap(compact);
  for (std::size_t room : {5U, 9U, 100U}) {
    std::vector<std::uint64_t> full_out;
    std::vector<std::uint64_t> compact_out;
    (void)EvictionRule::send_out(
        full, 2, [&] { return full_out.size() >= room; }, kNoHostLimit,
        [&](const RuleCandidate& c) {
          full_out.push_back(c.handle);
          return decide(c.handle);
        });
    (void)EvictionRule::send_out(
        compact, 2, [&] { return compact_out.size() >= room; }, kNoHostLimit,
        [&](const ms::NextUseCandidate& c) {
          compact_out.push_back(c.handle);
          return decide(c.handle);
        });
    CHECK_FALSE(full_out.empty());
    CHECK(full_out == compact_out);
    REQUIRE(full.size() == compact.size());
  }
}

TEST_CASE("swap-ins due come back soonest first; the first without room holds back the rest", "[swapper][rule]") {
  const auto run = [](std::vector<ms::DueIn> due, std::uint64_t no_room_at, std::uint64_t skip, std::uint64_t stop) {
    std::vector<std::uint64_t> back;
    std::vector<std::uint64_t> held;
    EvictionRule::bring_back(
        due,
        [&](const ms::DueIn& d) {
          if (d.handle == stop) return ms::Arrival::stop;
          if (d.handle == skip) return ms::Arrival::skipped;
          if (d.handle == no_room_at) return ms::Arrival::no_room;
          back.push_back(d.handle);
          return ms::Arrival::back;
        },
        [&](const ms::DueIn& d) { held.push_back(d.handle); });
    return std::make_pair(back, held);
  };
  // Next uses 4, 2, 7, 2 (ties by the caller's tie), 9.
  const std::vector<ms::DueIn> due = {{4, 1, 1}, {2, 5, 2}, {7, 3, 3}, {2, 4, 4}, {9, 0, 5}};
  using V = std::vector<std::uint64_t>;
  CHECK(run(due, 0, 0, 0) == std::make_pair(V{4, 2, 1, 3, 5}, V{}));
  CHECK(run(due, 1, 0, 0) == std::make_pair(V{4, 2}, V{1, 3, 5}));  // 1 finds no room: 3 and 5 wait too
  CHECK(run(due, 0, 2, 0) == std::make_pair(V{4, 1, 3, 5}, V{}));   // 2 cannot move now: the rest still come
  CHECK(run(due, 0, 0, 1) == std::make_pair(V{4, 2}, V{}));         // stopped: nothing held
}

TEST_CASE("the rule leaves early only without a schedule", "[swapper][rule]") {
  CHECK(EvictionRule::leave_early_horizon(false, 16) == 16);
  CHECK(EvictionRule::leave_early_horizon(true, 16) == 0);
  CHECK(EvictionRule::leave_early_horizon(false, 0) == 0);
}

TEST_CASE("eviction rule: a late swap-in's lead doubles up to the limit", "[swapper][eviction_rule]") {
  CHECK(ms::EvictionRule::grown_lead(16) == 32);
  CHECK(ms::EvictionRule::grown_lead(0) == 1);
  CHECK(ms::EvictionRule::grown_lead(ms::EvictionRule::kMaxLead / 2 + 1) == ms::EvictionRule::kMaxLead);
  CHECK(ms::EvictionRule::grown_lead(ms::EvictionRule::kMaxLead) == ms::EvictionRule::kMaxLead);
  // 16, 32, ..., 1024: six doublings, and the iteration that runs with them.
  CHECK(ms::EvictionRule::lead_learning_iterations(16) == 7);
  CHECK(ms::EvictionRule::lead_learning_iterations(ms::EvictionRule::kMaxLead) == 1);
}

TEST_CASE("copies out no one waits for start only if the next step reaching every buffer is farther than they take",
          "[swapper][rule]") {
  CHECK(EvictionRule::leaves_unwaited(kUnknownUse, 16));  // none known: as ever
  CHECK(EvictionRule::leaves_unwaited(17, 16));
  CHECK_FALSE(EvictionRule::leaves_unwaited(16, 16));  // it would be issued before they end
  CHECK_FALSE(EvictionRule::leaves_unwaited(1, 16));
  CHECK(EvictionRule::leaves_unwaited(1, 0));  // no lookahead: nothing is sent out ahead anyway
}
