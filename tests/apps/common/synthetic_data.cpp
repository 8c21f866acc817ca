// Generation of the apps' synthetic data sets and initial weights (see synthetic_data.hpp).
#include "synthetic_data.hpp"

#include <cmath>
#include <cstddef>

namespace apps {

namespace {

std::size_t index(int a, int b) { return static_cast<std::size_t>(a) * static_cast<std::size_t>(b); }

}  // namespace

std::vector<Batch> make_teacher_batches(std::uint64_t seed, int count, int rows, int features, int classes) {
  SplitMix64 teacher_rng(seed ^ 0x7eac4e2d5a1f0b93ULL);
  std::vector<float> teacher(index(features, classes));
  for (auto& t : teacher) t = teacher_rng.uniform();

  SplitMix64 rng(seed);
  std::vector<Batch> batches(static_cast<std::size_t>(count));
  for (auto& batch : batches) {
    batch.features.resize(index(rows, features));
    batch.labels.resize(static_cast<std::size_t>(rows));
    for (auto& x : batch.features) x = rng.uniform();
    for (int r = 0; r < rows; ++r) {
      int best = 0;
      float best_score = 0;
      for (int c = 0; c < classes; ++c) {
        float score = 0;
        for (int f = 0; f < features; ++f) {
          score += batch.features[index(r, features) + static_cast<std::size_t>(f)] *
                   teacher[index(f, classes) + static_cast<std::size_t>(c)];
        }
        if (c == 0 || score > best_score) {
          best = c;
          best_score = score;
        }
      }
      batch.labels[static_cast<std::size_t>(r)] = best;
    }
  }
  return batches;
}

std::vector<Batch> make_quadrant_batches(std::uint64_t seed, int count, int rows, int height, int width, int channels) {
  SplitMix64 rng(seed ^ 0x51c0c0a7e11aULL);
  const int pixels = height * width * channels;
  std::vector<Batch> batches(static_cast<std::size_t>(count));
  for (auto& batch : batches) {
    batch.features.resize(index(rows, pixels));
    batch.labels.resize(static_cast<std::size_t>(rows));
    for (auto& x : batch.features) x = rng.uniform();
    for (int r = 0; r < rows; ++r) {
      float sums[4] = {0, 0, 0, 0};
      for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
          const int quadrant = (y >= height / 2 ? 2 : 0) + (x >= width / 2 ? 1 : 0);
          for (int c = 0; c < channels; ++c) {
            sums[quadrant] +=
                batch.features[index(r, pixels) + static_cast<std::size_t>((y * width + x) * channels + c)];
          }
        }
      }
      int best = 0;
      for (int q = 1; q < 4; ++q) {
        if (sums[q] > sums[best]) best = q;
      }
      batch.labels[static_cast<std::size_t>(r)] = best;
    }
  }
  return batches;
}

std::vector<float> init_weights(SplitMix64& rng, int rows, int cols, int fan_in) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(fan_in));
  std::vector<float> weights(index(rows, cols));
  for (auto& w : weights) w = rng.uniform() * scale;
  return weights;
}

}  // namespace apps
