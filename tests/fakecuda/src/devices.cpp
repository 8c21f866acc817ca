// Device configuration from the environment, device identity and the per-device gauges.
#include "devices.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fakecuda {
namespace {

DeviceConfig& config_storage() {
  static auto* c = new DeviceConfig;  // leaked: read by workers and the exit hook
  return *c;
}

DeviceGauges* gauges_storage() {
  static auto* g = new DeviceGauges[kMaxDevices];
  return g;
}

// Splits "a,b,c" at commas; empty pieces are kept so "4G,,4G" fails as it should.
std::vector<std::string> split_commas(const char* text) {
  std::vector<std::string> pieces;
  std::string piece;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c == ',') {
      pieces.push_back(piece);
      piece.clear();
    } else {
      piece.push_back(*c);
    }
  }
  pieces.push_back(piece);
  return pieces;
}

}  // namespace

// "4G", "512M", "65536"; "1.5G" is not accepted: whole numbers with an optional K/M/G/T suffix
// (powers of 1024), because a typo must fail loudly rather than emulate the wrong device.
bool parse_bytes(const char* text, std::size_t& out) {
  if (text == nullptr || *text == '\0') {
    return false;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-' || text[0] == '+' || text[0] == ' ') {
    return false;
  }
  unsigned shift = 0;
  if (*end != '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        return false;
    }
    ++end;
    if (*end == 'i' || *end == 'B') {
      ++end;
    }
    if (*end == 'B') {
      ++end;
    }
    if (*end != '\0') {
      return false;
    }
  }
  if (value == 0 || (shift != 0 && value > (~0ULL >> shift))) {
    return false;
  }
  out = static_cast<std::size_t>(value << shift);
  return true;
}

bool parse_device_config(const char* devices, const char* memory_bytes, DeviceConfig& out, std::string& error) {
  DeviceConfig config;
  config.count = 0;
  if (devices != nullptr) {
    errno = 0;
    char* end = nullptr;
    const long n = std::strtol(devices, &end, 10);
    if (*devices == '\0' || errno != 0 || *end != '\0' || n < 1 || n > kMaxDevices) {
      error = "FAKECUDA_DEVICES=\"" + std::string(devices) + "\" is not a device count (1 to " +
              std::to_string(kMaxDevices) + ")";
      return false;
    }
    config.count = static_cast<int>(n);
  }
  std::vector<std::size_t> capacities;
  if (memory_bytes != nullptr) {
    for (const std::string& piece : split_commas(memory_bytes)) {
      std::size_t bytes = 0;
      if (!parse_bytes(piece.c_str(), bytes)) {
        error = "FAKECUDA_MEMORY_BYTES=\"" + std::string(memory_bytes) +
                "\" is not a byte count or a comma list of them (e.g. 4294967296, 512M, 4G or 8G,8G)";
        return false;
      }
      capacities.push_back(bytes);
    }
  }
  if (config.count == 0) {
    // Without FAKECUDA_DEVICES a list says how many devices there are.
    config.count = capacities.size() > 1 ? static_cast<int>(capacities.size()) : 1;
    if (config.count > kMaxDevices) {
      error = "FAKECUDA_MEMORY_BYTES lists more than " + std::to_string(kMaxDevices) + " devices";
      return false;
    }
  }
  if (capacities.empty()) {
    capacities.push_back(kDefaultDeviceCapacity);
  }
  if (capacities.size() == 1) {
    capacities.assign(static_cast<std::size_t>(config.count), capacities.front());
  }
  if (capacities.size() != static_cast<std::size_t>(config.count)) {
    error = "FAKECUDA_MEMORY_BYTES lists " + std::to_string(capacities.size()) + " capacities for " +
            std::to_string(config.count) + " devices (FAKECUDA_DEVICES)";
    return false;
  }
  config.capacity = std::move(capacities);
  out = std::move(config);
  return true;
}

const DeviceConfig& device_config() noexcept { return config_storage(); }

void set_device_config(const DeviceConfig& config) { config_storage() = config; }

std::size_t device_capacity(int device) noexcept {
  const DeviceConfig& c = device_config();
  return device >= 0 && device < c.count ? c.capacity[static_cast<std::size_t>(device)] : 0;
}

std::size_t total_capacity() noexcept {
  std::size_t total = 0;
  for (const std::size_t c : device_config().capacity) {
    total += c;
  }
  return total;
}

bool can_access_peer(int device, int peer) noexcept {
  return device != peer && device >= 0 && peer >= 0 && device < device_count() && peer < device_count();
}

std::string pci_bus_id(int device) {
  char text[16];
  std::snprintf(text, sizeof text, "0000:%02x:00.0", static_cast<unsigned>(device + 1) & 0xffu);
  return text;
}

DeviceGauges& device_gauges(int device) noexcept { return gauges_storage()[device]; }

}  // namespace fakecuda
