// The online period finder: a token history ring, a k-gram table proposing candidate periods
// from the distance to a k-gram's previous occurrence, and a few candidates verified token by
// token with a per-period mismatch budget. The reporting rule (see the header) picks the
// candidate that explains the longest recent stretch, so internal repetition and noise do not
// displace the iteration period.
#include "memtool/trace/iteration_detector.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <vector>

namespace memtool::trace {
namespace {

constexpr std::uint64_t kGram = 8;      // tokens per k-gram
constexpr std::size_t kCandidates = 8;  // periods verified in parallel
constexpr std::uint64_t kInitialSize = 1024;
constexpr std::uint64_t kBase = 0x100000001b3ULL * 2 + 1;  // odd multiplier of the rolling hash

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser: spreads token bits for the hash
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t pow_base(std::uint64_t exponent) {
  std::uint64_t result = 1;
  for (std::uint64_t i = 0; i < exponent; ++i) result *= kBase;
  return result;
}

// Positions of recent mismatches of one candidate, oldest first (a ring with fixed capacity
// budget + 1, so a candidate never allocates per token).
class MissWindow {
 public:
  void reset(std::size_t capacity) {
    positions_.assign(std::max<std::size_t>(capacity, 1), 0);
    head_ = 0;
    count_ = 0;
  }
  void clear() {
    head_ = 0;
    count_ = 0;
  }
  void expire_up_to(std::uint64_t position) {  // drops mismatches at or before `position`
    while (count_ > 0 && positions_[head_] <= position) {
      head_ = (head_ + 1) % positions_.size();
      --count_;
    }
  }
  void push(std::uint64_t position) {
    positions_[(head_ + count_) % positions_.size()] = position;
    ++count_;
  }
  [[nodiscard]] std::size_t count() const { return count_; }

 private:
  std::vector<std::uint64_t> positions_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

struct Candidate {
  std::uint64_t period = 0;  // 0: free slot
  std::uint64_t run_start = 0;
  std::uint64_t budget = 0;  // mismatches tolerated within one period
  bool confirmed = false;
  MissWindow misses;
};

struct GramSlot {
  std::uint32_t tag = 0;       // high half of the k-gram hash
  std::uint32_t position = 0;  // low 32 bits of (token index + 1); 0: empty
};

}  // namespace

struct IterationDetector::Impl {
  explicit Impl(const IterationDetectorOptions& o) : options(o) {
    options.min_period = std::max<std::uint64_t>(options.min_period, 1);
    options.max_period = std::max(options.max_period, options.min_period);
    options.confirmations = std::max<std::uint32_t>(options.confirmations, 2);
    options.max_noise_fraction = std::clamp(options.max_noise_fraction, 0.0, 0.5);
    history_cap = std::bit_ceil(options.max_period + kGram + 1);
    table_cap = std::bit_ceil(std::max<std::uint64_t>(2 * options.max_period, kInitialSize));
    history.assign(std::min(kInitialSize, history_cap), 0);
    table.assign(std::min(kInitialSize, table_cap), GramSlot{});
    base_pow_gram = pow_base(kGram);
  }

  IterationDetectorOptions options;
  std::uint64_t seen = 0;

  std::vector<std::uint64_t> history;  // ring: token i at i & (size - 1)
  std::uint64_t history_cap = 0;
  std::vector<GramSlot> table;
  std::uint64_t table_cap = 0;
  std::uint64_t gram_hash = 0;
  std::uint64_t base_pow_gram = 0;

  std::array<Candidate, kCandidates> candidates{};
  std::optional<DetectedPeriod> reported;
  std::uint64_t broken_run = 0;  // see remember_break()
  std::uint64_t broken_at = 0;
  // Longest stretch the reported period has explained, and the longest any period we had to
  // abandon explained: a newcomer must beat the latter, so sub-periods inside an iteration
  // (layers, timesteps), once abandoned, are not reported again each iteration.
  std::uint64_t reported_best_run = 0;
  std::uint64_t replaced_record = 0;

  // Marks.
  bool marks_seen = false;
  std::uint64_t last_mark = 0;
  bool have_last_mark = false;
  std::uint64_t mark_length = 0;
  std::uint64_t mark_run_start = 0;
  std::uint32_t mark_equal = 0;

  // Oldest token index still in the ring, counting the slot the current token may already
  // have overwritten (push() writes before it increments `seen`).
  [[nodiscard]] std::uint64_t oldest_available() const {
    return seen + 1 > history.size() ? seen + 1 - history.size() : 0;
  }
  [[nodiscard]] std::uint64_t token(std::uint64_t index) const { return history[index & (history.size() - 1)]; }
  [[nodiscard]] std::uint64_t need(std::uint64_t period) const { return (options.confirmations - 1) * period; }
  [[nodiscard]] std::uint64_t run_of(const Candidate& c, std::uint64_t next) const {
    return next > c.run_start ? next - c.run_start : 0;
  }

  void grow_history() {
    // Called when seen == history.size(): nothing has wrapped yet, indices stay valid.
    history.resize(std::min<std::uint64_t>(history.size() * 2, history_cap), 0);
  }

  void grow_table() {
    table.assign(std::min<std::uint64_t>(table.size() * 2, table_cap), GramSlot{});
    // Re-insert the k-grams still in the history so no recent occurrence is lost.
    const std::uint64_t first = std::max<std::uint64_t>(oldest_available(), 0);
    std::uint64_t hash = 0;
    for (std::uint64_t i = first; i < seen; ++i) {
      hash = hash * kBase + mix(token(i));
      if (i >= first + kGram) hash -= mix(token(i - kGram)) * base_pow_gram;
      if (i + 1 >= first + kGram) store_gram(hash, i);
    }
  }

  [[nodiscard]] GramSlot& slot_for(std::uint64_t hash) { return table[hash & (table.size() - 1)]; }
  void store_gram(std::uint64_t hash, std::uint64_t index) {
    GramSlot& slot = slot_for(hash);
    slot.tag = static_cast<std::uint32_t>(hash >> 32);
    slot.position = static_cast<std::uint32_t>(index + 1);
  }

  void update_candidates(std::uint64_t i, std::uint64_t t) {
    for (Candidate& c : candidates) {
      if (c.period == 0) continue;
      if (token(i - c.period) != t) {
        c.misses.expire_up_to(i - c.period);
        if (c.misses.count() >= c.budget) {  // one more than tolerated: the run breaks here
          if (reported && !reported->from_marks && c.period == reported->period) {
            remember_break(run_of(c, i), i);
          }
          c.run_start = i + 1;
          c.misses.clear();
          c.confirmed = false;
        } else {
          c.misses.push(i);
        }
      }
      if (!c.confirmed && run_of(c, i + 1) >= need(c.period)) confirm(c);
    }
  }

  // The reported period's run before its latest break, kept for a grace of `confirmations`
  // periods: noise breaks a run for about one period, and meanwhile a shifted copy (p +- 1) or
  // a multiple must not look better than the period that explained everything before.
  void remember_break(std::uint64_t run, std::uint64_t at) {
    // Grace counts from the first break of a chain, so a period that keeps breaking (the
    // program moved on to another loop) loses its old run after the grace.
    if (broken_run > 0 && at - broken_at <= options.confirmations * reported->period) {
      broken_run = std::max(broken_run, run);
    } else {
      broken_run = run;
      broken_at = at;
    }
  }

  void confirm(Candidate& c) {
    c.confirmed = true;
    // Extend the run backwards over exact matches so first_boundary is where periodicity began.
    std::uint64_t j = c.run_start;
    const std::uint64_t floor = oldest_available() + c.period;
    while (j > floor && token(j - 1) == token(j - 1 - c.period)) --j;
    c.run_start = j;
  }

  void propose(std::uint64_t i, std::uint64_t distance) {
    if (distance < options.min_period) {
      distance *= (options.min_period + distance - 1) / distance;
    }
    if (distance > options.max_period || distance > i) return;
    for (const Candidate& c : candidates) {
      if (c.period == distance) return;
    }
    // Verify the k-gram really matches at this distance (a hash collision must not seed a run).
    const std::uint64_t first = i + 1 - kGram;
    if (first < distance || first - distance < oldest_available()) return;
    for (std::uint64_t j = first; j <= i; ++j) {
      if (token(j) != token(j - distance)) return;
    }
    Candidate* victim = nullptr;
    for (Candidate& c : candidates) {
      if (c.period == 0) {
        victim = &c;
        break;
      }
      if (reported && c.period == reported->period) continue;  // never evict the reported one
      if (victim == nullptr || run_of(c, i + 1) < run_of(*victim, i + 1)) victim = &c;
    }
    if (victim == nullptr) return;
    victim->period = distance;
    victim->run_start = first;
    victim->budget = static_cast<std::uint64_t>(std::floor(options.max_noise_fraction * static_cast<double>(distance)));
    victim->confirmed = false;
    victim->misses.reset(victim->budget + 1);
    if (run_of(*victim, i + 1) >= need(distance)) confirm(*victim);
  }

  bool choose_reported() {
    const std::uint64_t next = seen;
    std::uint64_t current_run = 0;
    if (reported) {
      for (const Candidate& c : candidates) {
        if (c.period == reported->period) current_run = run_of(c, next);
      }
    }
    if (reported && next - broken_at <= options.confirmations * reported->period) {
      current_run = std::max(current_run, broken_run);
    }
    reported_best_run = std::max(reported_best_run, current_run);
    const std::uint64_t floor = reported ? need(reported->period) : 0;
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates) {
      if (c.period == 0 || !c.confirmed) continue;
      if (reported && c.period == reported->period) continue;
      const std::uint64_t run = run_of(c, next);
      if (run <= current_run || run < floor || run <= replaced_record) continue;
      if (best == nullptr || run > run_of(*best, next) || (run == run_of(*best, next) && c.period < best->period)) {
        best = &c;
      }
    }
    if (best == nullptr) return false;
    replaced_record = std::max(replaced_record, reported_best_run);
    reported_best_run = run_of(*best, next);
    reported = DetectedPeriod{best->period, best->run_start - best->period, next, false};
    broken_run = 0;
    broken_at = 0;
    return true;
  }

  bool push(std::uint64_t t) {
    const std::uint64_t i = seen;
    if (marks_seen) {  // marks are authoritative; tokens only advance the clock
      ++seen;
      return false;
    }
    if (i == history.size() && history.size() < history_cap) grow_history();
    if (i == table.size() && table.size() < table_cap) grow_table();
    history[i & (history.size() - 1)] = t;

    update_candidates(i, t);

    gram_hash = gram_hash * kBase + mix(t);
    if (i >= kGram) gram_hash -= mix(token(i - kGram)) * base_pow_gram;
    ++seen;
    if (i + 1 >= kGram) {
      GramSlot& slot = slot_for(gram_hash);
      if (slot.position != 0 && slot.tag == static_cast<std::uint32_t>(gram_hash >> 32)) {
        const auto distance = static_cast<std::uint32_t>(static_cast<std::uint32_t>(i + 1) - slot.position);
        if (distance > 0) propose(i, distance);
      }
      slot.tag = static_cast<std::uint32_t>(gram_hash >> 32);
      slot.position = static_cast<std::uint32_t>(i + 1);
    }
    return choose_reported();
  }

  bool mark() {
    const bool first_mark = !marks_seen;
    marks_seen = true;
    if (first_mark) reported.reset();  // marks replace whatever the tokens suggested
    bool changed = false;
    if (have_last_mark && seen > last_mark) {
      const std::uint64_t length = seen - last_mark;
      if (length == mark_length) {
        ++mark_equal;
      } else {
        mark_length = length;
        mark_run_start = last_mark;
        mark_equal = 1;
      }
      if (mark_equal >= options.confirmations &&
          (!reported || reported->period != mark_length || reported->first_boundary != mark_run_start)) {
        changed = !reported || reported->period != mark_length;
        reported = DetectedPeriod{mark_length, mark_run_start, seen, true};
      }
    }
    if (!have_last_mark || seen > last_mark) last_mark = seen;
    have_last_mark = true;
    return changed;
  }
};

IterationDetector::IterationDetector(const IterationDetectorOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
IterationDetector::~IterationDetector() = default;
IterationDetector::IterationDetector(IterationDetector&&) noexcept = default;
IterationDetector& IterationDetector::operator=(IterationDetector&&) noexcept = default;

bool IterationDetector::push(std::uint64_t token) { return impl_->push(token); }
bool IterationDetector::mark() { return impl_->mark(); }
void IterationDetector::reset() { impl_ = std::make_unique<Impl>(impl_->options); }
std::optional<DetectedPeriod> IterationDetector::period() const {
  std::optional<DetectedPeriod> result = impl_->reported;
  if (!result) return result;
  if (result->from_marks) {
    result->explained = impl_->mark_equal * result->period;
    return result;
  }
  for (const Candidate& c : impl_->candidates) {
    if (c.period != result->period) continue;
    const std::uint64_t run = impl_->run_of(c, impl_->seen);
    result->explained = run > 0 ? run + c.period : 0;
  }
  return result;
}
std::uint64_t IterationDetector::tokens_seen() const { return impl_->seen; }
const IterationDetectorOptions& IterationDetector::options() const { return impl_->options; }

}  // namespace memtool::trace
