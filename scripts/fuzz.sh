#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/fuzz_*.cpp) with clang and runs each for a while.
#   scripts/fuzz.sh [seconds-per-target] [target...]
# Seeds come from tests/fuzz/seeds and the regression folders (the hostile shapes we fixed,
# the pickle that DUPs one entry among them); new crashers land in out/fuzz/<target>/. Exits
# non-zero when a target crashes, leaks, times out or passes its memory limit: CI runs it
# short (`make fuzz-smoke`, 30 s a target).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=build-fuzz
# Undefined behaviour is a crash too, not a warning the fuzzer scrolls past.
CC=clang CXX=clang++ cmake -S . -B "$build" -DMEMTOOL_BUILD_FUZZ=ON -DMEMTOOL_BUILD_TESTS=OFF \
  -DMEMTOOL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS=-fno-sanitize-recover=undefined \
  -DCMAKE_C_FLAGS=-fno-sanitize-recover=undefined >/dev/null
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "${f%.cpp}")"); done
fi
for t in "${targets[@]}"; do
  cmake --build "$build" --target "$t" -j "${JOBS:-$(nproc)}" >/dev/null
  reader=${t#fuzz_}
  corpus=out/fuzz/$t/corpus
  mkdir -p "$corpus" "out/fuzz/$t/artifacts"
  seeds=()
  [ -d "tests/fuzz/seeds/$reader" ] && seeds+=("tests/fuzz/seeds/$reader")
  [ -d "tests/fuzz/regressions/$reader" ] && seeds+=("tests/fuzz/regressions/$reader")
  echo "fuzz: $t for ${seconds}s" >&2
  "$build/tests/fuzz/$t" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -rss_limit_mb=1024 \
    -malloc_limit_mb=512 -timeout=10 -artifact_prefix="out/fuzz/$t/artifacts/" -print_final_stats=1 2>&1 | tail -n 12
done
