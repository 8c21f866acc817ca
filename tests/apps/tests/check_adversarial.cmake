# Checks one property of adversarial_train; run by CTest as `cmake -DMODE=… -DAPP=… -P check_adversarial.cmake`.
#
# The app prints exactly one line per iteration, "iter I checksum 0xC", and nothing else on stdout;
# a buffer that lost its pattern gives "CORRUPTED iter I buffer B offset O thread T" on stderr and
# exit status 3. The modes (ARGS: extra options a,b,…; THREADS, PERIOD: --threads, --shape-period):
#   repeat   two runs print identical, well-formed lines and nothing on stderr; SEED+1 changes every
#            line; with THREADS > 1 the lines differ from a one-thread run (every thread counts)
#   stats    FAKECUDA_STATS equals the counts that follow from the schedule documented in
#            adversarial/schedule.hpp, recomputed here from ITERATIONS, PERIOD and THREADS
#            (ITERATIONS a multiple of 4, so each thread makes exactly 2 extras per 4 iterations)
#   corrupt  --self-test-corrupt exits 3 with exactly the CORRUPTED line of the damaged buffer
#            (iteration 0, buffer 1, word 37 = byte 148, thread 0) and prints no line for iteration 0
#   preload  the same lines with LD_PRELOAD=PRELOAD (plus ENV_VARS, NAME=VALUE;…) as without; with
#            TRACE_GLOB, a file matching it must have been written
#   gpu      on a real GPU (no FAKECUDA_DIR, MODULE = the fatbin): repeat and corrupt, in short;
#            prints "SKIP: …" without a driver or device
# FAKECUDA_DIR, when given, is put first in LD_LIBRARY_PATH so libcuda.so.1 is fakecuda.
# Running the app and comparing its stats: app_run.cmake.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/app_run.cmake)

set_defaults(ITERATIONS=8 SEED=1 THREADS=1 PERIOD=5)
string(REPLACE "," ";" extra_args "${ARGS}")
set(common_args --iterations ${ITERATIONS} --threads ${THREADS} --shape-period ${PERIOD} ${extra_args}
                ${module_args})

# parse_lines(<text> <first> <count> <checksums_var>): every stdout line is an iteration line,
# numbered first…first+count-1.
function(parse_lines text first count checksums_var)
  iteration_lines("${text}" ${count} lines)
  set(checksums)
  set(expected ${first})
  foreach(line IN LISTS lines)
    if(count EQUAL 0)
      break()
    endif()
    if(NOT line MATCHES "^iter ([0-9]+) checksum (0x[0-9a-f]+)$")
      message(FATAL_ERROR "malformed iteration line: '${line}'")
    endif()
    string(LENGTH "${CMAKE_MATCH_2}" digits)
    if(NOT CMAKE_MATCH_1 EQUAL expected OR NOT digits EQUAL 18)
      message(FATAL_ERROR "line '${line}' where iteration ${expected} (16 hex digits) was expected")
    endif()
    list(APPEND checksums ${CMAKE_MATCH_2})
    math(EXPR expected "${expected} + 1")
  endforeach()
  set(${checksums_var} "${checksums}" PARENT_SCOPE)
endfunction()

# expect_all_differ(<a> <b> <why>): the two checksum lists differ at every iteration.
function(expect_all_differ a b why)
  list(LENGTH a count)
  math(EXPR last "${count} - 1")
  foreach(i RANGE 0 ${last})
    list(GET a ${i} x)
    list(GET b ${i} y)
    if(x STREQUAL y)
      message(FATAL_ERROR "${why}: same checksum ${x} at iteration ${i}")
    endif()
  endforeach()
endfunction()

if(MODE STREQUAL "repeat")
  run_twice(runs "two runs" ${APP} ${common_args} --seed ${SEED})
  parse_lines("${runs_out}" 0 ${ITERATIONS} checksums)
  if(NOT runs_err STREQUAL "" OR NOT runs_second_err STREQUAL "")
    message(FATAL_ERROR "unexpected stderr:\n${runs_err}\n---\n${runs_second_err}")
  endif()
  math(EXPR other_seed "${SEED} + 1")
  run_ok(other ${APP} ${common_args} --seed ${other_seed})
  parse_lines("${other_out}" 0 ${ITERATIONS} other_checksums)
  expect_all_differ("${checksums}" "${other_checksums}" "seeds ${SEED} and ${other_seed}")
  if(THREADS GREATER 1)
    run_ok(single ${APP} --iterations ${ITERATIONS} --threads 1 --shape-period ${PERIOD} --seed ${SEED} ${extra_args})
    parse_lines("${single_out}" 0 ${ITERATIONS} single_checksums)
    expect_all_differ("${checksums}" "${single_checksums}" "${THREADS} threads and 1 thread")
  endif()
  message(STATUS "${ITERATIONS} identical iterations with ${THREADS} thread(s)")

elseif(MODE STREQUAL "stats")
  math(EXPR windows "${ITERATIONS} / 4")
  math(EXPR remainder "${ITERATIONS} % 4")
  if(NOT remainder EQUAL 0)
    message(FATAL_ERROR "stats mode wants ITERATIONS a multiple of 4, got ${ITERATIONS}")
  endif()
  # Per thread and iteration: evaluation (I % 7 == 6) 6 synchronous buffers; otherwise shape
  # (I / PERIOD) % 3 with 12, 16 or 8 buffers, half of them (roles 1 and 3) stream-ordered.
  set(shape_buffers 12 16 8)
  set(buffers 0)
  set(async 0)
  math(EXPR last "${ITERATIONS} - 1")
  foreach(i RANGE 0 ${last})
    math(EXPR evaluation "${i} % 7")
    if(evaluation EQUAL 6)
      math(EXPR buffers "${buffers} + 6")
    else()
      math(EXPR shape "(${i} / ${PERIOD}) % 3")
      list(GET shape_buffers ${shape} n)
      math(EXPR buffers "${buffers} + ${n}")
      math(EXPR async "${async} + ${n} / 2")
    endif()
  endforeach()
  math(EXPR buffers "${buffers} + 2 * ${windows}")  # extras: stream-ordered
  math(EXPR async "${async} + 2 * ${windows}")
  # Persistent per thread: the digest (64 words) and verdict (128 ints) buffers; each iteration
  # reads both back, the final drain the verdicts once more.
  math(EXPR EXPECT_allocations "${THREADS} * (2 + ${buffers})")
  math(EXPR EXPECT_async_allocations "${THREADS} * ${async}")
  math(EXPR EXPECT_launches "${THREADS} * 3 * ${buffers}")
  math(EXPR EXPECT_per_kernel "${THREADS} * ${buffers}")
  math(EXPR EXPECT_copies "${THREADS} * (2 * ${ITERATIONS} + 1)")
  math(EXPR EXPECT_bytes_d2h "${THREADS} * (${ITERATIONS} * (64 + 128) * 4 + 128 * 4)")
  math(EXPR EXPECT_event_records "${THREADS} * 3 * ${ITERATIONS}")
  math(EXPR EXPECT_stream_creates "${THREADS} * 2")
  set(expect
    allocations=${EXPECT_allocations} frees=${EXPECT_allocations}
    async_allocations=${EXPECT_async_allocations} async_frees=${EXPECT_async_allocations}
    launches=${EXPECT_launches} kernel_launches.pattern_fill=${EXPECT_per_kernel}
    kernel_launches.pattern_digest=${EXPECT_per_kernel} kernel_launches.pattern_verify=${EXPECT_per_kernel}
    copies=${EXPECT_copies} bytes_d2h=${EXPECT_bytes_d2h} bytes_h2d=0 host_allocations=0
    event_records=${EXPECT_event_records} stream_creates=${EXPECT_stream_creates} bytes_in_use=0)

  run_with_stats(run ${APP} ${common_args} --seed ${SEED})
  parse_lines("${run_out}" 0 ${ITERATIONS} checksums)
  expect_stats("${run_stats}" "${expect}" "the schedule")
  message(STATUS "stats as expected: ${expect}")

elseif(MODE STREQUAL "corrupt")
  run_program(run ${APP} ${common_args} --seed ${SEED} --self-test-corrupt)
  if(NOT run_rc STREQUAL "3")
    message(FATAL_ERROR "--self-test-corrupt: exit status ${run_rc}, expected 3\nstdout:\n${run_out}\nstderr:\n${run_err}")
  endif()
  if(NOT run_err STREQUAL "CORRUPTED iter 0 buffer 1 offset 148 thread 0\n")
    message(FATAL_ERROR "--self-test-corrupt: expected exactly the damaged buffer's CORRUPTED line, got:\n${run_err}")
  endif()
  if(NOT run_out STREQUAL "")
    message(FATAL_ERROR "a corrupted run printed iteration lines:\n${run_out}")
  endif()

elseif(MODE STREQUAL "preload")
  if(NOT EXISTS "${PRELOAD}")
    message(FATAL_ERROR "no preload library ${PRELOAD}")
  endif()
  if(DEFINED TRACE_GLOB)
    file(GLOB old_traces "${TRACE_GLOB}")
    if(old_traces)
      file(REMOVE ${old_traces})
    endif()
  endif()
  run_ok(plain ${APP} ${common_args} --seed ${SEED})
  parse_lines("${plain_out}" 0 ${ITERATIONS} checksums)
  set(ENV{LD_PRELOAD} "${PRELOAD}")
  set_env_pairs("${ENV_VARS}")
  run_ok(preloaded ${APP} ${common_args} --seed ${SEED})
  unset(ENV{LD_PRELOAD})
  if(NOT preloaded_out STREQUAL plain_out)
    message(FATAL_ERROR "LD_PRELOAD=${PRELOAD} ${ENV_VARS} changes the results:\n${preloaded_out}\n---\n${plain_out}\nstderr:\n${preloaded_err}")
  endif()
  if(preloaded_err MATCHES "cannot be preloaded")
    message(FATAL_ERROR "the loader did not preload ${PRELOAD}:\n${preloaded_err}")
  endif()
  if(DEFINED TRACE_GLOB)
    file(GLOB traces "${TRACE_GLOB}")
    if(NOT traces)
      message(FATAL_ERROR "no trace matching ${TRACE_GLOB} was written")
    endif()
  endif()
  message(STATUS "identical under ${PRELOAD} ${ENV_VARS}")

elseif(MODE STREQUAL "gpu")
  if(NOT EXISTS "${MODULE}")
    message(STATUS "SKIP: no ${MODULE} (nvcc was not available at build time)")
    return()
  endif()
  run_program(probe ${APP} ${common_args} --seed ${SEED})
  if(probe_err MATCHES "libcuda\\.so\\.1|CUDA_ERROR_(NO_DEVICE|NOT_INITIALIZED)")
    message(STATUS "SKIP: no usable GPU driver: ${probe_err}")
    return()
  endif()
  run_twice(first "two GPU runs" ${APP} ${common_args} --seed ${SEED})
  parse_lines("${first_out}" 0 ${ITERATIONS} checksums)
  run_program(corrupt ${APP} ${common_args} --seed ${SEED} --self-test-corrupt)
  if(NOT corrupt_rc STREQUAL "3" OR NOT corrupt_err MATCHES "^CORRUPTED iter 0 buffer 1 offset 148 thread 0\n$")
    message(FATAL_ERROR "GPU: the self-test corruption was not caught (${corrupt_rc}):\n${corrupt_err}")
  endif()
  message(STATUS "GPU: ${ITERATIONS} deterministic iterations with ${THREADS} threads, corruption caught")

else()
  message(FATAL_ERROR "check_adversarial.cmake: unknown MODE '${MODE}'")
endif()
