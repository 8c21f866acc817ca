# What check_app.cmake and check_adversarial.cmake share: running a test app with its environment,
# capturing what it prints, and comparing its FAKECUDA_STATS with expected counts. Included by
# both (`include(${CMAKE_CURRENT_LIST_DIR}/app_run.cmake)`), in `cmake -P` script mode.
#
# On inclusion: FAKECUDA_DIR, when given, becomes LD_LIBRARY_PATH so libcuda.so.1 is fakecuda;
# module_args is `--module MODULE` when the test names a fatbin for the apps to load, else empty.

if(DEFINED FAKECUDA_DIR)
  set(ENV{LD_LIBRARY_PATH} "${FAKECUDA_DIR}")
endif()
set(module_args)
if(DEFINED MODULE)
  set(module_args --module ${MODULE})
endif()

# set_defaults(NAME=VALUE…): each NAME the test did not pass (-DNAME=…) gets VALUE.
macro(set_defaults)
  foreach(_default ${ARGN})
    string(REGEX MATCH "^([A-Z_]+)=(.*)$" _ignored "${_default}")
    if(NOT DEFINED ${CMAKE_MATCH_1})
      set(${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
endmacro()

# set_env_pairs(<pairs>): each NAME=VALUE of the list goes into the environment of later runs.
function(set_env_pairs pairs)
  foreach(pair IN LISTS pairs)
    string(REGEX MATCH "^([A-Z_]+)=(.*)$" ignored "${pair}")
    set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
  endforeach()
endfunction()

# run_program(<prefix> <command…>): <prefix>_rc, <prefix>_out, <prefix>_err in the caller's scope.
function(run_program prefix)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 60)
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
  set(${prefix}_out "${out}" PARENT_SCOPE)
  set(${prefix}_err "${err}" PARENT_SCOPE)
endfunction()

# run_ok(<prefix> <command…>): run_program, failing the test on a non-zero exit.
function(run_ok prefix)
  run_program(r ${ARGN})
  if(NOT r_rc STREQUAL "0")
    string(REPLACE ";" " " shown "${ARGN}")
    message(FATAL_ERROR "`${shown}` exited with ${r_rc}\nstdout:\n${r_out}\nstderr:\n${r_err}")
  endif()
  set(${prefix}_out "${r_out}" PARENT_SCOPE)
  set(${prefix}_err "${r_err}" PARENT_SCOPE)
endfunction()

# split_lines(<text> <lines_var>): the lines of a program's output as a list (no empty last one).
function(split_lines text lines_var)
  string(REGEX REPLACE "\n$" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${lines_var} "${lines}" PARENT_SCOPE)
endfunction()

# iteration_lines(<text> <count> <lines_var>): the lines of a run's stdout, failing the test
# unless there are exactly <count> (one per iteration).
function(iteration_lines text count lines_var)
  split_lines("${text}" lines)
  list(LENGTH lines actual)
  if(NOT actual EQUAL count)
    message(FATAL_ERROR "expected ${count} iteration lines, got ${actual}:\n${text}")
  endif()
  set(${lines_var} "${lines}" PARENT_SCOPE)
endfunction()

# run_with_stats(<prefix> <command…>): run_ok with FAKECUDA_STATS=${WORK_DIR}/stats.json;
# <prefix>_out, <prefix>_err and the JSON as <prefix>_stats in the caller's scope.
function(run_with_stats prefix)
  set(stats_file "${WORK_DIR}/stats.json")
  file(REMOVE "${stats_file}")
  set(ENV{FAKECUDA_STATS} "${stats_file}")
  run_ok(r ${ARGN})
  unset(ENV{FAKECUDA_STATS})
  if(NOT EXISTS "${stats_file}")
    message(FATAL_ERROR "FAKECUDA_STATS wrote no ${stats_file}")
  endif()
  file(READ "${stats_file}" stats)
  set(${prefix}_out "${r_out}" PARENT_SCOPE)
  set(${prefix}_err "${r_err}" PARENT_SCOPE)
  set(${prefix}_stats "${stats}" PARENT_SCOPE)
endfunction()

# expect_stats(<stats> <expectations> <source>): each key=value of <expectations> holds in the
# FAKECUDA_STATS JSON (a.b names a nested member); otherwise fails, saying the counts differ from
# <source>, with every differing key.
function(expect_stats stats expectations source)
  set(failures "")
  foreach(pair IN LISTS expectations)
    string(REGEX MATCH "^([^=]+)=(.*)$" ignored "${pair}")
    set(key "${CMAKE_MATCH_1}")
    set(expected "${CMAKE_MATCH_2}")
    string(REPLACE "." ";" path "${key}")  # kernel_launches.matmul: a nested member
    string(JSON actual ERROR_VARIABLE json_error GET "${stats}" ${path})
    if(json_error)
      string(APPEND failures "  ${key}: missing (${json_error})\n")
    elseif(NOT actual EQUAL expected)
      string(APPEND failures "  ${key}: ${actual}, expected ${expected}\n")
    endif()
  endforeach()
  if(failures)
    message(FATAL_ERROR "FAKECUDA_STATS differs from ${source}:\n${failures}${stats}")
  endif()
endfunction()

# run_twice(<prefix> <what> <command…>): run_ok twice, failing with "<what> differ" unless both
# print the same stdout; <prefix>_out, <prefix>_err (first run) and <prefix>_second_err.
function(run_twice prefix what)
  run_ok(first ${ARGN})
  run_ok(second ${ARGN})
  if(NOT first_out STREQUAL second_out)
    message(FATAL_ERROR "${what} differ:\n${first_out}\n---\n${second_out}")
  endif()
  set(${prefix}_out "${first_out}" PARENT_SCOPE)
  set(${prefix}_err "${first_err}" PARENT_SCOPE)
  set(${prefix}_second_err "${second_err}" PARENT_SCOPE)
endfunction()
