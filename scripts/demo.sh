#!/usr/bin/env bash
# The main job on bundled examples (`make demo`): what memtool sees in a real PyTorch training run,
# then a CUDA training program recorded live under libmemtool.so (on fakecuda, the CPU driver),
# reported, and planned.
set -euo pipefail
build=${1:-build}
memtool=$build/tools/memtool/memtool
out=$build/demo
mkdir -p "$out"

banner() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

banner "0. What this machine lets memtool do (memtool doctor; here fakecuda, the CPU driver, stands in for the GPU)"
LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$memtool" doctor || true

banner "1. A real PyTorch training run (AlexNet, 8 iterations): memtool report"
"$memtool" report --rows 5 tests/fixtures/traces/alexnet.snapshot.json

banner "2. Record a two-stream CUDA training program under libmemtool.so (fakecuda stands in for the GPU)"
LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  "$memtool" record -o "$out/conv_train.trace" -- "$build/tests/apps/conv_train" --iterations 8

banner "3. Its report"
"$memtool" report --rows 5 "$out/conv_train.trace"

banner "4. What a planned pool would need for AlexNet's iteration, against today's allocators"
"$memtool" plan tests/fixtures/traces/alexnet.snapshot.json

banner "5. Run the same program with its iterations served from a planned pool (MEMTOOL_STRATEGY=pool)"
export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$build/tests/apps/conv_train" --iterations 40 > "$out/plain.out"
"$memtool" run --strategy pool --summary "$out/pool.json" -- "$build/tests/apps/conv_train" --iterations 40 \
  > "$out/pool.out"
if cmp -s "$out/plain.out" "$out/pool.out"; then
  echo "checksums of all 40 iterations identical to the plain run ($out/plain.out, $out/pool.out)"
else
  echo "checksums DIFFER from the plain run: diff $out/plain.out $out/pool.out" >&2
  exit 1
fi
