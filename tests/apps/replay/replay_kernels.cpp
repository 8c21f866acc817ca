// The replayed operators' kernels for fakecuda: REPLAY_KERNELS kernels named replay_op_<n>, all
// the same host function. A ref reaches its buffer through its pointer parameter, or through the
// launch's pointer table (replay_abi.h). Each checks that every buffer it reads still holds what its last
// writer stored there (a word per REPLAY_SAMPLE_BYTES and the last word: any two 512-byte-aligned
// buffers that overlap share a checked word), then fills what it writes. A mismatch is counted
// and the first few are reported on stderr; replay_train turns the count into its exit status.
#include <fakecuda/kernel_abi.h>

#include <array>
#include <chrono>
#include <thread>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "replay_abi.h"

namespace {

std::atomic<unsigned long long> g_corrupted{0};

std::uint64_t pattern(std::uint64_t tag, std::uint64_t offset) {
  std::uint64_t z = tag * 0x9E3779B97F4A7C15ull + offset + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Calls `visit(offset, width)` for every checked word of a buffer of `bytes` bytes.
template <class Visit>
void for_each_word(std::uint64_t bytes, Visit visit) {
  if (bytes < 8) {
    if (bytes > 0) visit(0, bytes);
    return;
  }
  for (std::uint64_t offset = 0; offset + 8 <= bytes; offset += REPLAY_SAMPLE_BYTES) visit(offset, 8);
  if ((bytes - 8) % REPLAY_SAMPLE_BYTES != 0) visit(bytes - 8, 8);
}

void check(unsigned char* base, const replay_ref& ref, const replay_launch& launch) {
  for_each_word(ref.bytes, [&](std::uint64_t offset, std::uint64_t width) {
    const std::uint64_t expected = pattern(ref.check_tag, offset);
    std::uint64_t found = 0;
    std::memcpy(&found, base + offset, width);
    std::uint64_t want = 0;
    std::memcpy(&want, &expected, width);
    if (found != want) {
      if (g_corrupted.fetch_add(1) < 8) {
        std::fprintf(stderr, "CORRUPTED step %u op %llu slot %llu offset %llu (of %llu bytes)\n", launch.step,
                     static_cast<unsigned long long>(launch.op), static_cast<unsigned long long>(ref.slot),
                     static_cast<unsigned long long>(offset), static_cast<unsigned long long>(ref.bytes));
      }
    }
  });
}

void fill(unsigned char* base, const replay_ref& ref) {
  for_each_word(ref.bytes, [&](std::uint64_t offset, std::uint64_t width) {
    const std::uint64_t value = pattern(ref.fill_tag, offset);
    std::memcpy(base + offset, &value, width);
  });
}

// A GPU kernel's run time, without a CPU's: the worker sleeps (it does not compete with the
// host thread or the copy engines for the machine's cores).
void take_time(std::chrono::steady_clock::time_point start, std::uint64_t ns) {
  if (ns != 0) std::this_thread::sleep_until(start + std::chrono::nanoseconds(ns));
}

void replay_op(void** params, const fakecuda_launch_dims* /*dims*/) {
  const auto start = std::chrono::steady_clock::now();
  const replay_launch* launch = nullptr;
  std::memcpy(&launch, params[0], sizeof launch);
  const std::uint64_t* table = nullptr;
  std::memcpy(&table, params[1], sizeof table);
  // Ref i's address: from the table in device memory, or its own pointer parameter.
  auto address_of = [&](std::uint32_t i) {
    std::uint64_t address = 0;
    if ((launch->via_table >> i) & 1u) {
      address = table[i];
    } else {
      std::memcpy(&address, params[2 + i], sizeof address);
    }
    return reinterpret_cast<unsigned char*>(address);
  };
  for (std::uint32_t i = 0; i < launch->count; ++i) {
    if (launch->refs[i].check_tag != 0) check(address_of(i), launch->refs[i], *launch);
  }
  for (std::uint32_t i = 0; i < launch->count; ++i) {
    if (launch->refs[i].fill_tag != 0) fill(address_of(i), launch->refs[i]);
  }
  take_time(start, launch->compute_ns);
}

constexpr unsigned kParams = 2 + REPLAY_MAX_REFS;  // the description, the table, the pointers

struct Table {
  std::array<std::string, REPLAY_KERNELS> names;
  std::array<unsigned, kParams> offsets{};
  std::array<unsigned, kParams> sizes{};
  std::array<fakecuda_kernel_desc, REPLAY_KERNELS> kernels{};
  Table() {
    for (unsigned i = 0; i < kParams; ++i) {
      offsets[i] = 8 * i;
      sizes[i] = 8;
    }
    for (unsigned k = 0; k < REPLAY_KERNELS; ++k) {
      names[k] = "replay_op_" + std::to_string(k);
      kernels[k] = fakecuda_kernel_desc{names[k].c_str(), &replay_op, kParams, offsets.data(), sizes.data()};
    }
  }
};

const Table g_table;

}  // namespace

extern "C" __attribute__((visibility("default")))
const fakecuda_kernel_table fakecuda_kernels = {FAKECUDA_KERNEL_ABI_VERSION, REPLAY_KERNELS, g_table.kernels.data()};

extern "C" __attribute__((visibility("default"))) unsigned long long replay_corrupted_words(void) {
  return g_corrupted.load();
}

extern "C" __attribute__((visibility("default"))) std::uint64_t replay_pattern(std::uint64_t tag,
                                                                               std::uint64_t offset) {
  return pattern(tag, offset);
}
