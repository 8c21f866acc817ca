// PointerTables: which buffers hold the addresses of which, for the swapper (DESIGN.md §5, §9
// "buffers reached indirectly"). A grouped GEMM, NCCL's kernels or a fused optimizer get a table
// of pointers in device memory and only the table as an argument: argument scanning sees the
// table, never what it points to, and a swapper that moves those buffers under the kernel
// corrupts them (issue 33). What memtool can know, it keeps here:
//  - definite: the addresses an upload's host bytes held (read after the copy succeeded: the
//    driver checked the pointer), or a device-to-device copy of such a buffer. A launch that
//    touches the table touches them, transitively (tables of tables).
//  - maybe: a kernel may store any address it reaches into a small buffer it touches (a table a
//    kernel builds, as a fused optimizer builds its list on the device). A launch touching that
//    buffer may reach them: they must not move under it, though it may not use them at all.
//    Only buffers of at most `table_bytes`: in bigger ones such stores are not followed.
//  - reaches all: a launch may reach any buffer when it reads memory whose contents memtool
//    cannot list (pinned or managed memory the host writes directly, an upload it could not
//    read) or has no pointer to any buffer at all (it can only reach what an earlier launch left
//    in a device global).
//  - escaped: addresses uploaded or copied into device memory memtool does not track (a module's
//    global): any later launch may reach those buffers, for good. Handed to the next launch.
// Not thread-safe: the recorder's emit lock serialises every call, as for its BufferIndex.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memtool/engine/buffer_index.hpp"

namespace memtool::interpose {

class PointerTables {
 public:
  explicit PointerTables(std::uint64_t table_bytes) : table_bytes_(table_bytes) {}

  void on_alloc(std::uint64_t base);
  void on_free(std::uint64_t base);
  // `bytes` bytes were copied from host memory `source` (still readable) to device address `dst`.
  void on_upload(const engine::BufferIndex& index, std::uint64_t dst, const unsigned char* source, std::uint64_t bytes);
  // An upload to `dst` whose host bytes memtool does not read (a pitched 2D/3D copy).
  void on_unread_upload(const engine::BufferIndex& index, std::uint64_t dst);
  void on_device_copy(const engine::BufferIndex& index, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes);
  void on_memset(const engine::BufferIndex& index, std::uint64_t dst, std::uint64_t bytes);

  // A launch whose arguments point into `touched` (bases): appends to `touched` what their
  // tables hold, to `reached` what they may hold, to `escaped` the buffers that escaped since
  // the last launch; true when it may reach any buffer.
  bool on_launch(const engine::BufferIndex& index, std::vector<std::uint64_t>& touched,
                 std::vector<std::uint64_t>& reached, std::vector<std::uint64_t>& escaped);

  // Most addresses followed in one small buffer a kernel may have written; past it, the buffer
  // may reach anything (a bound on the work of a launch that touches it).
  static constexpr std::size_t kMaxMaybe = 1024;

 private:
  // An address held: the buffer at `base` when it was written (a later buffer at the same base
  // is another one).
  struct Ref {
    std::uint64_t base = 0;
    std::uint64_t serial = 0;
  };
  struct Contents {
    std::vector<Ref> definite;
    std::vector<Ref> maybe;
    bool unknown = false;  // may hold addresses memtool cannot list
  };

  [[nodiscard]] bool live(const Ref& r) const;
  [[nodiscard]] Ref ref_of(std::uint64_t base) const;
  static bool host_visible(const engine::LiveBuffer& buffer);
  // Writes what `bytes` bytes at `dst` now hold into the buffer there (replacing what it held
  // when they cover it), or lets them escape when memtool does not track `dst`.
  void store(const engine::BufferIndex& index, std::uint64_t dst, std::uint64_t bytes, const std::vector<Ref>& definite,
             const std::vector<Ref>& maybe, bool unknown);
  void escape(const std::vector<Ref>& refs);

  const std::uint64_t table_bytes_;
  std::unordered_map<std::uint64_t, std::uint64_t> serials_;  // base -> serial of the buffer there
  std::uint64_t next_serial_ = 1;
  std::unordered_map<std::uint64_t, Contents> contents_;  // by the holding buffer's base
  std::vector<std::uint64_t> escaped_;                    // since the last launch
  bool all_escaped_ = false;                              // addresses memtool cannot list went where it cannot follow
  // Scratch, kept so that a launch allocates nothing once they have grown.
  std::unordered_set<std::uint64_t> seen_;  // on_launch: what it touches or reaches
  std::vector<std::uint64_t> maybe_;        // on_launch: what its tables may hold
  std::unordered_set<std::uint64_t> held_;  // on_launch: what one small buffer may hold
  std::vector<Ref> found_;                  // on_upload: the addresses read
};

}  // namespace memtool::interpose
