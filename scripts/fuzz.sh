#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/fuzz_*.cpp) with clang and runs each for a while.
#   scripts/fuzz.sh [seconds-per-target] [target...]
# Seeds come from tests/fuzz/seeds and the regression folders (the hostile shapes we fixed,
# the pickle that DUPs one entry among them); new crashers land in out/fuzz/<target>/. Exits
# non-zero when a target crashes, leaks, times out or passes its memory limit (its log is
# out/fuzz/<target>/log); the targets run side by side, JOBS at a time. CI runs it
# short (`make fuzz-smoke`, 30 s a target).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=build-fuzz
# Undefined behaviour is a crash too, not a warning the fuzzer scrolls past. -O1 with line tables:
# libFuzzer's advice, and about 60% of RelWithDebInfo's compile time.
flags="-O1 -gline-tables-only -fno-sanitize-recover=undefined"
CC=clang CXX=clang++ cmake -S . -B "$build" -DMEMTOOL_BUILD_FUZZ=ON -DMEMTOOL_BUILD_TESTS=OFF \
  -DMEMTOOL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" >/dev/null
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "${f%.cpp}")"); done
fi
cmake --build "$build" --target "${targets[@]}" -j "${JOBS:-$(nproc)}" >/dev/null
# One run per target, up to JOBS at a time (libFuzzer itself is single-threaded).
run_one() {
  local t=$1 reader=${1#fuzz_}
  local corpus=out/fuzz/$t/corpus
  mkdir -p "$corpus" "out/fuzz/$t/artifacts"
  local seeds=()
  [ -d "tests/fuzz/seeds/$reader" ] && seeds+=("tests/fuzz/seeds/$reader")
  [ -d "tests/fuzz/regressions/$reader" ] && seeds+=("tests/fuzz/regressions/$reader")
  "$build/tests/fuzz/$t" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -rss_limit_mb=1024 \
    -malloc_limit_mb=512 -timeout=10 -artifact_prefix="out/fuzz/$t/artifacts/" -print_final_stats=1 \
    >"out/fuzz/$t/log" 2>&1
}
pids=()
failed=0
for t in "${targets[@]}"; do
  echo "fuzz: $t for ${seconds}s" >&2
  run_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= ${JOBS:-$(nproc)})); then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
for t in "${targets[@]}"; do
  echo "== $t" >&2
  grep -E "^(stat::|Done|==[0-9]+==ERROR|SUMMARY)" "out/fuzz/$t/log" >&2 || true
done
exit "$failed"
