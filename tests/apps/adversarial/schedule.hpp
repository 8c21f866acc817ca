// The adversarial app's schedule: which buffers iteration I of thread T allocates, how, where they
// travel and when they die. A pure function of (iteration, thread, seed, shape period), so the
// allocation counts of a run follow from the documented structure (README.md) alone.
//
// Shapes: iteration I is an *evaluation* iteration when I % 7 == 6; otherwise its training shape
// is (I / period) % 3, so the shape changes every `period` iterations:
//   shape 0: 12 buffers of 1024·(1 + j%4) words     shape 1: 16 buffers of 640·(1 + j%4) words
//   shape 2:  8 buffers of 4096·(1 + j%4) words     evaluation: 6 buffers of 2048·(j+1) words
// (every size + 16·T words, so threads differ). A training buffer's role is j % 4 (see Role);
// an evaluation buffer is synchronous on stream A, kept to the end of the iteration and freed
// in reverse order. Extras: in each window of 4 iterations, one seeded iteration of each thread
// allocates 2 more stream-ordered buffers of seeded sizes.
#pragma once

#include <cstdint>
#include <vector>

namespace adversarial {

enum class Role {
  // cuMemAlloc, filled on A, digested on A, verified and cuMemFree'd right after the next
  // buffer is allocated: short lifetimes interleaved with the others.
  kShortSync,
  // cuMemAllocAsync on A, filled on A, digested, verified and cuMemFreeAsync'd on B after B
  // waited for A's event: a buffer traded from A to B.
  kTradedAtoB,
  // cuMemAlloc, filled on A, digested on B, verified on A and cuMemFree'd one or two
  // iterations later: freed late.
  kLateSync,
  // cuMemAllocAsync on B, filled on B, digested on A, verified and cuMemFreeAsync'd on A one or
  // two iterations later: traded from B to A and freed late.
  kLateTradedBtoA,
  // An evaluation buffer: cuMemAlloc, everything on A, freed at the end in reverse order.
  kEvaluation,
  // A seeded extra: cuMemAllocAsync on A, filled on A, digested, verified and freed on B.
  kExtra,
};

struct BufferSpec {
  int index = 0;  // position in the iteration (also its digest slot)
  int words = 0;  // 32-bit words
  Role role = Role::kShortSync;
  int lateness = 0;       // iterations it outlives its own (late roles: 1 or 2)
  std::uint32_t key = 0;  // pattern key: a function of (seed, thread, iteration, index)
};

struct IterationPlan {
  bool evaluation = false;
  int shape = 0;  // 0..2 for training, 3 for evaluation
  std::vector<BufferSpec> buffers;
};

IterationPlan plan_iteration(int iteration, int thread, std::uint64_t seed, int shape_period);

bool is_asynchronous(Role role);

}  // namespace adversarial
