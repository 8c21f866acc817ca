#!/usr/bin/env bash
# Every strategy on the replays of real PyTorch training (tests/apps/replay over the logs in
# tests/fixtures/traces), side by side in one run on fakecuda: wall time (median of REPEATS
# runs of STEPS steps), fakecuda's device peak, and what memtool's summary says. Swap runs get a
# device of BUDGET_PERCENT of the plain run's peak (FAKECUDA_MEMORY_BYTES = MEMTOOL_BUDGET),
# where the plain run cannot run at all. Set FAKECUDA_LINK_GBPS (e.g. 55) to give copies and
# migrations a link's speed.
# Usage: bench/replay_strategies.sh [BUILD_DIR] [STEPS] [REPEATS] [BUDGET_PERCENT]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-6}
repeats=${3:-3}
percent=${4:-80}
repo=$(cd "$(dirname "$0")/.." && pwd)
fakecuda="$build/tests/fakecuda"
lib="$build/interpose/libmemtool.so"
replay="$build/tests/apps/replay_train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median_digits=0
source "$(dirname "$0")/median_ms.sh"
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2"; }

echo "== replays of real training, $steps steps, median of $repeats runs; swap at $percent% of the plain peak" \
     "(link: ${FAKECUDA_LINK_GBPS:-unlimited} GB/s)"
printf '%-13s %9s %9s %9s %7s %7s %14s %14s %14s %9s\n' model "plain ms" "pool ms" "swap ms" pool/pl swap/pl \
  "plain peak B" "pool peak B" "swap peak B" "swapped"
for model in alexnet mobilenet_v2 lstm; do
  cmd=("$replay" --log "$repo/tests/fixtures/traces/$model.log" --steps "$steps")
  plain=$(LD_LIBRARY_PATH=$fakecuda median_ms "${cmd[@]}")
  LD_LIBRARY_PATH=$fakecuda FAKECUDA_STATS="$work/plain.json" "${cmd[@]}" > /dev/null
  peak=$(field "$work/plain.json" peak_bytes_in_use)
  pool=$(LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=pool median_ms "${cmd[@]}")
  LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=pool FAKECUDA_STATS="$work/pool.json" "${cmd[@]}" > /dev/null
  budget=$((peak * percent / 100))
  swap_env=(LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=swap MEMTOOL_BUDGET=$budget FAKECUDA_MEMORY_BYTES=$budget)
  swap=$(export "${swap_env[@]}"; median_ms "${cmd[@]}")
  env "${swap_env[@]}" FAKECUDA_STATS="$work/swap.json" MEMTOOL_SUMMARY="$work/swap.summary.json" "${cmd[@]}" > /dev/null
  printf '%-13s %9s %9s %9s %7.2f %7.2f %14s %14s %14s %8.1fG\n' "$model" "$plain" "$pool" "$swap" \
    "$(awk -v a="$pool" -v b="$plain" 'BEGIN {print a / b}')" "$(awk -v a="$swap" -v b="$plain" 'BEGIN {print a / b}')" \
    "$peak" "$(field "$work/pool.json" peak_bytes_in_use)" "$(field "$work/swap.json" peak_bytes_in_use)" \
    "$(awk -v b="$(field "$work/swap.summary.json" bytes_swapped_out)" 'BEGIN {print b / 2^30}')"
  echo "   swap: $(field "$work/swap.summary.json" swap_ins_ahead) swap-ins ahead of use," \
       "$(field "$work/swap.summary.json" swap_ins_on_demand) on demand; memtool's own peak" \
       "$(field "$work/swap.summary.json" peak_device_bytes) B (budget $budget B)"
done
