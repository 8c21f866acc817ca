// GroupedStep: buffers, the table and the launches of one step of table_train (table_step.hpp).
#include "table_step.hpp"

#include "../common/checksum.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace table {
namespace {

constexpr int kRoles = 3;  // input, weight, output (kernel_math::table_slot)
enum Key : int { input_key = 1, weight_key = 2, output_key = 3 };

}  // namespace

CUdeviceptr GroupedStep::Buffer::entry() const { return base + (interior ? kInteriorBytes : 0); }

GroupedStep::GroupedStep(const apps::DriverApi& api, const TableKernels& kernels, const Options& options)
    : api_(api), kernels_(kernels), options_(options) {
  APP_CHECK(api_, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  buffer_bytes_ = static_cast<std::size_t>(options_.words) * 4 + (options_.interior ? kInteriorBytes : 0);
  const auto groups = static_cast<std::size_t>(options_.groups);
  entries_.assign(1 + kRoles * groups, 0);
  APP_CHECK(api_, cuMemAlloc_v2(&verdicts_, 2 * kMaxGroups * sizeof(unsigned)));
  const std::vector<unsigned> zeros(2 * kMaxGroups, 0);
  APP_CHECK(api_, cuMemcpyHtoD_v2(verdicts_, zeros.data(), zeros.size() * sizeof(unsigned)));
  const std::size_t table_bytes = entries_.size() * sizeof(CUdeviceptr);
  if (options_.table_in_large) {
    APP_CHECK(api_, cuMemAlloc_v2(&table_memory_, std::max(buffer_bytes_, kInteriorBytes + table_bytes)));
    table_ = table_memory_ + kInteriorBytes;
  } else {
    APP_CHECK(api_, cuMemAlloc_v2(&table_memory_, table_bytes));
    table_ = table_memory_;
  }
  if (options_.source == Source::pinned || options_.source == Source::global) {
    APP_CHECK(api_, cuMemAllocHost_v2(&pinned_, table_bytes));
  }
  // The weights' first pattern: group g's key is kernel_math::group_key(key(weight, 0), g).
  for (std::size_t g = 0; g < groups; ++g) {
    weights_.push_back(allocate());
    const unsigned mixed = key(weight_key, 0) ^ (0x85ebca6bu * static_cast<unsigned>(g + 1));
    launch(kernels_.fill, options_.words, weights_[g].entry(), mixed, options_.words);
  }
  if (!options_.refresh) {
    for (std::size_t g = 0; g < groups; ++g) {
      inputs_.push_back(allocate());
      outputs_.push_back(allocate());
    }
    write_table();
  }
  APP_CHECK(api_, cuStreamSynchronize(stream_));
}

GroupedStep::~GroupedStep() {
  APP_CHECK(api_, cuStreamSynchronize(stream_));
  for (auto* list : {&inputs_, &weights_, &outputs_}) {
    for (Buffer& b : *list) release(b);
  }
  APP_CHECK(api_, cuStreamSynchronize(stream_));
  APP_CHECK(api_, cuMemFree_v2(table_memory_));
  APP_CHECK(api_, cuMemFree_v2(verdicts_));
  if (pinned_ != nullptr) APP_CHECK(api_, cuMemFreeHost(pinned_));
  APP_CHECK(api_, cuStreamDestroy_v2(stream_));
}

// A 32-bit key per (what, index), from the seed.
unsigned GroupedStep::key(int what, int index) const {
  std::uint64_t z = options_.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(what) * 0xBF58476D1CE4E5B9ull +
                    static_cast<std::uint64_t>(index) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  z *= 0xD6E8FEB86659FD93ull;
  z ^= z >> 32;
  return static_cast<unsigned>(z);
}

GroupedStep::Buffer GroupedStep::allocate() {
  Buffer b;
  b.interior = options_.interior;
  if (options_.async) {
    APP_CHECK(api_, cuMemAllocAsync(&b.base, buffer_bytes_, stream_));
  } else {
    APP_CHECK(api_, cuMemAlloc_v2(&b.base, buffer_bytes_));
  }
  return b;
}

void GroupedStep::release(Buffer& b) {
  if (b.base == 0) return;
  if (options_.async) {
    APP_CHECK(api_, cuMemFreeAsync(b.base, stream_));
  } else {
    APP_CHECK(api_, cuMemFree_v2(b.base));
  }
  b.base = 0;
}

template <class... Args>
void GroupedStep::launch(CUfunction kernel, int elements, Args... args) {
  void* params[] = {&args...};
  constexpr int threads_per_block = 256;
  const int blocks = std::clamp((elements + threads_per_block - 1) / threads_per_block, 1, 1024);
  APP_CHECK(api_, cuLaunchKernel(kernel, static_cast<unsigned>(blocks), 1, 1, threads_per_block, 1, 1, 0, stream_,
                                 params, nullptr));
}

// The table's entries: the verdicts, then each group's input (null when inputs are passed
// directly), weight and output; written the way --table says.
void GroupedStep::write_table() {
  entries_[0] = verdicts_;
  for (std::size_t g = 0; g < weights_.size(); ++g) {
    entries_[1 + kRoles * g] = options_.written_only ? 0 : inputs_[g].entry();
    entries_[2 + kRoles * g] = weights_[g].entry();
    entries_[3 + kRoles * g] = outputs_[g].entry();
  }
  const std::size_t bytes = entries_.size() * sizeof(CUdeviceptr);
  switch (options_.source) {
    case Source::pinned:
    case Source::global:
      std::memcpy(pinned_, entries_.data(), bytes);  // the last upload has landed: the step synchronised
      APP_CHECK(api_, cuMemcpyHtoDAsync_v2(table_, pinned_, bytes, stream_));
      if (options_.source == Source::global) launch(kernels_.publish, 1, table_);
      break;
    case Source::pageable:
      pageable_ = entries_;
      APP_CHECK(api_, cuMemcpyHtoDAsync_v2(table_, pageable_.data(), bytes, stream_));
      break;
    case Source::kernel:
      for (std::size_t slot = 0; slot < entries_.size(); ++slot) {
        launch(kernels_.set, 1, table_, static_cast<int>(slot), entries_[slot]);
      }
      break;
  }
}

std::string GroupedStep::run(int step) {
  const int groups = options_.groups;
  if (options_.refresh) {
    inputs_.clear();
    outputs_.clear();
    for (int g = 0; g < groups; ++g) {
      inputs_.push_back(allocate());
      outputs_.push_back(allocate());
    }
    write_table();
  }
  const unsigned in = key(input_key, step);
  const unsigned weight = key(weight_key, version_);
  const unsigned next = key(weight_key, version_ + 1);
  const unsigned out = key(output_key, step);
  // The inputs, written directly (the program's own data loading).
  for (int g = 0; g < groups; ++g) {
    const unsigned mixed = in ^ (0x85ebca6bu * static_cast<unsigned>(g + 1));
    launch(kernels_.fill, options_.words, inputs_[static_cast<std::size_t>(g)].entry(), mixed, options_.words);
  }
  // A null table: the kernels read the one table_publish left in the device global.
  const CUdeviceptr table_arg = options_.source == Source::global ? 0 : table_;
  if (options_.written_only) {
    for (int g = 0; g < groups; ++g) {
      launch(kernels_.forward, 1, inputs_[static_cast<std::size_t>(g)].entry(), table_arg, g, 1, in, weight, out,
             options_.words);
    }
  } else {
    launch(kernels_.forward, groups, CUdeviceptr{0}, table_arg, 0, groups, in, weight, out, options_.words);
  }
  launch(kernels_.update, groups, table_arg, groups, in, weight, out, next, options_.words);
  if (options_.self_test_corrupt && step == 1) {
    // One word of a weight, once, after its update: the next step's forward must count it.
    APP_CHECK(api_, cuStreamSynchronize(stream_));
    const unsigned garbage = 0x0badc0deu;
    APP_CHECK(api_, cuMemcpyHtoD_v2(weights_[0].entry() + 4 * 37, &garbage, sizeof garbage));
  }
  ++version_;
  launch(kernels_.digest, groups, table_arg, groups, options_.words);
  unsigned verdicts[2 * kMaxGroups] = {};
  APP_CHECK(api_, cuMemcpyDtoHAsync_v2(verdicts, verdicts_, sizeof verdicts, stream_));
  APP_CHECK(api_, cuStreamSynchronize(stream_));
  std::uint64_t bad = 0;
  apps::Checksum checksum;
  for (int g = 0; g < groups; ++g) {
    const unsigned now = verdicts[g];
    if (now != counted_[g]) {
      std::fprintf(stderr, "CORRUPTED step %d group %d words %u\n", step, g, now - counted_[g]);
      bad += now - counted_[g];
      counted_[g] = now;
    }
    checksum.add(&verdicts[groups + g], sizeof(unsigned));
  }
  corrupted_ += bad;
  if (options_.refresh) {
    for (Buffer& b : inputs_) release(b);
    for (Buffer& b : outputs_) release(b);
  }
  char line[128];
  std::snprintf(line, sizeof line, "step %d corrupted %llu checksum 0x%016llx", step, static_cast<unsigned long long>(bad),
                static_cast<unsigned long long>(checksum.value()));
  return line;
}

}  // namespace table
