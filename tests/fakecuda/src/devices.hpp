// The emulated devices: how many there are, what each one holds (FAKECUDA_DEVICES,
// FAKECUDA_MEMORY_BYTES), what each one is called and how it is wired to the others, and the
// per-device memory gauges the stats report. Read once at cuInit; fixed for the process's life.
#pragma once

#include "cuda_abi.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fakecuda {

// Device ordinals are bits of a 32-bit mask in places (VMM and pool access); 16 is plenty for an
// emulated node and keeps every per-device table small.
constexpr int kMaxDevices = 16;
constexpr std::size_t kDefaultDeviceCapacity = std::size_t{4} << 30;

struct DeviceConfig {
  int count = 1;
  std::vector<std::size_t> capacity{kDefaultDeviceCapacity};
};

// Parses FAKECUDA_DEVICES and FAKECUDA_MEMORY_BYTES. On a malformed value returns false with a
// message for stderr in `error` (cuInit then fails with CUDA_ERROR_INVALID_VALUE).
bool parse_device_config(const char* devices, const char* memory_bytes, DeviceConfig& out, std::string& error);

// One byte count: a whole number with an optional K/M/G/T suffix (powers of 1024).
bool parse_bytes(const char* text, std::size_t& out);

// The configuration cuInit settled on (one device of 4 GiB before it).
const DeviceConfig& device_config() noexcept;
void set_device_config(const DeviceConfig& config);
inline int device_count() noexcept { return device_config().count; }
std::size_t device_capacity(int device) noexcept;
std::size_t total_capacity() noexcept;

// Every pair of distinct devices can reach each other (an NVLink-connected node).
bool can_access_peer(int device, int peer) noexcept;

// PCI bus id as the driver formats it ("0000:01:00.0"): device k sits on bus k + 1.
std::string pci_bus_id(int device);

inline std::uint32_t device_bit(int device) noexcept { return std::uint32_t{1} << device; }

// Device memory as cuMemGetInfo sees it, per device; kept by the memory manager under its lock.
struct DeviceGauges {
  std::atomic<std::uint64_t> bytes_in_use{0};
  std::atomic<std::uint64_t> peak_bytes_in_use{0};
};
DeviceGauges& device_gauges(int device) noexcept;

}  // namespace fakecuda
