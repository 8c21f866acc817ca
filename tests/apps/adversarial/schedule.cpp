// The adversarial schedule (see schedule.hpp): shapes, roles, late frees and seeded extras.
#include "schedule.hpp"

#include "../common/synthetic_data.hpp"

namespace adversarial {

namespace {

constexpr int kEvaluationEvery = 7;  // co-prime with the usual periods: it lands on every phase
constexpr int kExtrasWindow = 4;
constexpr int kExtrasPerWindow = 2;

struct Shape {
  int buffers;
  int base_words;
};
constexpr Shape kTrainingShapes[] = {{12, 1024}, {16, 640}, {8, 4096}};
constexpr Shape kEvaluationShape = {6, 2048};

std::uint64_t mix(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  apps::SplitMix64 rng(seed ^ (a * 0x9e3779b97f4a7c15ULL) ^ (b * 0xc2b2ae3d27d4eb4fULL) ^ (c * 0x165667b19e3779f9ULL));
  return rng.next();
}

std::uint32_t buffer_key(std::uint64_t seed, int thread, int iteration, int index) {
  return static_cast<std::uint32_t>(mix(seed, static_cast<std::uint64_t>(thread) + 1,
                                        static_cast<std::uint64_t>(iteration) + 1,
                                        static_cast<std::uint64_t>(index) + 1) >>
                                    32);
}

// The iteration of `window` in which `thread` allocates its extras (seeded).
int extras_iteration(int window, int thread, std::uint64_t seed) {
  const std::uint64_t pick =
      mix(seed ^ 0xe7a5ULL, static_cast<std::uint64_t>(window), static_cast<std::uint64_t>(thread), 0) % kExtrasWindow;
  return window * kExtrasWindow + static_cast<int>(pick);
}

}  // namespace

bool is_asynchronous(Role role) {
  return role == Role::kTradedAtoB || role == Role::kLateTradedBtoA || role == Role::kExtra;
}

IterationPlan plan_iteration(int iteration, int thread, std::uint64_t seed, int shape_period) {
  IterationPlan plan;
  plan.evaluation = iteration % kEvaluationEvery == kEvaluationEvery - 1;
  plan.shape = plan.evaluation ? 3 : (iteration / shape_period) % 3;
  const Shape shape = plan.evaluation ? kEvaluationShape : kTrainingShapes[plan.shape];
  for (int j = 0; j < shape.buffers; ++j) {
    BufferSpec spec;
    spec.index = j;
    spec.key = buffer_key(seed, thread, iteration, j);
    if (plan.evaluation) {
      spec.role = Role::kEvaluation;
      spec.words = shape.base_words * (j + 1) + 16 * thread;
    } else {
      spec.role = static_cast<Role>(j % 4);
      spec.words = shape.base_words * (1 + j % 4) + 16 * thread;
      if (spec.role == Role::kLateSync || spec.role == Role::kLateTradedBtoA) {
        spec.lateness = 1 + (j / 4) % 2;
      }
    }
    plan.buffers.push_back(spec);
  }
  if (extras_iteration(iteration / kExtrasWindow, thread, seed) == iteration) {
    for (int e = 0; e < kExtrasPerWindow; ++e) {
      BufferSpec spec;
      spec.index = static_cast<int>(plan.buffers.size());
      spec.key = buffer_key(seed, thread, iteration, spec.index);
      spec.role = Role::kExtra;
      spec.words =
          256 + static_cast<int>(mix(seed, 0xe7, static_cast<std::uint64_t>(iteration), static_cast<std::uint64_t>(e)) %
                                 8192);
      plan.buffers.push_back(spec);
    }
  }
  return plan;
}

}  // namespace adversarial
