// Debug assertions of the engine's invariants (DESIGN.md §2: 1, no hand-out overlaps a live
// buffer; 2, reuse across streams waits for the earlier streams' work). Compiled in when the
// engine is built with MEMTOOL_ASSERTIONS (the CMake option of that name: CI's test build and
// the sanitizer builds); in a user's build they are nothing and the engine's own checks fall
// back as before. A failed assertion writes one line to stderr with write(2) — no allocation,
// since it may fire inside an allocation hook — and aborts: in a test build a broken invariant
// stops the run where it broke, not where the corrupted bytes are read.
#pragma once

#include <unistd.h>

#include <cstdlib>

namespace memtool::engine::detail {

[[noreturn]] inline void assertion_failed(const char* condition, const char* what, const char* file, int line) {
  char buffer[1024];
  std::size_t used = 0;
  const auto append = [&](const char* text) {
    for (; *text != '\0' && used < sizeof buffer; ++text) buffer[used++] = *text;
  };
  char number[16];
  int digits = 0;
  for (unsigned v = line > 0 ? static_cast<unsigned>(line) : 0u; digits == 0 || v != 0; v /= 10)
    number[digits++] = static_cast<char>('0' + v % 10);
  char line_text[16];
  for (int i = 0; i < digits; ++i) line_text[i] = number[digits - 1 - i];
  line_text[digits] = '\0';
  append("memtool: assertion failed: ");
  append(what);
  append(" (");
  append(condition);
  append(") at ");
  append(file);
  append(":");
  append(line_text);
  append("\n");
  ssize_t ignored = ::write(STDERR_FILENO, buffer, used);
  (void)ignored;
  std::abort();
}

}  // namespace memtool::engine::detail

#if defined(MEMTOOL_ASSERTIONS)
#define MEMTOOL_ASSERT(condition, what) \
  ((condition) ? (void)0 : ::memtool::engine::detail::assertion_failed(#condition, what, __FILE__, __LINE__))
#else
// Not evaluated (sizeof), so an assertion costs nothing and has no side effect in a user's build.
#define MEMTOOL_ASSERT(condition, what) ((void)sizeof(!(condition)))
#endif
