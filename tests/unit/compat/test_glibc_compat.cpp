// The glibc shims' fallbacks give what the real functions give (both exist on the development
// machine, so the fallbacks are compared with the real thing directly).
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstring>
#include <set>

#include "glibc_compat.hpp"

namespace {
int a_function_in_this_program() { return 42; }
}  // namespace

TEST_CASE("find_object answers as _dl_find_object does", "[compat]") {
  using Real = int (*)(void*, dl_find_object*);
  const auto real = reinterpret_cast<Real>(dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35"));
  if (real == nullptr) {
    WARN("this glibc has no _dl_find_object to compare with");
    return;
  }
  void* in_program = reinterpret_cast<void*>(&a_function_in_this_program);
  void* in_libc = dlsym(RTLD_DEFAULT, "strlen");
  REQUIRE(in_libc != nullptr);
  for (void* address : {in_program, in_libc}) {
    dl_find_object expected{};
    dl_find_object found{};
    REQUIRE(real(address, &expected) == 0);
    REQUIRE(memtool::compat::find_object(address, &found) == 0);
    CHECK(found.dlfo_map_start == expected.dlfo_map_start);
    CHECK(found.dlfo_map_end == expected.dlfo_map_end);
    CHECK(found.dlfo_eh_frame == expected.dlfo_eh_frame);
    CHECK(found.dlfo_link_map == expected.dlfo_link_map);
  }
  dl_find_object none{};
  CHECK(memtool::compat::find_object(reinterpret_cast<void*>(16), &none) == -1);
  CHECK(real(reinterpret_cast<void*>(16), &none) == -1);
  CHECK(a_function_in_this_program() == 42);
}

TEST_CASE("random_u32 draws different values", "[compat]") {
  std::set<std::uint32_t> values;
  for (int i = 0; i < 16; ++i) values.insert(memtool::compat::random_u32());
  CHECK(values.size() > 8);  // 16 draws of 32 bits: a repeat is a 1-in-10^7 event, eight are impossible
}
