// The grouped step of table_train: L layers of G groups, each group an input, a weight and an
// output buffer, reached by a layer's kernels through that layer's table of pointers in device
// memory (kernel_math.hpp's grouped_*). Every word a kernel reads is checked against the
// pattern its last writer left, so a swapper that moves a buffer under a kernel it did not see
// shows up as counted words.
#pragma once

#include "table_options.hpp"

#include "../common/driver_api.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace table {

struct TableKernels {
  CUfunction fill = nullptr;  // pattern_fill
  CUfunction forward = nullptr;
  CUfunction update = nullptr;
  CUfunction digest = nullptr;
  CUfunction set = nullptr;
  CUfunction publish = nullptr;
};

class GroupedStep {
 public:
  GroupedStep(const apps::DriverApi& api, const TableKernels& kernels, const Options& options);
  ~GroupedStep();
  GroupedStep(const GroupedStep&) = delete;
  GroupedStep& operator=(const GroupedStep&) = delete;

  // Runs step `step`; returns its line ("step S corrupted N checksum 0x…").
  std::string run(int step);
  std::uint64_t corrupted() const { return corrupted_; }

 private:
  struct Buffer {
    CUdeviceptr base = 0;
    bool interior = false;
    CUdeviceptr entry() const;  // what the table holds: the base, or kInteriorBytes into it
  };
  struct Layer {
    std::vector<Buffer> inputs, weights, outputs;
    CUdeviceptr table_memory = 0;       // the table's own allocation
    CUdeviceptr table = 0;              // the table (table_memory, or an offset into it)
    std::vector<CUdeviceptr> entries;   // its contents
    void* pinned = nullptr;             // Source::pinned, global: the host side of its upload
    std::vector<CUdeviceptr> pageable;  // Source::pageable
  };

  Buffer allocate();
  void release(Buffer& b);
  void write_table(Layer& layer, int index);
  CUdeviceptr table_argument(const Layer& layer);  // 0 under --table global, after publishing it
  template <class... Args>
  void launch(CUfunction kernel, int elements, Args... args);
  unsigned key(int what, int layer, int index) const;

  const apps::DriverApi& api_;
  const TableKernels& kernels_;
  const Options& options_;
  CUstream stream_ = nullptr;
  std::size_t buffer_bytes_ = 0;
  std::vector<Layer> layers_;
  CUdeviceptr verdicts_ = 0;  // per layer 2 * kMaxGroups words: mismatch counts, then digests
  int version_ = 0;           // the weights' pattern
  std::uint64_t corrupted_ = 0;
  std::vector<unsigned> counted_;  // mismatches seen so far, per layer and group
};

}  // namespace table
