// One host thread of adversarial_train: its own current primary context, two non-blocking
// streams A and B and three events, running the schedule of schedule.hpp iteration after
// iteration. Every buffer is filled with its pattern right after allocation, digested by a
// consumer (often on the other stream) and verified on the stream that frees it, right before
// the free; verdicts are read back at the end of each iteration.
#pragma once

#include "options.hpp"
#include "schedule.hpp"

#include "../common/driver_api.hpp"

#include <cstdint>
#include <vector>

namespace adversarial {

struct PatternKernels {
  CUfunction fill = nullptr;
  CUfunction digest = nullptr;
  CUfunction verify = nullptr;
};

class Worker {
 public:
  // Makes the device's primary context current on the calling thread and creates the streams,
  // events and the two persistent result buffers (digests, verdicts).
  Worker(const apps::DriverApi& api, const PatternKernels& kernels, const Options& options, int thread);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Runs one iteration; `checksum` gets FNV-1a over the digests of the iteration's buffers, in
  // buffer order. Returns false (after printing CORRUPTED lines) when a verification failed.
  bool run_iteration(int iteration, std::uint64_t& checksum);

  // Verifies and frees the buffers still alive (freed late), then releases everything.
  // Returns false when a verification failed.
  bool finish();

 private:
  struct Live {
    BufferSpec spec;
    int iteration = 0;  // the iteration that allocated it
    int due = 0;        // the iteration that frees it (late roles)
    CUdeviceptr buffer = 0;
  };
  struct PendingVerdict {
    int iteration;
    int index;
    int slot;
  };

  Live allocate(const BufferSpec& spec, int iteration);
  void digest(const Live& live, CUstream stream);
  // Verify on `stream`, then free: cuMemFreeAsync on `stream` for stream-ordered buffers,
  // cuMemFree otherwise.
  void release(const Live& live, CUstream stream);
  void release_due(int iteration);
  // Copies the verdicts to the host (on A, then synchronises A) and checks those pending.
  bool check_verdicts();
  void launch(CUfunction kernel, CUstream stream, int elements, void** params);

  const apps::DriverApi& api_;
  PatternKernels kernels_;
  Options options_;
  int thread_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream a_ = nullptr;
  CUstream b_ = nullptr;
  CUevent a_ready_ = nullptr;  // A → B: the buffers filled on A
  CUevent b_ready_ = nullptr;  // B → A: the buffers filled on B
  CUevent b_done_ = nullptr;   // B → A: all of B's work of the iteration
  CUdeviceptr digests_ = 0;    // one 32-bit digest per buffer of the current iteration
  CUdeviceptr verdicts_ = 0;   // a ring of verdict slots (first bad word or -1)
  int next_slot_ = 0;
  std::vector<PendingVerdict> pending_verdicts_;
  std::vector<Live> late_;  // buffers freed in a later iteration
  std::vector<std::uint32_t> host_digests_;
  std::vector<int> host_verdicts_;
  std::uint32_t corrupt_word_ = 0;  // host source of the self-test's overwrite
  bool finished_ = false;
};

}  // namespace adversarial
