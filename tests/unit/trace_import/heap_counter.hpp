// Counts the heap this test program uses (heap_counter.cpp replaces the global operator new
// and delete), so tests can bound the memory an importer takes — not its speed — exactly and
// deterministically.
#pragma once

#include <cstddef>

namespace memtool::trace::testing {

// Bytes allocated through operator new and not yet freed.
std::size_t heap_in_use();
// The highest heap_in_use() since the last reset_heap_peak().
std::size_t heap_peak();
void reset_heap_peak();

}  // namespace memtool::trace::testing
