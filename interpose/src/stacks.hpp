// Allocation call stacks for MEMTOOL_STACKS=1: raw instruction pointers (the unwinder of the
// statically linked libgcc_eh) and the mapped objects they fall into, symbolised offline by `memtool report`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "memtool/trace/event.hpp"

namespace memtool::interpose::detail {

// Fills `ips` with the return addresses of the calling thread, innermost first, skipping
// `skip` frames (the recorder's own). Returns how many were written.
std::size_t capture_stack(std::uint64_t* ips, std::size_t capacity, std::size_t skip) noexcept;

// How many objects the loader has loaded so far (changes when a library is dlopen'ed).
unsigned long long loaded_object_count() noexcept;

// Calls `visit` for each executable segment of each loaded object. `path` is the object's
// file ("" never: the main program is named through /proc/self/exe).
void for_each_code_segment(const std::function<void(std::uint64_t start, std::uint64_t end, std::uint64_t file_offset,
                                                    const char* path)>& visit);

}  // namespace memtool::interpose::detail
