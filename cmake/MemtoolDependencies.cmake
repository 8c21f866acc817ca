# Third-party dependencies, all from Debian packages (installed by scripts/setup.sh)
# and the CUDA toolkit at /usr/local/cuda.
find_package(fmt 9 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit REQUIRED)   # headers (cuda.h, cupti.h); no GPU needed
if(MEMTOOL_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
if(MEMTOOL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# libunwind is linked statically into libmemtool.so (self-contained preload library).
find_library(MEMTOOL_LIBUNWIND_STATIC NAMES libunwind.a)
find_library(MEMTOOL_LIBUNWIND_X86_64_STATIC NAMES libunwind-x86_64.a)
find_path(MEMTOOL_LIBUNWIND_INCLUDE NAMES libunwind.h)

# memtool_add_test(NAME name SOURCES ... LIBS ... [LABELS ...]): one Catch2 binary, run by CTest
# as one test (Catch2 reports each failing case itself); labelled `unit` plus LABELS.
function(memtool_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE memtool_catch_main ${T_LIBS})
  target_compile_definitions(${T_NAME} PRIVATE
    MEMTOOL_SOURCE_DIR="${PROJECT_SOURCE_DIR}" MEMTOOL_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures")
  memtool_warnings(${T_NAME})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --reporter compact)
  set_tests_properties(${T_NAME} PROPERTIES LABELS "unit;${T_LABELS}" TIMEOUT 600)
endfunction()
