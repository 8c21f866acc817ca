// Deterministic synthetic data and initial weights, derived from the --seed only.
//
// Labels come from a rule the network can learn (a random linear "teacher" for the MLP, the
// brightest image quadrant for the convolution network), so the loss really falls over iterations.
// A small fixed set of batches is cycled, like epochs over a tiny data set.
#pragma once

#include <cstdint>
#include <vector>

namespace apps {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1), exactly representable (24 random bits).
  float uniform() { return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }

 private:
  std::uint64_t state_;
};

struct Batch {
  std::vector<float> features;  // rows × feature values, row-major
  std::vector<int> labels;      // one class per row
};

// `count` batches of `rows` samples with `features` values each; label = argmax of a fixed
// random linear map to `classes` scores.
std::vector<Batch> make_teacher_batches(std::uint64_t seed, int count, int rows, int features, int classes);

// `count` batches of `rows` images, NHWC height × width × channels; label (0..3) = the quadrant
// with the largest sum of values.
std::vector<Batch> make_quadrant_batches(std::uint64_t seed, int count, int rows, int height, int width, int channels);

// rows × cols weights, uniform in ±1/sqrt(fan_in).
std::vector<float> init_weights(SplitMix64& rng, int rows, int cols, int fan_in);

}  // namespace apps
