// A large, transformer-shaped swap problem, made up deterministically from a seed: the scale
// tests and bench/bench_swap_scale.cpp plan it at the sizes of a large model's step.
//
// One step of `layers` layers. Per layer, kForwardOps forward ops, twice as many backward ops in
// reverse layer order, then kOptimizerOps optimizer ops after the whole backward pass. Buffers per
// layer: two weights and their Adam moments (persistent: the weights read forward and backward,
// everything updated by the optimizer), two gradients (made in the layer's backward, freed after
// its optimizer op), four saved activations (made in the forward pass, read by the next few
// forward ops and again by the layer's backward) and one workspace (a few forward ops). Sizes
// vary around a hidden size of 4096 (fp16 activations and weights, fp32 moments); op times are
// log-uniform between 10 us and 1 ms. About 125 ops and 13 buffers per layer: a 100,000-op step
// has 10,400 buffers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "memtool/swapper/iteration.hpp"

namespace memtool::test {

struct TransformerShape {
  static constexpr std::uint32_t kForwardOps = 40;
  static constexpr std::uint32_t kBackwardOps = 2 * kForwardOps;
  static constexpr std::uint32_t kOptimizerOps = 5;
  static constexpr std::uint32_t kOpsPerLayer = kForwardOps + kBackwardOps + kOptimizerOps;
  static constexpr std::uint32_t kSaved = 4;         // activations per layer kept for the backward pass
  static constexpr std::uint32_t kReadsAhead = 3;    // forward ops after its producer that read an activation
  static constexpr std::uint32_t kWorkspaceOps = 4;  // forward ops a workspace lives
  static constexpr double kMinOpNs = 10'000;
  static constexpr double kMaxOpNs = 1'000'000;
  static constexpr std::uint64_t kActivationBytes = std::uint64_t{16} << 20;  // 2048 x 4096 fp16
  static constexpr std::uint64_t kWeightBytes = std::uint64_t{32} << 20;      // 4096 x 4096 fp16
};

// splitmix64: the same numbers on every platform (std's distributions are not).
class SplitMix {
 public:
  explicit SplitMix(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // `base` times a factor in [1/2, 2), rounded to 256 bytes.
  std::uint64_t around(std::uint64_t base) {
    const double bytes = static_cast<double>(base) * std::exp2(2.0 * unit() - 1.0);
    return std::max<std::uint64_t>(256, static_cast<std::uint64_t>(bytes) / 256 * 256);
  }

 private:
  std::uint64_t state_;
};

// The smallest whole number of layers whose step has at least `ops` ops.
inline swapper::Iteration transformer_iteration(std::uint32_t ops, std::uint64_t seed = 1) {
  using S = TransformerShape;
  const std::uint32_t layers = std::max<std::uint32_t>(1, (ops + S::kOpsPerLayer - 1) / S::kOpsPerLayer);
  SplitMix random(seed);
  swapper::Iteration it;
  const std::uint32_t forward_end = layers * S::kForwardOps;
  const std::uint32_t backward_end = forward_end + layers * S::kBackwardOps;
  const std::uint32_t n = backward_end + layers * S::kOptimizerOps;
  it.ops.resize(n);
  for (swapper::Op& op : it.ops) {
    const double log_ns = std::log(S::kMinOpNs) + random.unit() * (std::log(S::kMaxOpNs) - std::log(S::kMinOpNs));
    op.duration_ns = static_cast<std::uint64_t>(std::exp(log_ns));
  }
  std::vector<std::vector<swapper::Access>> per_buffer;
  const auto add = [&](std::uint64_t size, bool persistent, std::uint32_t alloc, std::uint32_t free) {
    swapper::Buffer b;
    b.id = it.buffers.size();
    b.size = size;
    b.persistent = persistent;
    b.alloc_before_op = persistent ? 0 : alloc;
    b.free_after_op = persistent ? 0 : free;
    it.buffers.push_back(b);
    return static_cast<std::uint32_t>(it.buffers.size() - 1);
  };
  const auto access = [&](std::uint32_t b, std::uint32_t op, swapper::AccessMode mode) {
    std::vector<swapper::Access>& list = it.buffers[b].accesses;
    if (!list.empty() && list.back().op == op) return;
    list.push_back({op, mode});
  };
  for (std::uint32_t l = 0; l < layers; ++l) {
    const std::uint32_t f0 = l * S::kForwardOps;
    const std::uint32_t b0 = forward_end + (layers - 1 - l) * S::kBackwardOps;  // backward runs in reverse
    const std::uint32_t o0 = backward_end + l * S::kOptimizerOps;
    // Weights and their moments; gradients made in the backward pass, freed after the optimizer.
    for (std::uint32_t w = 0; w < 2; ++w) {
      const std::uint64_t size = random.around(S::kWeightBytes);
      const std::uint32_t weight = add(size, true, 0, 0);
      const std::uint32_t m = add(2 * size, true, 0, 0);
      const std::uint32_t v = add(2 * size, true, 0, 0);
      const std::uint32_t grad_op = b0 + S::kBackwardOps / 2 + w * (S::kBackwardOps / 4);
      const std::uint32_t grad = add(size, false, grad_op, o0 + 2 * w + 1);
      const std::uint32_t use_f = f0 + 1 + w * (S::kForwardOps / 2);
      access(weight, use_f, swapper::AccessMode::read);
      access(weight, b0 + 1 + w * (S::kBackwardOps / 2), swapper::AccessMode::read);
      access(grad, grad_op, swapper::AccessMode::write);
      for (const std::uint32_t b : {grad, m, v, weight}) access(b, o0 + 2 * w + 1, swapper::AccessMode::read_write);
      // Access lists must be sorted by op.
      for (const std::uint32_t b : {weight, m, v, grad}) {
        std::vector<swapper::Access>& list = it.buffers[b].accesses;
        std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.op < y.op; });
      }
    }
    // Saved activations: made forward, read ahead, read again in the mirror backward op.
    for (std::uint32_t a = 0; a < S::kSaved; ++a) {
      const std::uint32_t made = f0 + 2 + a * (S::kForwardOps / S::kSaved);
      const std::uint32_t back = b0 + S::kBackwardOps - 2 - a * (S::kBackwardOps / S::kSaved);
      const std::uint32_t act = add(random.around(S::kActivationBytes), false, made, back);
      access(act, made, swapper::AccessMode::write);
      for (std::uint32_t k = 1; k <= S::kReadsAhead; ++k) access(act, made + k, swapper::AccessMode::read);
      access(act, back, swapper::AccessMode::read);
    }
    const std::uint32_t ws_op = f0 + S::kForwardOps / 2 + 3;
    const std::uint32_t ws = add(random.around(S::kActivationBytes * 4), false, ws_op, ws_op + S::kWorkspaceOps - 1);
    for (std::uint32_t k = 0; k < S::kWorkspaceOps; ++k) access(ws, ws_op + k, swapper::AccessMode::read_write);
  }
  return it;
}

}  // namespace memtool::test
