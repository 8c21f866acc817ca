// The host–device link: one copy engine per direction, so that copies take the time a PCIe or
// NVLink-C2C link would give them and overlap with kernels the way they do on a GPU. A copy runs in
// its stream's order on the stream's worker, but first queues (FIFO across streams) for its
// direction's engine and holds it for latency + bytes / bandwidth of wall time; H2D and D2H have
// an engine each, so they overlap (slowed by the duplex factor while both are busy). The bytes
// move chunk by chunk across that interval, so a reader that skips its synchronisation sees stale
// bytes, as on a GPU. With the default model (unlimited bandwidth, no latency) a copy is a plain
// memmove on the stream worker, as fakecuda always did.
#pragma once

#include <fakecuda/control.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace fakecuda {

enum class LinkDirection : std::uint8_t { h2d, d2h };

// Reads FAKECUDA_LINK_GBPS, _LATENCY_US, _DUPLEX_FACTOR and _PAGEABLE_FACTOR (cuInit). A bad value
// is one warning on stderr and that setting's default, never a failed cuInit: the link only changes
// timing, not results.
void load_link_config_from_env();

// Sets the model from now on (fakecuda_link_configure); false if a value is out of range.
bool set_link_config(const fakecuda_link_config& config);
fakecuda_link_config link_config();

// Moves `bytes` over the link in `direction` on the calling stream worker: waits for the engine,
// calls move(from, to) for consecutive ranges covering [0, bytes) as the modelled transfer
// progresses, and returns when the modelled time has passed. `pinned`: the host side is
// page-locked (pageable memory is staged, at pageable_factor of the bandwidth).
void link_transfer(LinkDirection direction, std::size_t bytes, bool pinned,
                   const std::function<void(std::size_t, std::size_t)>& move);

// Managed memory migrated by a prefetch or a device access: the engines are busy for those bytes
// (no data to move: managed memory has one address on both sides here).
void link_migrate(std::size_t to_device, std::size_t to_host);

// Is the link modelled at all (false: unlimited bandwidth and no latency)?
bool link_modelled() noexcept;

// Brackets a kernel's host function, so that transfers know whether kernels ran beside them.
class KernelRunning {
 public:
  KernelRunning() noexcept;
  ~KernelRunning();
  KernelRunning(const KernelRunning&) = delete;
  KernelRunning& operator=(const KernelRunning&) = delete;
};

}  // namespace fakecuda
