# Hardening, second round (issue 39): one test per probe class a hostile user found. Included
# from tests/cli/CMakeLists.txt; ${check} and memtool_cli_test come from there.
set(hardening_dir ${CMAKE_CURRENT_SOURCE_DIR}/hardening)

# Item 1: devices and endless pipes are refused after their head, not read whole.
add_test(NAME cli_hardening_stream_inputs COMMAND bash ${hardening_dir}/stream_inputs.sh $<TARGET_FILE:memtool>)
set_tests_properties(cli_hardening_stream_inputs PROPERTIES LABELS "cli" TIMEOUT 300)

# Item 7: 16 buffers of 2^60 bytes, one live at a time, add up past 2^64; with unlimited capacity
# no allocator may report a failed allocation (the simulated cudaMalloc ran out of addresses).
memtool_cli_test(cli_hardening_sizes_past_2e64 EXPECT_RC 0
  ARGS simulate --format json tests/cli/hardening/sixteen_2e60_buffers.json
  STDOUT_REGEX "\"name\": \"cuda-malloc\",[^}]*\"failed_at_event\": null,[^}]*\"allocations\": 16,\n *\"failed_allocations\": 0\n")
