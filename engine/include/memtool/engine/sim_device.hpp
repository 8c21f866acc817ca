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
// Managed memory follows the driver's documentation as tests/fakecuda models it: residency per
// 64 KiB chunk, populated nowhere until first touched and then where the touch happens; a kernel
// (access) pulls chunks onto the device unless the host is their preferred location (cuMemAdvise)
// and they are there, in which case the device maps them across the link; a copy populates the
// chunks never touched and moves none; a prefetch moves chunks on its stream, ordered like a
// copy, and the device bytes it moves to the host stay counted until the host has seen its
// stream get there; room on the device is made by evicting other managed allocations' chunks to
// the host (cuMemAlloc memory is never evicted; managed chunks that find no room are reached on
// the host). Device-resident chunks count towards the capacity and the peak. The bytes live in
// one place whatever the residency: fill and verify (the host's view) move nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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

  // Managed memory (see above). free() frees it too, at once, as cuMemFree does.
  Status allocate_managed(std::uint64_t bytes, DevicePtr* out) override;
  Status advise(DevicePtr ptr, std::uint64_t bytes, Residence preferred) override;
  Status prefetch(DevicePtr ptr, std::uint64_t bytes, Residence to, StreamId stream) override;

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
  // Managed bytes that changed side (first touches, which populate, are not migrations).
  std::uint64_t bytes_migrated_to_device() const;
  std::uint64_t bytes_migrated_to_host() const;
  // Bytes device accesses reached on the host without migrating them (host-preferred chunks).
  std::uint64_t bytes_accessed_on_host() const;

 private:
  using Clock = std::map<StreamId, std::uint64_t>;
  enum class Where : std::uint8_t { unpopulated, host, device };
  enum class Preferred : std::uint8_t { none, host, device };
  struct Leaving {  // a chunk prefetched to the host whose device bytes go when this is drained
    StreamId stream;
    std::uint64_t tick;
  };
  struct Managed {
    std::vector<Where> where;  // per kManagedChunk
    std::vector<Preferred> preferred;
    std::map<std::uint64_t, Leaving> leaving;  // by chunk index; those chunks are on the host
  };
  struct Block {
    std::uint64_t size = 0;
    std::uint64_t counted = 0;         // towards live bytes and the capacity
    std::vector<std::uint8_t> data;    // `size` bytes once touched, empty before
    std::unique_ptr<Managed> managed;  // managed memory: its residency
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
  // Managed memory (mutex held). The managed block holding [ptr, ptr + bytes), or null.
  Block* managed_block(DevicePtr ptr, std::uint64_t bytes, DevicePtr* base);
  // Chunk `c` of `block` onto the device (a touch or a prefetch): false if no room could be made.
  bool chunk_to_device(Block& block, std::uint64_t c);
  void chunk_to_host(Block& block, std::uint64_t c, const Leaving* leaving);
  // Device-resident managed chunks of blocks other than `keep` sent to the host until `wanted`
  // bytes are free; whether they are.
  bool make_room(std::uint64_t wanted, const Block* keep);
  // The touches a device access or a copy makes to managed memory in [ptr, ptr + bytes).
  void touch_managed(DevicePtr ptr, std::uint64_t bytes, bool map_host_preferred);
  void release_drained();  // leaving chunks whose prefetch the host has seen done

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
  std::uint64_t migrated_to_device_ = 0;
  std::uint64_t migrated_to_host_ = 0;
  std::uint64_t accessed_on_host_ = 0;
  std::uint64_t leaving_chunks_ = 0;  // over all managed blocks
  std::vector<DevicePtr> managed_;    // the managed blocks, in allocation order (eviction order)
  std::map<DevicePtr, std::uint64_t> reservations_;
  std::map<DevicePtr, Mapping> mappings_;
  std::map<PhysicalHandle, Physical> physical_;
  PhysicalHandle next_handle_ = 1;
  StreamId next_stream_ = 0x5000;
};

}  // namespace memtool::engine
