// find_iterations: iteration boundaries from marks, or from the online detector's period plus
// an offline steady-start scan and a phase chosen to minimise bytes crossing the boundary.
#include "memtool/trace/iterations.hpp"

#include <algorithm>
#include <map>
#include <cmath>
#include <deque>

namespace memtool::trace {
namespace {

std::uint64_t noise_budget(const IterationDetectorOptions& o, std::uint64_t period) {
  const double fraction = std::clamp(o.max_noise_fraction, 0.0, 0.5);
  return static_cast<std::uint64_t>(std::floor(fraction * static_cast<double>(period)));
}

std::uint64_t count_allocs(const TraceModel& model, const IterationSpan& span) {
  std::uint64_t allocs = 0;
  for (std::uint64_t e = span.first_event; e < span.end_event; ++e) {
    if (model.event(e).kind == EventKind::alloc) ++allocs;
  }
  return allocs;
}

// Token index range [first, last) of the events [first_event, end_event).
std::pair<std::uint64_t, std::uint64_t> token_range(std::span<const std::uint64_t> token_events,
                                                    const IterationSpan& span) {
  const auto lo = std::lower_bound(token_events.begin(), token_events.end(), span.first_event);
  const auto hi = std::lower_bound(lo, token_events.end(), span.end_event);
  return {static_cast<std::uint64_t>(lo - token_events.begin()), static_cast<std::uint64_t>(hi - token_events.begin())};
}

Iterations from_marks(const TraceModel& model, const IterationOptions& options, std::span<const std::uint64_t> tokens,
                      std::span<const std::uint64_t> token_events) {
  Iterations result;
  result.source = IterationSource::marks;
  const auto marks = model.marks();
  const std::uint64_t n = model.event_count();
  result.prologue_end = marks.front();
  for (std::size_t k = 0; k < marks.size(); ++k) {
    IterationSpan span;
    span.first_event = marks[k];
    span.end_event = k + 1 < marks.size() ? marks[k + 1] : n;
    result.spans.push_back(span);
  }
  // The last iteration may have been cut short: complete only if as long as the one before.
  if (result.spans.size() >= 2) {
    const auto& before = result.spans[result.spans.size() - 2];
    result.spans.back().complete = result.spans.back().length() == before.length();
  }
  std::size_t reference = result.spans.size() - 1;
  if (!result.spans.back().complete) --reference;
  const auto [ref_first, ref_last] = token_range(token_events, result.spans[reference]);
  const std::uint64_t ref_tokens = ref_last - ref_first;
  const std::uint64_t budget = noise_budget(options.detector, ref_tokens);
  std::size_t steady = reference;
  while (steady > 0) {
    const auto [first, last] = token_range(token_events, result.spans[steady - 1]);
    if (last - first != ref_tokens) break;
    std::uint64_t mismatches = 0;
    for (std::uint64_t i = 0; i < ref_tokens && mismatches <= budget; ++i) {
      if (tokens[first + i] != tokens[ref_first + i]) ++mismatches;
    }
    if (mismatches > budget) break;
    --steady;
  }
  for (std::size_t k = 0; k < steady; ++k) result.spans[k].warm_up = true;
  for (auto& span : result.spans) {
    const auto [first, last] = token_range(token_events, span);
    span.regular = last - first == ref_tokens && span.complete;
  }
  const IterationSpan& first_steady = result.spans[steady];
  result.steady_start = first_steady.first_event;
  result.period_events = result.spans[reference].length();
  result.period_tokens = ref_tokens;
  result.period_allocs = count_allocs(model, result.spans[reference]);
  return result;
}

// Token ranges [begin, end) over which tokens[i] == tokens[i - period] holds within the
// noise budget (at most `budget` mismatches in any window of one period), each at least
// `min_periods` periods long. A stretch ends at the first mismatch of the window that overflowed;
// the next one starts once the stream matches again, i.e. after the echo of an inserted or
// dropped token one period later.
std::vector<std::pair<std::uint64_t, std::uint64_t>> periodic_stretches(std::span<const std::uint64_t> tokens,
                                                                        std::uint64_t period, std::uint64_t budget,
                                                                        std::uint64_t min_periods) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> stretches;
  const std::uint64_t count = tokens.size();
  const auto record = [&](std::uint64_t start, std::uint64_t stop) {
    if (stop > start && stop - start + period >= min_periods * period) {
      stretches.emplace_back(start - period, stop);
    }
  };
  std::deque<std::uint64_t> misses;  // mismatch positions in the last period, oldest first
  std::uint64_t start = period;      // first comparison of the current stretch
  for (std::uint64_t i = period; i < count; ++i) {
    if (tokens[i] == tokens[i - period]) continue;
    while (!misses.empty() && misses.front() + period <= i) misses.pop_front();
    misses.push_back(i);
    if (misses.size() > budget) {
      record(start, misses.front());
      start = i + 1;
      misses.clear();
    }
  }
  if (start < count) record(start, count);
  return stretches;
}

// Bytes of buffers crossing a boundary placed just before event e (allocated before e and
// freed at or after e), for every e in [0, n]. Never-freed buffers are left out: they cross
// every boundary alike.
std::vector<std::uint64_t> crossing_bytes(const TraceModel& model) {
  const std::uint64_t n = model.event_count();
  std::vector<std::uint64_t> diff(n + 2, 0);
  for (const BufferRecord& b : model.buffers()) {
    if (!b.freed()) continue;
    diff[b.alloc_event + 1] += b.size;  // unsigned wrap-around cancels out in the prefix sum
    diff[b.free_event + 1] -= b.size;
  }
  std::uint64_t running = 0;
  for (std::uint64_t e = 0; e <= n; ++e) {
    running += diff[e];
    diff[e] = running;
  }
  diff.pop_back();
  return diff;
}

std::uint64_t choose_phase(std::span<const std::uint64_t> crossing, std::span<const std::uint64_t> token_events,
                           std::uint64_t steady_first, std::uint64_t count, std::uint64_t period) {
  const std::uint64_t cycles = std::max<std::uint64_t>((count - steady_first) / period, 1);
  std::vector<std::uint64_t> cost(period, 0);
  for (std::uint64_t phase = 0; phase < period; ++phase) {
    for (std::uint64_t k = 0; k < cycles; ++k) {
      const std::uint64_t t = steady_first + phase + k * period;
      if (t < count) cost[phase] += crossing[token_events[t]];
    }
  }
  std::uint64_t best = ~std::uint64_t{0};
  for (const std::uint64_t c : cost) best = std::min(best, c);
  // Among the tied phases take the end of the longest run of ties (cyclically); a run's end
  // is the last moment before the cost rises, i.e. just before the next allocation.
  std::uint64_t chosen = 0;
  std::uint64_t chosen_run = 0;
  for (std::uint64_t phase = 0; phase < period; ++phase) {
    if (cost[phase] != best || cost[(phase + 1) % period] == best) continue;
    std::uint64_t run = 1;
    while (run < period && cost[(phase + period - run) % period] == best) ++run;
    if (run > chosen_run) {
      chosen = phase;
      chosen_run = run;
    }
  }
  return chosen;  // all tied (flat cost): phase 0
}

Iterations from_detector(const TraceModel& model, const IterationOptions& options,
                         std::span<const std::uint64_t> tokens, std::span<const std::uint64_t> token_events) {
  Iterations result;
  IterationDetector detector(options.detector);
  for (const std::uint64_t t : tokens) detector.push(t);
  const auto detected = detector.period();
  if (!detected) return result;
  const std::uint64_t period = detected->period;
  const std::uint64_t count = tokens.size();
  auto stretches = periodic_stretches(tokens, period, noise_budget(options.detector, period),
                                      std::max<std::uint32_t>(options.detector.confirmations, 2));
  if (stretches.empty()) {
    if (detected->first_boundary + period > count) return result;
    stretches.emplace_back(detected->first_boundary, count);
  }

  // Boundaries (token indices): within each stretch every period from its best phase.
  const std::vector<std::uint64_t> crossing = crossing_bytes(model);
  std::vector<std::uint64_t> boundaries;
  for (const auto& [begin, end] : stretches) {
    const std::uint64_t phase = choose_phase(crossing, token_events, begin, end, period);
    for (std::uint64_t b = begin + phase; b < end; b += period) {
      if (boundaries.empty() || b > boundaries.back()) boundaries.push_back(b);
    }
  }

  result.source = IterationSource::detector;
  result.period_tokens = period;
  const std::uint64_t n = model.event_count();
  if (token_events[boundaries.front()] > 0) {
    IterationSpan warm_up{0, token_events[boundaries.front()], true, true, false};
    result.spans.push_back(warm_up);
  }
  for (std::size_t k = 0; k < boundaries.size(); ++k) {
    const std::uint64_t b = boundaries[k];
    const bool last = k + 1 == boundaries.size();
    IterationSpan span;
    span.first_event = token_events[b];
    span.end_event = last ? n : token_events[boundaries[k + 1]];
    span.complete = !last || b + period <= count;
    span.regular = last ? b + period == count : boundaries[k + 1] - b == period;
    result.spans.push_back(span);
  }
  // The typical iteration: the most common length among regular steady spans (the first one
  // can hold a few one-off events, e.g. lazily created streams, that carry no token).
  std::size_t steady = result.first_steady();
  std::map<std::uint64_t, std::pair<std::size_t, std::size_t>> lengths;  // length -> (count, span)
  for (std::size_t k = result.first_steady(); k < result.spans.size(); ++k) {
    const auto& span = result.spans[k];
    if (!span.regular || !span.complete) continue;
    auto& [seen, first] = lengths.try_emplace(span.length(), 0, k).first->second;
    ++seen;
  }
  std::size_t best_count = 0;
  for (const auto& [length, entry] : lengths) {
    if (entry.first > best_count) {
      best_count = entry.first;
      steady = entry.second;
    }
  }
  result.steady_start = result.spans[result.first_steady()].first_event;
  result.period_events = result.spans[steady].length();
  result.period_allocs = count_allocs(model, result.spans[steady]);
  return result;
}

}  // namespace

std::size_t Iterations::first_steady() const {
  std::size_t k = 0;
  while (k < spans.size() && spans[k].warm_up) ++k;
  return k;
}

std::optional<std::size_t> Iterations::iteration_of(std::uint64_t event_index) const {
  const auto it = std::upper_bound(spans.begin(), spans.end(), event_index,
                                   [](std::uint64_t e, const IterationSpan& s) { return e < s.first_event; });
  if (it == spans.begin()) return std::nullopt;
  const auto& span = *(it - 1);
  if (event_index >= span.end_event) return std::nullopt;
  return static_cast<std::size_t>(it - 1 - spans.begin());
}

std::vector<std::uint64_t> signature_tokens(const TraceModel& model, const SignatureOptions& options,
                                            std::vector<std::uint64_t>* token_events) {
  std::vector<std::uint64_t> tokens;
  tokens.reserve(model.event_count());
  if (token_events != nullptr) {
    token_events->clear();
    token_events->reserve(model.event_count());
  }
  const auto events = model.events();
  for (std::uint64_t i = 0; i < events.size(); ++i) {
    const ModelEvent& e = events[i];
    std::optional<std::uint64_t> token;
    switch (e.kind) {
      case EventKind::alloc:
        token = SignatureBuilder::alloc_token(e.bytes, e.memory);
        break;
      case EventKind::free:
        token = e.buffer.valid() ? SignatureBuilder::free_token(e.bytes) : SignatureBuilder::unknown_free_token();
        break;
      case EventKind::launch:
        token = SignatureBuilder::launch_token(StringId{e.detail});
        break;
      case EventKind::graph_launch:
        token = SignatureBuilder::graph_launch_token(e.bytes);
        break;
      case EventKind::copy:
        if (options.include_copies) {
          token = SignatureBuilder::copy_token(e.bytes, static_cast<CopyKind>(e.detail));
        }
        break;
      case EventKind::memset:
        if (options.include_memsets) token = SignatureBuilder::memset_token(e.bytes);
        break;
      default:
        break;
    }
    if (!token) continue;
    tokens.push_back(*token);
    if (token_events != nullptr) token_events->push_back(i);
  }
  return tokens;
}

Iterations find_iterations(const TraceModel& model, const IterationOptions& options) {
  std::vector<std::uint64_t> token_events;
  const std::vector<std::uint64_t> tokens = signature_tokens(model, options.signature, &token_events);
  if (options.use_marks && !model.marks().empty()) {
    return from_marks(model, options, tokens, token_events);
  }
  return from_detector(model, options, tokens, token_events);
}

}  // namespace memtool::trace
