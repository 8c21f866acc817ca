// GroupedStep: buffers, the tables and the launches of one step of table_train (table_step.hpp).
#include "table_step.hpp"

#include "../common/checksum.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace table {
namespace {

constexpr int kRoles = 3;  // input, weight, output (kernel_math::table_slot)
enum Key : int { input_key = 1, weight_key = 2, output_key = 3 };
constexpr std::size_t kVerdictWords = 2 * kMaxGroups;  // per layer

// kernel_math::group_key: group g's buffers get their own key.
unsigned group_key(unsigned key, int group) { return key ^ (0x85ebca6bu * static_cast<unsigned>(group + 1)); }

}  // namespace

CUdeviceptr GroupedStep::Buffer::entry() const { return base + (interior ? kInteriorBytes : 0); }

GroupedStep::GroupedStep(const apps::DriverApi& api, const TableKernels& kernels, const Options& options)
    : api_(api), kernels_(kernels), options_(options) {
  APP_CHECK(api_, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  buffer_bytes_ = static_cast<std::size_t>(options_.words) * 4 + (options_.interior ? kInteriorBytes : 0);
  const auto groups = static_cast<std::size_t>(options_.groups);
  const auto layers = static_cast<std::size_t>(options_.layers);
  counted_.assign(layers * groups, 0);
  const std::vector<unsigned> zeros(layers * kVerdictWords, 0);
  APP_CHECK(api_, cuMemAlloc_v2(&verdicts_, zeros.size() * sizeof(unsigned)));
  APP_CHECK(api_, cuMemcpyHtoD_v2(verdicts_, zeros.data(), zeros.size() * sizeof(unsigned)));
  layers_.resize(layers);
  for (std::size_t l = 0; l < layers; ++l) {
    Layer& layer = layers_[l];
    layer.entries.assign(1 + kRoles * groups, 0);
    const std::size_t table_bytes = layer.entries.size() * sizeof(CUdeviceptr);
    if (options_.table_in_large) {
      APP_CHECK(api_, cuMemAlloc_v2(&layer.table_memory, std::max(buffer_bytes_, kInteriorBytes + table_bytes)));
      layer.table = layer.table_memory + kInteriorBytes;
    } else {
      APP_CHECK(api_, cuMemAlloc_v2(&layer.table_memory, table_bytes));
      layer.table = layer.table_memory;
    }
    if (options_.source == Source::pinned || options_.source == Source::global) {
      APP_CHECK(api_, cuMemAllocHost_v2(&layer.pinned, table_bytes));
    }
    // The weights' first pattern: group g's key is group_key(key(weight, l, 0), g).
    for (std::size_t g = 0; g < groups; ++g) {
      layer.weights.push_back(allocate());
      launch(kernels_.fill, options_.words, layer.weights[g].entry(),
             group_key(key(weight_key, static_cast<int>(l), 0), static_cast<int>(g)), options_.words);
    }
    if (!options_.refresh) {
      for (std::size_t g = 0; g < groups; ++g) {
        layer.inputs.push_back(allocate());
        layer.outputs.push_back(allocate());
      }
      write_table(layer, static_cast<int>(l));
    }
  }
  APP_CHECK(api_, cuStreamSynchronize(stream_));
}

GroupedStep::~GroupedStep() {
  APP_CHECK(api_, cuStreamSynchronize(stream_));
  for (Layer& layer : layers_) {
    for (auto* list : {&layer.inputs, &layer.weights, &layer.outputs}) {
      for (Buffer& b : *list) release(b);
    }
    APP_CHECK(api_, cuStreamSynchronize(stream_));
    APP_CHECK(api_, cuMemFree_v2(layer.table_memory));
    if (layer.pinned != nullptr) APP_CHECK(api_, cuMemFreeHost(layer.pinned));
  }
  APP_CHECK(api_, cuMemFree_v2(verdicts_));
  APP_CHECK(api_, cuStreamDestroy_v2(stream_));
}

// A 32-bit key per (what, layer, index), from the seed.
unsigned GroupedStep::key(int what, int layer, int index) const {
  std::uint64_t z = options_.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(what) * 0xBF58476D1CE4E5B9ull +
                    static_cast<std::uint64_t>(layer) * 0xD1B54A32D192ED03ull +
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

// A layer's table: its verdicts (an interior pointer into the one verdict buffer), then each
// group's input (null when inputs are passed directly), weight and output; written the way
// --table says.
void GroupedStep::write_table(Layer& layer, int index) {
  layer.entries[0] = verdicts_ + static_cast<CUdeviceptr>(index) * kVerdictWords * sizeof(unsigned);
  for (std::size_t g = 0; g < layer.weights.size(); ++g) {
    layer.entries[1 + kRoles * g] = options_.written_only ? 0 : layer.inputs[g].entry();
    layer.entries[2 + kRoles * g] = layer.weights[g].entry();
    layer.entries[3 + kRoles * g] = layer.outputs[g].entry();
  }
  const std::size_t bytes = layer.entries.size() * sizeof(CUdeviceptr);
  switch (options_.source) {
    case Source::pinned:
    case Source::global:
      std::memcpy(layer.pinned, layer.entries.data(), bytes);  // its last upload has landed: the step synchronised
      APP_CHECK(api_, cuMemcpyHtoDAsync_v2(layer.table, layer.pinned, bytes, stream_));
      break;
    case Source::pageable:
      layer.pageable = layer.entries;
      APP_CHECK(api_, cuMemcpyHtoDAsync_v2(layer.table, layer.pageable.data(), bytes, stream_));
      break;
    case Source::kernel:
      for (std::size_t slot = 0; slot < layer.entries.size(); ++slot) {
        launch(kernels_.set, 1, layer.table, static_cast<int>(slot), layer.entries[slot]);
      }
      break;
  }
}

// Under --table global the layer's table is published in the device global first, and the
// kernels get none (they read the global).
CUdeviceptr GroupedStep::table_argument(const Layer& layer) {
  if (options_.source != Source::global) return layer.table;
  launch(kernels_.publish, 1, layer.table);
  return 0;
}

std::string GroupedStep::run(int step) {
  const int groups = options_.groups;
  const int layers = options_.layers;
  if (options_.refresh) {
    for (int l = 0; l < layers; ++l) {
      Layer& layer = layers_[static_cast<std::size_t>(l)];
      layer.inputs.clear();
      layer.outputs.clear();
      for (int g = 0; g < groups; ++g) {
        layer.inputs.push_back(allocate());
        layer.outputs.push_back(allocate());
      }
      write_table(layer, l);
    }
  }
  // Forward, layer by layer: the inputs written directly (the program's data), then one grouped
  // launch (or one per group when inputs are arguments) through the layer's table.
  for (int l = 0; l < layers; ++l) {
    Layer& layer = layers_[static_cast<std::size_t>(l)];
    const unsigned in = key(input_key, l, step);
    const unsigned weight = key(weight_key, l, version_);
    const unsigned out = key(output_key, l, step);
    for (int g = 0; g < groups; ++g) {
      launch(kernels_.fill, options_.words, layer.inputs[static_cast<std::size_t>(g)].entry(), group_key(in, g),
             options_.words);
    }
    const CUdeviceptr table = table_argument(layer);
    if (options_.written_only) {
      for (int g = 0; g < groups; ++g) {
        launch(kernels_.forward, 1, layer.inputs[static_cast<std::size_t>(g)].entry(), table, g, 1, in, weight, out,
               options_.words);
      }
    } else {
      launch(kernels_.forward, groups, CUdeviceptr{0}, table, 0, groups, in, weight, out, options_.words);
    }
  }
  // The update, last layer first (as a backward pass goes), then the weights' digests. With
  // --through written, what a kernel only reads is its argument, what it writes is in the table.
  for (int l = layers - 1; l >= 0; --l) {
    Layer& layer = layers_[static_cast<std::size_t>(l)];
    const CUdeviceptr table = table_argument(layer);
    const unsigned in = key(input_key, l, step);
    const unsigned weight = key(weight_key, l, version_);
    const unsigned out = key(output_key, l, step);
    const unsigned next = key(weight_key, l, version_ + 1);
    if (options_.written_only) {
      // The outputs it reads are arguments; the weights it writes, through the table.
      for (int g = 0; g < groups; ++g) {
        launch(kernels_.update, 1, layer.outputs[static_cast<std::size_t>(g)].entry(), table, g, 1, in, weight, out,
               next, options_.words);
      }
    } else {
      launch(kernels_.update, groups, CUdeviceptr{0}, table, 0, groups, in, weight, out, next, options_.words);
    }
    launch(kernels_.digest, groups, table, groups, options_.words);
  }
  if (options_.self_test_corrupt && step == 1) {
    // One word of a weight, once, after its update: the next step's forward must count it.
    APP_CHECK(api_, cuStreamSynchronize(stream_));
    const unsigned garbage = 0x0badc0deu;
    APP_CHECK(api_, cuMemcpyHtoD_v2(layers_[0].weights[0].entry() + 4 * 37, &garbage, sizeof garbage));
  }
  ++version_;
  std::vector<unsigned> verdicts(static_cast<std::size_t>(layers) * kVerdictWords, 0);
  APP_CHECK(api_, cuMemcpyDtoHAsync_v2(verdicts.data(), verdicts_, verdicts.size() * sizeof(unsigned), stream_));
  APP_CHECK(api_, cuStreamSynchronize(stream_));
  std::uint64_t bad = 0;
  apps::Checksum checksum;
  for (int l = 0; l < layers; ++l) {
    const unsigned* row = verdicts.data() + static_cast<std::size_t>(l) * kVerdictWords;
    for (int g = 0; g < groups; ++g) {
      unsigned& counted = counted_[static_cast<std::size_t>(l * groups + g)];
      if (row[g] != counted) {
        std::fprintf(stderr, "CORRUPTED step %d layer %d group %d words %u\n", step, l, g, row[g] - counted);
        bad += row[g] - counted;
        counted = row[g];
      }
      checksum.add(&row[groups + g], sizeof(unsigned));
    }
  }
  corrupted_ += bad;
  if (options_.refresh) {
    for (Layer& layer : layers_) {
      for (Buffer& b : layer.inputs) release(b);
      for (Buffer& b : layer.outputs) release(b);
    }
  }
  char line[128];
  std::snprintf(line, sizeof line, "step %d corrupted %llu checksum 0x%016llx", step,
                static_cast<unsigned long long>(bad), static_cast<unsigned long long>(checksum.value()));
  return line;
}

}  // namespace table
