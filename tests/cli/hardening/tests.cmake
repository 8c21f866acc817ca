# Hardening, second round (issue 39): one test per probe class a hostile user found. Included
# from tests/cli/CMakeLists.txt; ${check} and memtool_cli_test come from there.
set(hardening_dir ${CMAKE_CURRENT_SOURCE_DIR}/hardening)

# Item 1: devices and endless pipes are refused after their head, not read whole.
add_test(NAME cli_hardening_stream_inputs COMMAND bash ${hardening_dir}/stream_inputs.sh $<TARGET_FILE:memtool>)
set_tests_properties(cli_hardening_stream_inputs PROPERTIES LABELS "cli" TIMEOUT 300)
