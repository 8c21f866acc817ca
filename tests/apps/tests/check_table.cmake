# Checks table_train (and replay_train --table); run by CTest as `cmake -DMODE=… -P check_table.cmake`.
#
# table_train prints exactly one line per step, "step S corrupted N checksum 0xC"; a word read that
# is not what its last writer left gives "CORRUPTED step S layer L group G words N" on stderr and
# exit status 3. The modes:
#   variants  every way of making the tables (SOURCES × THROUGH × ALLOC, refreshed or not, interior
#             entries, the table in a large buffer) prints the same clean lines as the default: the
#             tables change how kernels reach the buffers, never what they compute; the default
#             run is deterministic and another seed changes every line
#   corrupt   --self-test-corrupt exits 3, says the 2 words of layer 0 group 0 found at step 2 (the
#             weight word written behind the kernels' back, and the output made from it), and step
#             2's line counts them
#   replay    REPLAY (replay_train) with LOG prints the same step lines with --table all, --table
#             written and --table-pageable as without
# FAKECUDA_DIR, when given, is put first in LD_LIBRARY_PATH so libcuda.so.1 is fakecuda.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/app_run.cmake)

set(shape --steps 3 --layers 2 --groups 2 --words 4096 ${module_args})

# The step lines of a clean run, checked well formed.
function(clean_lines text steps lines_var)
  split_lines("${text}" lines)
  list(LENGTH lines count)
  if(NOT count EQUAL steps)
    message(FATAL_ERROR "expected ${steps} lines, got:\n${text}")
  endif()
  set(expected 0)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^step ${expected} corrupted 0 checksum 0x[0-9a-f]+$")
      message(FATAL_ERROR "malformed or corrupted step line: '${line}'")
    endif()
    math(EXPR expected "${expected} + 1")
  endforeach()
  set(${lines_var} "${lines}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "variants")
  run_ok(base ${APP} ${shape})
  clean_lines("${base_out}" 3 base)
  run_ok(again ${APP} ${shape})
  if(NOT again_out STREQUAL base_out)
    message(FATAL_ERROR "two runs differ:\n${base_out}\n${again_out}")
  endif()
  run_ok(seeded ${APP} ${shape} --seed 2)
  clean_lines("${seeded_out}" 3 seeded)
  foreach(a b IN ZIP_LISTS base seeded)
    if(a STREQUAL b)
      message(FATAL_ERROR "--seed 2 left a line unchanged: '${a}'")
    endif()
  endforeach()
  foreach(source pinned pageable kernel global)
    foreach(through all written)
      foreach(extra "" "--refresh" "--refresh;--alloc;async;--interior" "--table-in-large")
        run_ok(v ${APP} ${shape} --table ${source} --through ${through} ${extra})
        if(NOT v_out STREQUAL base_out)
          message(FATAL_ERROR "--table ${source} --through ${through} ${extra} differs from the default:\n${v_out}\n${base_out}")
        endif()
        if(NOT v_err STREQUAL "")
          message(FATAL_ERROR "--table ${source} --through ${through} ${extra} said:\n${v_err}")
        endif()
      endforeach()
    endforeach()
  endforeach()
elseif(MODE STREQUAL "corrupt")
  run_program(r ${APP} ${shape} --self-test-corrupt)
  if(NOT r_rc STREQUAL "3")
    message(FATAL_ERROR "--self-test-corrupt exited with ${r_rc}, not 3\n${r_out}\n${r_err}")
  endif()
  if(NOT r_err MATCHES "CORRUPTED step 2 layer 0 group 0 words 2\n")
    message(FATAL_ERROR "the damaged weight was not reported:\n${r_err}")
  endif()
  if(NOT r_out MATCHES "step 2 corrupted 2 checksum")
    message(FATAL_ERROR "step 2's line does not count it:\n${r_out}")
  endif()
elseif(MODE STREQUAL "replay")
  set(replay_args --log ${LOG} --steps 2)
  run_ok(plain ${REPLAY} ${replay_args})
  foreach(table "--table;all" "--table;written" "--table;all;--table-pageable" "--table;written;--async")
    run_ok(t ${REPLAY} ${replay_args} ${table})
    set(expected "${plain_out}")
    if(table MATCHES "async")
      run_ok(a ${REPLAY} ${replay_args} --async)
      set(expected "${a_out}")
    endif()
    if(NOT t_out STREQUAL expected)
      message(FATAL_ERROR "${table} differs:\n${t_out}\n${expected}")
    endif()
  endforeach()
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
