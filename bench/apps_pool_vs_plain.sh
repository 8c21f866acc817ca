#!/usr/bin/env bash
# Pool mode against plain runs, in one go, on fakecuda:
#  1. end-to-end wall time of mlp_train and conv_train: plain, MEMTOOL_STRATEGY=record, =pool
#     (median of REPEATS runs of ITERATIONS iterations each), and the pool summary of one run;
#  2. allocation latency (bench_pool_alloc): fakecuda's cuMemAlloc_v2/cuMemFree_v2 directly,
#     and through libmemtool.so in pool and record mode.
# Usage: bench/apps_pool_vs_plain.sh [BUILD_DIR] [ITERATIONS] [REPEATS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
iterations=${2:-200}
repeats=${3:-5}
fakecuda="$build/tests/fakecuda"
lib="$build/interpose/libmemtool.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$(dirname "$0")/median_ms.sh"

echo "== end-to-end wall time, $iterations iterations, median of $repeats runs (ms)"
printf '%-12s %10s %10s %10s %8s\n' app plain record pool pool/plain
for app in mlp_train conv_train; do
  bin="$build/tests/apps/$app"
  plain=$(LD_LIBRARY_PATH=$fakecuda median_ms "$bin" --iterations "$iterations")
  record=$(LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=record median_ms "$bin" --iterations "$iterations")
  pool=$(LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=pool median_ms "$bin" --iterations "$iterations")
  ratio=$(awk -v a="$pool" -v b="$plain" 'BEGIN {printf "%.2f", a / b}')
  printf '%-12s %10s %10s %10s %8s\n' "$app" "$plain" "$record" "$pool" "$ratio"
  LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=pool MEMTOOL_SUMMARY="$work/$app.json" \
    FAKECUDA_STATS="$work/$app.pool.stats" "$bin" --iterations "$iterations" > /dev/null
  LD_LIBRARY_PATH=$fakecuda FAKECUDA_STATS="$work/$app.plain.stats" "$bin" --iterations "$iterations" > /dev/null
  echo "   summary: $(cat "$work/$app.json")"
  echo "   fakecuda peak_bytes_in_use: plain $(grep -o '"peak_bytes_in_use": [0-9]*' "$work/$app.plain.stats" | grep -o '[0-9]*$')," \
       "pool $(grep -o '"peak_bytes_in_use": [0-9]*' "$work/$app.pool.stats" | grep -o '[0-9]*$')" \
       "(whole run, warm-up iterations included)"
done

echo
echo "== allocation latency: one iteration of 16 cuMemAlloc_v2 + 16 cuMemFree_v2"
alloc="$build/bench/bench_pool_alloc"
for setting in driver pool record; do
  case $setting in
    driver) LD_LIBRARY_PATH=$fakecuda "$alloc" --benchmark_min_time=0.5 2>/dev/null | grep BM_ ;;
    *) LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=$setting MEMTOOL_SUMMARY="$work/alloc.json" \
         "$alloc" --benchmark_min_time=0.5 2>/dev/null | grep BM_
       [ "$setting" = pool ] && echo "   summary: $(cat "$work/alloc.json")" ;;
  esac
done
