// PointerTables (interpose/src/pointer_tables.hpp): what a launch touches and may reach through
// pointer tables in device memory — uploaded, copied, built by kernels, left where memtool
// cannot follow — for the swapper, which must not move a buffer under a kernel that reaches it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "memtool/engine/buffer_index.hpp"
#include "pointer_tables.hpp"

using memtool::engine::BufferIndex;
using memtool::engine::LiveBuffer;
using memtool::interpose::PointerTables;
using memtool::trace::MemoryKind;

namespace {

constexpr std::uint64_t kTableBytes = 64 * 1024;

struct Rig {
  BufferIndex index;
  PointerTables tables{kTableBytes};

  std::uint64_t alloc(std::uint64_t base, std::uint64_t size, MemoryKind kind = MemoryKind::device) {
    index.insert(LiveBuffer{base, size, kind, 0, 0});
    tables.on_alloc(base);
    return base;
  }
  void free(std::uint64_t base) {
    (void)index.erase(base);
    tables.on_free(base);
  }
  void upload(std::uint64_t dst, const std::vector<std::uint64_t>& words) {
    tables.on_upload(index, dst, reinterpret_cast<const unsigned char*>(words.data()), words.size() * 8);
  }
  struct Launch {
    std::vector<std::uint64_t> touched, reached, escaped;
    bool all = false;
  };
  Launch launch(std::vector<std::uint64_t> args) {
    Launch l;
    l.touched = std::move(args);
    l.all = tables.on_launch(index, l.touched, l.reached, l.escaped);
    return l;
  }
};

bool has(const std::vector<std::uint64_t>& v, std::uint64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

constexpr std::uint64_t MiB = 1 << 20;
constexpr std::uint64_t A = 0x7f0000000000;
constexpr std::uint64_t B = A + 8 * MiB;
constexpr std::uint64_t C = A + 16 * MiB;
constexpr std::uint64_t T = A + 32 * MiB;   // a small table
constexpr std::uint64_t T2 = A + 34 * MiB;  // another

}  // namespace

TEST_CASE("pointer tables: a launch touching an uploaded table touches what it holds, interior pointers too",
          "[interpose][tables]") {
  Rig rig;
  rig.alloc(A, 4 * MiB);
  rig.alloc(B, 4 * MiB);
  rig.alloc(C, 4 * MiB);
  rig.alloc(T, 256);
  rig.upload(T, {A, B + 4096, 12345, C + 4 * MiB - 8});  // interior pointers; a number that is none
  const auto l = rig.launch({T});
  CHECK(l.touched.size() == 4);
  CHECK((has(l.touched, A) && has(l.touched, B) && has(l.touched, C)));
  CHECK(l.reached.empty());
  CHECK_FALSE(l.all);
  // A launch that does not touch the table reaches nothing through it.
  const auto other = rig.launch({A});
  CHECK(other.touched == std::vector<std::uint64_t>{A});
}

TEST_CASE("pointer tables: a whole upload replaces the table, a partial one adds to it", "[interpose][tables]") {
  Rig rig;
  rig.alloc(A, 4 * MiB);
  rig.alloc(B, 4 * MiB);
  rig.alloc(C, 4 * MiB);
  rig.alloc(T, 16);
  rig.upload(T, {A, B});
  rig.upload(T, {C, 0});  // refreshed: the table now holds C only
  auto l = rig.launch({T});
  CHECK(has(l.touched, C));
  CHECK_FALSE(has(l.touched, A));
  CHECK_FALSE(has(l.touched, B));
  // An entry rewritten: both may be there now.
  const std::uint64_t entry = A;
  rig.tables.on_upload(rig.index, T + 8, reinterpret_cast<const unsigned char*>(&entry), 8);
  l = rig.launch({T});
  CHECK((has(l.touched, A) && has(l.touched, C)));
  // A whole memset empties it.
  rig.tables.on_memset(rig.index, T, 16);
  l = rig.launch({T});
  CHECK(l.touched == std::vector<std::uint64_t>{T});
}

TEST_CASE("pointer tables: a freed pointee is forgotten, and a new buffer at its address is not it",
          "[interpose][tables]") {
  Rig rig;
  rig.alloc(A, 4 * MiB);
  rig.alloc(T, 8);
  rig.upload(T, {A});
  rig.free(A);
  rig.alloc(A, 4 * MiB);  // the same address, another buffer
  const auto l = rig.launch({T});
  CHECK(l.touched == std::vector<std::uint64_t>{T});
}

TEST_CASE("pointer tables: tables of tables, copies of tables, a table in a large buffer", "[interpose][tables]") {
  Rig rig;
  rig.alloc(A, 4 * MiB);
  rig.alloc(B, 4 * MiB);
  rig.alloc(T, 8);
  rig.alloc(T2, 8);
  rig.alloc(C, 4 * MiB);  // a large buffer holding a table at an offset
  rig.upload(T, {A});
  rig.upload(T2, {T});
  auto l = rig.launch({T2});
  CHECK((has(l.touched, T) && has(l.touched, A)));
  rig.tables.on_device_copy(rig.index, C + 4096, T, 8);  // a device copy carries what it held
  l = rig.launch({C});
  CHECK(has(l.touched, A));
  rig.upload(C + 8192, {B});  // uploaded into the middle of the large buffer: added
  l = rig.launch({C});
  CHECK((has(l.touched, A) && has(l.touched, B)));
}

TEST_CASE("pointer tables: a table a kernel may have written reaches what that kernel reached", "[interpose][tables]") {
  Rig rig;
  rig.alloc(A, 4 * MiB);
  rig.alloc(B, 4 * MiB);
  rig.alloc(C, 4 * MiB);
  rig.alloc(T, 256);
  // A builder kernel gets the table and the buffers: it may write their addresses into it.
  (void)rig.launch({T, A, B});
  auto l = rig.launch({T, C});
  CHECK((has(l.reached, A) && has(l.reached, B)));
  CHECK_FALSE(has(l.touched, A));
  CHECK_FALSE(l.all);
  // A large buffer written by a kernel is not followed (docs/swapping.md says so).
  rig.alloc(T2, 2 * MiB);
  (void)rig.launch({T2, A});
  l = rig.launch({T2});
  CHECK(l.reached.empty());
  // An upload over the whole table replaces what the kernels may have left.
  rig.upload(T, std::vector<std::uint64_t>(32, 0));
  l = rig.launch({T});
  CHECK(l.reached.empty());
}

TEST_CASE("pointer tables: a small buffer that may hold too many addresses may reach anything", "[interpose][tables]") {
  Rig rig;
  rig.alloc(T, 256);
  for (std::uint64_t i = 0; i <= PointerTables::kMaxMaybe; ++i) {
    const std::uint64_t base = A + i * 4096;
    rig.alloc(base, 4096);
    (void)rig.launch({T, base});
  }
  CHECK(rig.launch({T}).all);
}

TEST_CASE("pointer tables: host-written memory and launches without a pointer may reach anything",
          "[interpose][tables]") {
  Rig rig;
  rig.alloc(A, 4 * MiB);
  rig.alloc(B, 4096, MemoryKind::pinned_host);
  rig.alloc(T, 8);
  CHECK(rig.launch({}).all);   // no pointer at all: it can only read a device global
  CHECK(rig.launch({B}).all);  // pinned memory the host writes without a call
  rig.upload(T, {B});          // a table pointing there
  CHECK(rig.launch({T}).all);
  CHECK_FALSE(rig.launch({A}).all);
  rig.tables.on_unread_upload(rig.index, A);  // a pitched upload memtool did not read
  CHECK(rig.launch({A}).all);
}

TEST_CASE("pointer tables: addresses uploaded where memtool cannot follow escape, with what they hold",
          "[interpose][tables]") {
  Rig rig;
  rig.alloc(A, 4 * MiB);
  rig.alloc(B, 4 * MiB);
  rig.alloc(T, 8);
  rig.upload(T, {B});
  const std::uint64_t global = 0x1000;  // not a tracked buffer: a module's global
  rig.upload(global, {A, T});
  auto l = rig.launch({A});
  CHECK((has(l.escaped, A) && has(l.escaped, T) && has(l.escaped, B)));
  l = rig.launch({A});
  CHECK(l.escaped.empty());  // told once
  // A device copy out of a buffer memtool cannot read makes its destination unknown.
  rig.tables.on_device_copy(rig.index, T, global, 8);
  CHECK(rig.launch({T}).all);
}
