// A simulated device for the pool engine's tests: real bytes behind every allocation (so a
// buffer handed out over a live one corrupts its pattern), a capacity (out-of-memory paths),
// and asynchronous streams modelled with vector clocks, so a missing ordering is detected
// without any timing: each kernel access to a byte range must happen-after the previous access
// to those bytes from another stream (through cuStreamWaitEvent on an event recorded after it,
// or a host synchronisation); otherwise it counts as a violation, and so does unmapping memory
// whose last access the host has not seen done (the driver's unmap does not wait for it).
// A buffer's bytes are made at its first fill, verify or access, so `memtool simulate` can
// replay a trace of gigabytes on it; with `driver_granularity` each allocation counts (towards
// the capacity and the peak) what the driver would map for it rather than the bytes asked for.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "memtool/engine/device.hpp"

namespace memtool::engine {

class SimDevice final : public Device {
 public:
  struct Options {
    std::uint64_t capacity = std::uint64_t{1} << 32;
    std::uint64_t max_single_allocation = ~std::uint64_t{0};  // bigger requests: OOM
    bool driver_granularity = false;                          // count driver_footprint(size), not size
  };
  // What the driver holds for an allocation of `size` bytes, as we model it: a request of more
  // than 1 MiB takes whole 2 MiB pages; a smaller one is packed into shared pages at 512 B.
  [[nodiscard]] static std::uint64_t driver_footprint(std::uint64_t size);
  SimDevice() : SimDevice(Options{}) {}
  explicit SimDevice(Options options) : options_(options) {}

  Status allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out) override;
  Status free(DevicePtr ptr, MemoryKind kind, StreamId stream) override;
  Status create_event(EventId* out) override;
  Status record_event(EventId event, StreamId stream) override;
  Status stream_wait_event(StreamId stream, EventId event) override;
  bool event_completed(EventId event) override;
  void destroy_event(EventId event) override;
  Status synchronize_event(EventId event) override;  // the host waits for the event's work
  Status create_stream(StreamId* out) override;

  // Virtual memory (what explicit swapping uses): reservations, physical memory on the device
  // (counted towards the capacity) or on the host (not), mappings; 2 MiB granularity.
  Status vmm_granularity(std::uint64_t* bytes) override;
  Status host_vmm_granularity(std::uint64_t* bytes) override;
  Status reserve(std::uint64_t bytes, DevicePtr* out) override;
  Status unreserve(DevicePtr ptr, std::uint64_t bytes) override;
  Status create_physical(std::uint64_t bytes, PhysicalHandle* out) override;
  Status create_host_physical(std::uint64_t bytes, PhysicalHandle* out) override;
  Status release_physical(PhysicalHandle handle) override;
  Status map(DevicePtr ptr, std::uint64_t bytes, PhysicalHandle handle) override;
  Status unmap(DevicePtr ptr, std::uint64_t bytes) override;
  // A copy on `stream`: both ranges are accessed in its order (checked like a kernel's).
  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override;
  // Into host memory, on `stream` (checked like a kernel's read).
  Status copy_to_host(void* dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override;

  // A kernel on `stream` reading and writing [ptr, ptr + bytes). False if the range is not
  // inside one allocation.
  bool access(StreamId stream, DevicePtr ptr, std::uint64_t bytes);
  // Buffer contents: a pattern derived from `seed`, and its check (false if the range is not
  // allocated or any byte differs).
  bool fill(DevicePtr ptr, std::uint64_t bytes, std::uint32_t seed);
  bool verify(DevicePtr ptr, std::uint64_t bytes, std::uint32_t seed);
  // The host waits for all work (cuCtxSynchronize): later work is ordered after everything.
  void synchronize();
  void set_capacity(std::uint64_t capacity);

  std::uint64_t violations() const;
  std::uint64_t live_bytes() const;  // counted bytes of the live allocations (see Options)
  std::uint64_t peak_bytes() const;
  std::uint64_t live_events() const;
  std::uint64_t waits() const;
  std::uint64_t allocate_calls() const;  // successful allocate() calls
  std::uint64_t free_calls() const;      // successful free() calls

 private:
  using Clock = std::map<StreamId, std::uint64_t>;
  struct Block {
    std::uint64_t size = 0;
    std::uint64_t counted = 0;       // towards live bytes and the capacity
    std::vector<std::uint8_t> data;  // `size` bytes once touched, empty before
  };
  struct Shadow {
    std::uint64_t end;
    StreamId stream;
    std::uint64_t tick;
  };
  struct Physical {
    std::uint64_t size = 0;
    bool on_host = false;
    bool released = false;
    int mappings = 0;
    std::vector<std::uint8_t> data;  // `size` bytes once touched
  };
  struct Mapping {
    std::uint64_t size = 0;
    PhysicalHandle handle = 0;
  };
  Clock& clock_of(StreamId stream);
  std::uint8_t* bytes_at(DevicePtr ptr, std::uint64_t bytes);
  void forget_accesses(DevicePtr begin, DevicePtr end);
  bool check_access(StreamId stream, DevicePtr ptr, std::uint64_t bytes);  // mutex held
  Status create_physical_on(std::uint64_t bytes, bool on_host, PhysicalHandle* out);
  void drop_physical_if_unused(PhysicalHandle handle);  // mutex held
  // A fresh address range of `span` bytes aligned to `align` (mutex held); false when the
  // address space has no such gap.
  bool take_addresses(std::uint64_t span, std::uint64_t align, DevicePtr* out);
  bool addresses_taken(DevicePtr begin, DevicePtr end) const;  // mutex held

  Options options_;
  mutable std::mutex mutex_;
  std::map<DevicePtr, Block> blocks_;
  static constexpr DevicePtr kFirstAddress = 0x10000000;
  DevicePtr next_address_ = kFirstAddress;
  std::uint64_t live_bytes_ = 0;
  std::uint64_t peak_bytes_ = 0;
  std::map<StreamId, Clock> streams_;
  std::map<EventId, Clock> events_;
  EventId next_event_ = 1;
  Clock drained_;
  std::map<DevicePtr, Shadow> shadow_;  // last access of each byte range
  std::uint64_t violations_ = 0;
  std::uint64_t waits_ = 0;
  std::uint64_t allocate_calls_ = 0;
  std::uint64_t free_calls_ = 0;
  std::map<DevicePtr, std::uint64_t> reservations_;
  std::map<DevicePtr, Mapping> mappings_;
  std::map<PhysicalHandle, Physical> physical_;
  PhysicalHandle next_handle_ = 1;
  StreamId next_stream_ = 0x5000;
};

}  // namespace memtool::engine
