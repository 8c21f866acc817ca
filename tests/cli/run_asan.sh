#!/usr/bin/env bash
# The command-line tests (ctest -L cli) again, with memtool, libmemtool.so, fakecuda and the
# test client built with AddressSanitizer and UndefinedBehaviorSanitizer in a build folder of
# their own: every golden report, bad input, FIFO and killed run, with memory errors and
# undefined behaviour fatal. Usage: tests/cli/run_asan.sh [build-dir]   (`make asan`, part of CI)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${1:-$source_dir/build-asan}
# -O0 -g1: about half of RelWithDebInfo's compile time (the CLI tests run in seconds anyway),
# and still line numbers in every report.
flags="-O0 -g1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# Programs run under the sanitized libmemtool.so need the ASan runtime loaded first.
asan_runtime=$(${CXX:-g++} -print-file-name=libasan.so)
cmake -S "$source_dir" -B "$build_dir" -DMEMTOOL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=None -DMEMTOOL_ASSERTIONS=ON \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DMEMTOOL_SANITIZER_PRELOAD="$asan_runtime" >/dev/null
cmake --build "$build_dir" -j"${JOBS:-2}" --target memtool memtool_preload fakecuda hostile_client \
  make_segment_trace make_training_trace conv_train fakecupti doctor_bad_driver abrupt_end
# Left out: the search-quality check of `plan --capacity` (the planner's work units are
# calibrated on an optimised build; at -O0 under ASan its wall-clock guard stops the search
# first). Its memory safety is covered by every other plan test here.
UBSAN_OPTIONS="print_stacktrace=1" ctest --test-dir "$build_dir" -L cli --output-on-failure -j"${JOBS:-2}" \
  -E '^cli_plan_capacity_met$'
echo "asan: clean"
