# Runs a framework-shaped test program (tests/apps/frameworks) plain on fakecuda, then under
# libmemtool.so in every strategy: record, pool, swap with explicit copies and swap with UVM (at
# BUDGET). Each run must exit 0 (the programs stop at the first failing driver call) and print
# exactly what the plain run printed. `cmake -P`, with APP, ARGS (a ;-list), FAKECUDA_DIR,
# PRELOAD, WORK_DIR, BUDGET and optionally ENV (NAME=VALUE;... for every run) and REFUSED
# (case names where memtool documents a refusal: that run must fail, its stderr matching
# REFUSED_MATCH, so the test notices when the limitation goes).
cmake_minimum_required(VERSION 3.18)
set(ENV{LD_LIBRARY_PATH} "${FAKECUDA_DIR}")
foreach(pair IN LISTS ENV)
  string(REGEX MATCH "^([A-Z_0-9]+)=(.*)$" ignored "${pair}")
  set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
endforeach()

function(run_case name)
  execute_process(COMMAND ${APP} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 120 WORKING_DIRECTORY ${WORK_DIR})
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${name}: exited with ${rc}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  set(${name}_out "${out}" PARENT_SCOPE)
  set(${name}_err "${err}" PARENT_SCOPE)
endfunction()

run_case(plain)
if(plain_out STREQUAL "")
  message(FATAL_ERROR "the plain run printed nothing")
endif()
set(ENV{LD_PRELOAD} "${PRELOAD}")
set(ENV{MEMTOOL_POOL_SYNC_PLANNING} "1")
set(cases "record|record|-" "pool|pool|-" "swap_explicit|swap|explicit" "swap_uvm|swap|uvm")
foreach(c IN LISTS cases)
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 name)
  list(GET parts 1 strategy)
  list(GET parts 2 mode)
  set(ENV{MEMTOOL_STRATEGY} "${strategy}")
  unset(ENV{MEMTOOL_BUDGET})
  unset(ENV{MEMTOOL_SWAP_MODE})
  set(ENV{MEMTOOL_SUMMARY} "${WORK_DIR}/summary-${name}-%p.json")
  if(strategy STREQUAL "swap")
    set(ENV{MEMTOOL_SWAP_MODE} "${mode}")
    set(ENV{MEMTOOL_BUDGET} "${BUDGET}")
  endif()
  if(name IN_LIST REFUSED)
    execute_process(COMMAND ${APP} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                    TIMEOUT 120 WORKING_DIRECTORY ${WORK_DIR})
    if(rc STREQUAL "0" OR NOT err MATCHES "${REFUSED_MATCH}")
      message(FATAL_ERROR "${name}: expected the documented refusal (${REFUSED_MATCH}), got ${rc}\n${err}")
    endif()
    message(STATUS "${name}: refused as documented (${strategy} ${mode})")
    continue()
  endif()
  run_case(${name})
  if(NOT ${name}_out STREQUAL plain_out)
    message(FATAL_ERROR "${name}: output differs from the plain run\nplain:\n${plain_out}\n${name}:\n${${name}_out}\n"
                        "stderr:\n${${name}_err}")
  endif()
  message(STATUS "${name}: identical (${strategy} ${mode})")
endforeach()
