// Iteration detection throughput: our online detector (goal >= 10 M tokens/s) next to the
// paper's brute-force detector on the same streams, plus the TraceModel build rate.
//
// Streams are synthetic signature tokens: a warm-up, then a fixed random iteration repeated;
// variants with internal repetition (LSTM-like: 35 identical timesteps) and with noise. For the
// paper's detector the stream sizes stay where O(n^2) per checkpoint still finishes.
#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <vector>

#include "memtool/trace/iteration_detector.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/paper_detector.hpp"

namespace {

using memtool::trace::IterationDetector;
using memtool::trace::PaperIterationDetector;
using Tokens = std::vector<std::uint64_t>;

Tokens random_tokens(std::mt19937_64& rng, std::size_t count, std::uint64_t alphabet) {
  Tokens t(count);
  for (auto& x : t) x = rng() % alphabet;
  return t;
}

// `total` tokens: 1000 warm-up tokens, then one random iteration of `period` tokens repeated.
Tokens periodic_stream(std::size_t period, std::size_t total, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tokens s = random_tokens(rng, std::min<std::size_t>(1000, total / 8), 4096);
  const Tokens iteration = random_tokens(rng, period, 4096);
  while (s.size() < total) {
    const std::size_t take = std::min(period, total - s.size());
    s.insert(s.end(), iteration.begin(), iteration.begin() + static_cast<std::ptrdiff_t>(take));
  }
  return s;
}

Tokens lstm_like_stream(std::size_t total, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Tokens head = random_tokens(rng, 40, 300);
  const Tokens forward = random_tokens(rng, 48, 300);
  const Tokens backward = random_tokens(rng, 61, 300);
  const Tokens step = random_tokens(rng, 90, 300);
  Tokens iteration = head;
  for (int i = 0; i < 35; ++i) iteration.insert(iteration.end(), forward.begin(), forward.end());
  for (int i = 0; i < 35; ++i) iteration.insert(iteration.end(), backward.begin(), backward.end());
  iteration.insert(iteration.end(), step.begin(), step.end());
  Tokens s = random_tokens(rng, 500, 300);
  while (s.size() < total) s.insert(s.end(), iteration.begin(), iteration.end());
  s.resize(total);
  return s;
}

Tokens noisy_stream(std::size_t period, std::size_t total, std::uint64_t seed) {
  Tokens s = periodic_stream(period, total, seed);
  std::mt19937_64 rng(seed + 1);
  // About one substitution per iteration and one insertion every ten iterations.
  for (std::size_t i = period; i < s.size(); i += period) {
    s[i + rng() % period / 2] = rng();
  }
  for (std::size_t i = 10 * period; i + 1 < s.size(); i += 10 * period) {
    s.insert(s.begin() + static_cast<std::ptrdiff_t>(i), rng());
  }
  return s;
}

void run_online(benchmark::State& state, const Tokens& tokens) {
  std::uint64_t period = 0;
  for (auto _ : state) {
    IterationDetector d;
    for (const auto t : tokens) d.push(t);
    period = d.period() ? d.period()->period : 0;
    benchmark::DoNotOptimize(period);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * tokens.size()));
  state.counters["period"] = static_cast<double>(period);
}

void run_paper(benchmark::State& state, const Tokens& tokens) {
  std::uint64_t period = 0;
  for (auto _ : state) {
    PaperIterationDetector d;
    for (const auto t : tokens) d.push(t);
    period = d.period() ? d.period()->period : 0;
    benchmark::DoNotOptimize(period);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * tokens.size()));
  state.counters["period"] = static_cast<double>(period);
}

// Online detector: 4 M tokens, periods from 100 to 100k.
void BM_OnlinePeriodic(benchmark::State& state) {
  const auto period = static_cast<std::size_t>(state.range(0));
  static std::map<std::size_t, Tokens> cache;
  auto& tokens = cache[period];
  if (tokens.empty()) tokens = periodic_stream(period, std::size_t{4} << 20, period);
  run_online(state, tokens);
}
BENCHMARK(BM_OnlinePeriodic)->Arg(100)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_OnlineLstmLike(benchmark::State& state) {
  static const Tokens tokens = lstm_like_stream(std::size_t{4} << 20, 1);
  run_online(state, tokens);
}
BENCHMARK(BM_OnlineLstmLike)->Unit(benchmark::kMillisecond);

void BM_OnlineNoisy(benchmark::State& state) {
  static const Tokens tokens = noisy_stream(2000, std::size_t{4} << 20, 2);
  run_online(state, tokens);
}
BENCHMARK(BM_OnlineNoisy)->Unit(benchmark::kMillisecond);

void BM_OnlineRandom(benchmark::State& state) {  // no period: every token is a new k-gram
  static const Tokens tokens = [] {
    std::mt19937_64 rng(3);
    return random_tokens(rng, std::size_t{4} << 20, ~std::uint64_t{0});
  }();
  run_online(state, tokens);
}
BENCHMARK(BM_OnlineRandom)->Unit(benchmark::kMillisecond);

// Side by side on the same small streams: n tokens, period n / 5, so that the paper's
// doubling checkpoints still see two whole periods before the stream ends.
void BM_SideBySideOnline(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Tokens tokens = periodic_stream(n / 5, n, n);
  run_online(state, tokens);
}
void BM_SideBySidePaper(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Tokens tokens = periodic_stream(n / 5, n, n);
  run_paper(state, tokens);
}
BENCHMARK(BM_SideBySideOnline)->RangeMultiplier(4)->Range(1 << 10, 1 << 16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SideBySidePaper)->RangeMultiplier(4)->Range(1 << 10, 1 << 16)->Unit(benchmark::kMillisecond);

// No period at all: the paper's detector pays its full O(n^2) search at every checkpoint.
void BM_SideBySideOnlineAperiodic(benchmark::State& state) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(state.range(0)));
  const Tokens tokens = random_tokens(rng, static_cast<std::size_t>(state.range(0)), 4096);
  run_online(state, tokens);
}
void BM_SideBySidePaperAperiodic(benchmark::State& state) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(state.range(0)));
  const Tokens tokens = random_tokens(rng, static_cast<std::size_t>(state.range(0)), 4096);
  run_paper(state, tokens);
}
BENCHMARK(BM_SideBySideOnlineAperiodic)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SideBySidePaperAperiodic)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);

// The paper's detector on an iteration with internal repetition (it cuts to the layers).
void BM_SideBySidePaperLstmLike(benchmark::State& state) {
  static const Tokens tokens = lstm_like_stream(16384, 4);
  run_paper(state, tokens);
}
void BM_SideBySideOnlineLstmLike(benchmark::State& state) {
  static const Tokens tokens = lstm_like_stream(16384, 4);
  run_online(state, tokens);
}
BENCHMARK(BM_SideBySidePaperLstmLike)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SideBySideOnlineLstmLike)->Unit(benchmark::kMillisecond);

// TraceModel: events normalised per second (alloc, launch touching it, free; 1 M events).
void BM_TraceModelBuild(benchmark::State& state) {
  using namespace memtool::trace;
  constexpr std::size_t kRounds = 1 << 18;
  for (auto _ : state) {
    TraceModel m;
    m.reserve(4 * kRounds, kRounds);
    for (std::size_t i = 0; i < kRounds; ++i) {
      AllocEvent a;
      a.address = 0x100000 + (i % 64) * 0x10000;
      a.size = 0x8000;
      m.on_alloc(a);
      const std::uint64_t touched[2] = {a.address + 16, 0x100000};
      LaunchEvent k;
      k.kernel = StringId{static_cast<std::uint32_t>(i % 7)};
      k.touched = touched;
      m.on_launch(k);
      m.on_launch(k);
      FreeEvent f;
      f.address = a.address;
      m.on_free(f);
    }
    benchmark::DoNotOptimize(m.event_count());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 4 * kRounds));
}
BENCHMARK(BM_TraceModelBuild)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
