# Link-time optimisation of libmemtool.so. A recorded driver call runs through the exported
# wrapper, its handler, the recorder, the trace writer and the signature functions: five
# translation units in four static libraries. Optimised across them at link time, the cost a
# recorded allocation or free adds drops by about a fifth (bench/RESULTS.md).
#
# The static libraries on that path are compiled with *fat* LTO objects: tests, tools and
# benchmarks link their ordinary machine code exactly as before, and only libmemtool.so's
# link runs the optimiser. GCC only; off in sanitizer and fuzzing builds, whose per-file
# instrumentation choices (resolver.cpp is never instrumented) must not be inlined across.
option(MEMTOOL_LTO "Link-time optimisation of libmemtool.so (GCC)" ON)

set(memtool_lto_enabled OFF)
if(MEMTOOL_LTO AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT MEMTOOL_BUILD_FUZZ
   AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  set(memtool_lto_enabled ON)
endif()

# A static library whose code libmemtool.so links.
function(memtool_lto_objects target)
  if(memtool_lto_enabled)
    target_compile_options(${target} PRIVATE -flto=auto -ffat-lto-objects)
  endif()
endfunction()

# The shared library itself: its link optimises across every LTO object it pulls in.
function(memtool_lto_link target)
  if(memtool_lto_enabled)
    target_compile_options(${target} PRIVATE -flto=auto)
    target_link_options(${target} PRIVATE -flto=auto)
  endif()
endfunction()
