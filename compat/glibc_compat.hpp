// The fallbacks of glibc_compat.cpp, callable on their own (for tests: on the development
// machine the real functions exist, so the fallbacks would otherwise never run).
#pragma once

#include <dlfcn.h>

#include <cstdint>

namespace memtool::compat {

// arc4random() without arc4random: getrandom(2), else /dev/urandom.
std::uint32_t random_u32() noexcept;

// _dl_find_object() without _dl_find_object: the loaded object whose PT_LOAD segments contain
// `address`, found with dl_iterate_phdr (map bounds, link map, PT_GNU_EH_FRAME). 0 on
// success, -1 when no object contains `address`.
int find_object(void* address, dl_find_object* result) noexcept;

}  // namespace memtool::compat
