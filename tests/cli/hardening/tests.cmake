# Hardening, second round (issue 39): one test per probe class a hostile user found. Included
# from tests/cli/CMakeLists.txt; ${check} and memtool_cli_test come from there.
set(hardening_dir ${CMAKE_CURRENT_SOURCE_DIR}/hardening)
# What the tests that run a program under memtool preload: in the sanitizer build (make asan)
# the sanitizer's runtime goes first, as it must.
if(TARGET memtool_preload)
  set(hardening_preload $<TARGET_FILE:memtool_preload>)
  if(MEMTOOL_SANITIZER_PRELOAD)
    set(hardening_preload "${MEMTOOL_SANITIZER_PRELOAD}:$<TARGET_FILE:memtool_preload>")
  endif()
endif()

# Item 1: devices and endless pipes are refused after their head, not read whole.
add_test(NAME cli_hardening_stream_inputs COMMAND bash ${hardening_dir}/stream_inputs.sh $<TARGET_FILE:memtool>)
set_tests_properties(cli_hardening_stream_inputs PROPERTIES LABELS "cli" TIMEOUT 300)
if(MEMTOOL_SANITIZER_PRELOAD)
  # ASan reserves terabytes of shadow address space: the script then runs without its limit.
  set_tests_properties(cli_hardening_stream_inputs PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# Item 7: 16 buffers of 2^60 bytes, one live at a time, add up past 2^64; with unlimited capacity
# no allocator may report a failed allocation (the simulated cudaMalloc ran out of addresses).
memtool_cli_test(cli_hardening_sizes_past_2e64 EXPECT_RC 0
  ARGS simulate --format json tests/cli/hardening/sixteen_2e60_buffers.json
  STDOUT_REGEX "\"name\": \"cuda-malloc\",[^}]*\"failed_at_event\": null,[^}]*\"allocations\": 16,\n *\"failed_allocations\": 0\n")

# Item 6: the swap what-if's work is bounded by the problem, not by the link's speed. A link of
# 1e-6 bytes/ns (1 kB/s) took over 20 s for `ours` (a swap-out's end was walked op by op, period
# after period); now a few seconds. A link below 1 byte per second (1e-300) is refused.
# A bound on time: not run in the unoptimised sanitizer build (make asan), which is many times
# slower; the optimised build's CTest runs it.
if(NOT MEMTOOL_SANITIZER_PRELOAD)
  add_test(NAME cli_hardening_slow_link COMMAND bash -c
    "sed '3s/.*/link 1e-6 1e-6 92229 90561 1/' ${fixtures}/swap/lstm60.problem > slow_link.problem && timeout 15 $<TARGET_FILE:memtool> simulate --swap ours slow_link.problem"
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(cli_hardening_slow_link PROPERTIES LABELS "cli" TIMEOUT 60
    PASS_REGULAR_EXPRESSION "ours +stick-to-limit +[0-9.]+ MiB")
endif()
add_test(NAME cli_hardening_absurd_link COMMAND bash -c
  "sed '3s/.*/link 1e-300 1e-300 92229 90561 1/' ${fixtures}/swap/lstm60.problem > absurd_link.problem && $<TARGET_FILE:memtool> simulate --swap ours absurd_link.problem; echo exit $?"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli_hardening_absurd_link PROPERTIES LABELS "cli" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "^memtool: error: absurd_link\\.problem: [^\n]*line 3[^\n]*at least 1 byte per second[^\n]*\nexit 2\n$")

# Item 3: a signal the program inherited ignored (nohup) stays ignored: memtool installs no
# handler for it, so the program's sigaction says SIG_IGN and a program it execs survives it.
if(TARGET hostile_client)
  add_test(NAME cli_hardening_nohup_keeps_sighup_ignored COMMAND bash -c
    "trap '' HUP; exec env LD_LIBRARY_PATH=$<TARGET_FILE_DIR:fakecuda> $<TARGET_FILE:memtool> record --no-framework-env -o nohup.trace -- $<TARGET_FILE:hostile_client> hup"
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(cli_hardening_nohup_keeps_sighup_ignored PROPERTIES LABELS "cli" TIMEOUT 120
    PASS_REGULAR_EXPRESSION "SIGHUP ignored\nchild survived\nstill running\n.*memtool: recorded 8 events: 4 allocations, 4 frees")
  if(MEMTOOL_SANITIZER_PRELOAD)
    set_tests_properties(cli_hardening_nohup_keeps_sighup_ignored PROPERTIES
      ENVIRONMENT "LD_PRELOAD=${MEMTOOL_SANITIZER_PRELOAD};ASAN_OPTIONS=detect_leaks=0")
  endif()
endif()

# Item 5: two outputs on one file. The log file or the swap dump naming the trace (by path or by
# inode) is said and left out; a second process on one MEMTOOL_TRACE gets its own file.
if(TARGET conv_train AND TARGET fakecuda)
  add_test(NAME cli_hardening_two_outputs_one_file COMMAND bash ${hardening_dir}/two_outputs.sh
    $<TARGET_FILE:memtool> ${hardening_preload} $<TARGET_FILE_DIR:fakecuda> $<TARGET_FILE:conv_train>
    ${CMAKE_CURRENT_BINARY_DIR}/two_outputs)
  set_tests_properties(cli_hardening_two_outputs_one_file PROPERTIES LABELS "cli" TIMEOUT 180
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# Smaller items: every usage error exits 2 (CLI11's own codes were 105 to 114), and nonsense
# numbers are usage errors: NaN or infinite limits, negative slowdowns and iterations (which an
# unsigned option wrapped to 2^64 - 1), an iteration range past the input.
set(alexnet tests/fixtures/traces/alexnet.snapshot.json)
memtool_cli_test(cli_hardening_usage_unknown_option EXPECT_RC 2 ARGS report --bogus ${alexnet}
  STDERR_REGEX "argument was not expected: --bogus")
memtool_cli_test(cli_hardening_usage_missing_input EXPECT_RC 2 ARGS plan STDERR_REGEX "input is required")
memtool_cli_test(cli_hardening_usage_bad_choice EXPECT_RC 2 ARGS report --format yaml ${alexnet}
  STDERR_REGEX "--format: yaml not in")
memtool_cli_test(cli_hardening_plan_time_limit_nan EXPECT_RC 2 ARGS plan --time-limit nan ${alexnet}
  STDERR_REGEX "^--time-limit: must be a finite number, not 'nan'")
memtool_cli_test(cli_hardening_export_time_limit_inf EXPECT_RC 2
  ARGS export --format perfetto -o never.pftrace --time-limit inf ${alexnet}
  STDERR_REGEX "^--time-limit: must be a finite number, not 'inf'")
memtool_cli_test(cli_hardening_plan_iteration_negative EXPECT_RC 2 ARGS plan --iteration -1 ${alexnet}
  STDERR_REGEX "^--iteration: must be a number of 0 or more, not '-1'")
memtool_cli_test(cli_hardening_simulate_slowdown_nan EXPECT_RC 2 ARGS simulate --budget 80% --max-slowdown nan ${alexnet}
  STDERR_REGEX "^--max-slowdown: must be a number of 0 or more, not 'nan'")
memtool_cli_test(cli_hardening_simulate_slowdown_negative EXPECT_RC 2
  ARGS simulate --budget 80% --max-slowdown -1 ${alexnet}
  STDERR_REGEX "^--max-slowdown: must be a number of 0 or more, not '-1'")
memtool_cli_test(cli_hardening_report_iterations_past_input EXPECT_RC 2
  ARGS report --iterations 18446744073709551615: ${alexnet}
  STDERR_REGEX "^memtool: error: --iterations 18446744073709551615:: the input has iterations 0 to 7\n$")
memtool_cli_test(cli_hardening_help_exits_0 EXPECT_RC 0 ARGS report --help STDOUT_REGEX "Usage:")

# `memtool run` of a file that is no program exits 126 as a shell does (127: no such program),
# and the missing summary names the strategy that wrote none.
memtool_cli_test(cli_hardening_run_not_executable EXPECT_RC 126
  ARGS run --strategy record --no-framework-env -- /etc/passwd
  STDERR_REGEX "memtool: error: cannot run /etc/passwd: Permission denied\nmemtool: no record summary was written")
memtool_cli_test(cli_hardening_run_not_found EXPECT_RC 127
  ARGS run --strategy swap --budget 1G --no-framework-env -- /no/such/program
  STDERR_REGEX "memtool: error: cannot run /no/such/program: No such file or directory\nmemtool: no swap summary was written")

# A refused value of 10,000 characters: its error line keeps the reason (log lines were cut at
# 1 KB, inside the value); long values and units are quoted in part, a line over 4 KiB says [cut].
if(TARGET conv_train AND TARGET fakecuda)
  add_test(NAME cli_hardening_long_value_keeps_reason COMMAND bash -c
    "MEMTOOL_BUDGET=1$(printf %10000s | tr ' ' x) LD_LIBRARY_PATH=$<TARGET_FILE_DIR:fakecuda> LD_PRELOAD=${hardening_preload} ASAN_OPTIONS=detect_leaks=0 $<TARGET_FILE:conv_train> --iterations 2 2>&1 >/dev/null")
  set_tests_properties(cli_hardening_long_value_keeps_reason PROPERTIES LABELS "cli" TIMEOUT 60
    PASS_REGULAR_EXPRESSION "MEMTOOL_BUDGET='1x+\\.\\.\\. \\(10001 characters\\)': unknown unit 'x+\\.\\.\\.'; expected a size[^\n]*memtool stays out of the way")
endif()

# `record -o` onto the program it runs or a file among its arguments is refused before the run
# (the trace replaced them without a word).
add_test(NAME cli_hardening_record_onto_program COMMAND bash -c
  "cp /bin/cat cat.copy && cp ${CMAKE_CURRENT_SOURCE_DIR}/hardening/tests.cmake input.copy && $<TARGET_FILE:memtool> record --no-framework-env -o cat.copy -- ./cat.copy input.copy; echo exit $?; $<TARGET_FILE:memtool> record --no-framework-env -o input.copy -- ./cat.copy input.copy; echo exit $?; cmp cat.copy /bin/cat && cmp input.copy ${CMAKE_CURRENT_SOURCE_DIR}/hardening/tests.cmake && echo untouched"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli_hardening_record_onto_program PROPERTIES LABELS "cli" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "^memtool: error: -o cat\\.copy: that is the program \\./cat\\.copy; the trace would replace it\nexit 2\nmemtool: error: -o input\\.copy: that is the program's argument input\\.copy; the trace would replace it\nexit 2\nuntouched\n$")

# Item 4: a trace survives however its program ends (_exit, abort, quick_exit, a segfault, exec,
# SIGKILL): the writer's buffer is a shared mapping of the file. A program that execs itself
# under the same MEMTOOL_TRACE keeps its trace; the new image records beside it.
if(TARGET fakecuda AND TARGET memtool_preload)
  add_executable(abrupt_end ${hardening_dir}/abrupt_end.cpp)
  target_link_libraries(abrupt_end PRIVATE fakecuda)
  set_target_properties(abrupt_end PROPERTIES SKIP_BUILD_RPATH ON)
  memtool_warnings(abrupt_end)
  add_test(NAME cli_hardening_abrupt_ends COMMAND bash ${hardening_dir}/abrupt_ends.sh
    $<TARGET_FILE:memtool> ${hardening_preload} $<TARGET_FILE_DIR:fakecuda> $<TARGET_FILE:abrupt_end>
    ${CMAKE_CURRENT_BINARY_DIR}/abrupt_ends)
  set_tests_properties(cli_hardening_abrupt_ends PROPERTIES LABELS "cli" TIMEOUT 120)
  if(MEMTOOL_SANITIZER_PRELOAD)
    set_tests_properties(cli_hardening_abrupt_ends PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_abort=0")
  endif()
endif()

# Item 3: memtool report's peak memory per byte of trace, on a generated trace of 200 000
# one-byte buffers never freed (README.md, "Memory per command": 16.9 measured, 22.1 before LiveIndex).
add_executable(many_buffers_trace ${hardening_dir}/many_buffers_trace.cpp)
target_link_libraries(many_buffers_trace PRIVATE memtool_trace_format)
memtool_warnings(many_buffers_trace)
if(NOT MEMTOOL_SANITIZER_PRELOAD)  # ASan's shadow and quarantine are no measure of ours
  add_test(NAME cli_hardening_report_memory COMMAND bash ${hardening_dir}/memory_per_byte.sh
    $<TARGET_FILE:memtool> $<TARGET_FILE:many_buffers_trace> ${CMAKE_CURRENT_BINARY_DIR}/report_memory 200000 20)
  set_tests_properties(cli_hardening_report_memory PROPERTIES LABELS "cli" TIMEOUT 120)
endif()
