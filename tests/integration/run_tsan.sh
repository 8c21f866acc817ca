#!/usr/bin/env bash
# Builds the interposer's unit tests and the stress client with ThreadSanitizer in their own
# build folder and runs the concurrent tests: the 8-thread recorder stress test (in-process),
# the engine's detection worker and planner thread, and the 8-thread client under a TSan-built libmemtool.so on a TSan-built fakecuda.
# Usage: tests/integration/run_tsan.sh [build-dir]   (`make tsan`; part of `make test`, not of ctest)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${1:-$source_dir/build-tsan}
# -Wno-maybe-uninitialized: GCC 12 reports false positives in std::variant moves once TSan
# instruments them (tests/unit/interpose/collecting_sink.hpp); the normal build has none.
# -O1 -g1: what TSan's documentation asks for (optimised, line numbers in every report), at
# about 60% of RelWithDebInfo's compile time.
flags="-O1 -g1 -fsanitize=thread"
cmake -S "$source_dir" -B "$build_dir" -DMEMTOOL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=None -DMEMTOOL_ASSERTIONS=ON \
  -DCMAKE_CXX_FLAGS="$flags -Wno-maybe-uninitialized" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build "$build_dir" --target test_interpose memtool_engine_tests -j"${JOBS:-2}"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
"$build_dir/tests/unit/interpose/test_interpose" "[threads]"
"$build_dir/tests/unit/interpose/test_interpose" "[recorder]"
# The engine's threads: the detection worker, and the planner's thread beside a serving pool.
"$build_dir/tests/unit/engine/memtool_engine_tests" "[detection]"
"$build_dir/tests/unit/engine/memtool_engine_tests" "[engine]"
# The same through the preload library: 8 threads on fakecuda, every hook path under TSan.
cmake --build "$build_dir" --target memtool_preload stress_client memtool_app_kernels_host -j"${JOBS:-2}"
trace=$(mktemp -d)/stress.trace
LD_LIBRARY_PATH="$build_dir/tests/fakecuda" LD_PRELOAD="$build_dir/interpose/libmemtool.so" MEMTOOL_TRACE="$trace" \
  "$build_dir/tests/integration/stress_client" "$build_dir/tests/apps/app_kernels.fakecuda" 40
# And with the CUPTI tracer on (fakecupti): ids pushed from 8 threads, buffers handed back on
# fakecupti's and the tracer's threads, the join and the trace written from them.
# Swap, explicit mode, 4 threads trading buffers between streams under a tiny budget.
cmake --build "$build_dir" --target adversarial_train -j"${JOBS:-2}"
LD_LIBRARY_PATH="$build_dir/tests/fakecuda" LD_PRELOAD="$build_dir/interpose/libmemtool.so" MEMTOOL_STRATEGY=swap \
  MEMTOOL_BUDGET=64K MEMTOOL_SWAP_MIN_BYTES=0 "$build_dir/tests/apps/adversarial_train" --iterations 12 --threads 4 >/dev/null
cmake --build "$build_dir" --target fakecupti test_cupti_tracer_fakes -j"${JOBS:-2}"
"$build_dir/tests/fakecupti/tests/test_cupti_tracer_fakes"
LD_LIBRARY_PATH="$build_dir/tests/fakecuda" LD_PRELOAD="$build_dir/interpose/libmemtool.so" MEMTOOL_TRACE="$trace" \
  MEMTOOL_CUPTI=on MEMTOOL_CUPTI_LIBRARY="$build_dir/tests/fakecupti/lib64/libcupti.so.13" \
  "$build_dir/tests/integration/stress_client" "$build_dir/tests/apps/app_kernels.fakecuda" 40
echo "tsan: clean"
