#!/usr/bin/env bash
# Is the budget a limit? (issue 34) Each replay of real training (tests/apps/replay over the logs
# in tests/fixtures/traces) runs plain, then under swap in both modes at PERCENT of its plain
# peak on a device twice the plain peak, so that passing the budget shows as fakecuda's peak
# instead of an out-of-memory failure. Per row: output identical to the plain run's, exit status,
# fakecuda's device peak (everything on the device, memtool's own memory included) against the
# budget, memtool's own count against it, and what moved. A model whose unswapped allocations
# alone pass the budget says so in memtool's log ("cannot be met"), shown beside it.
# With --async the replays allocate stream-ordered (cuMemAllocAsync / cuMemFreeAsync on their
# stream), so the driver's pool and what it keeps after the frees are on the device too. The
# budget is then PERCENT of the bytes the program holds at its peak, not of the async run's
# device peak (which counts what the pool keeps after the frees until the step synchronises):
# it is the plain run's peak_bytes_in_use with cuMemAlloc / cuMemFree (the same replay, the same
# allocations, each freed at its free). The device is twice the plain async run's peak, and the
# output is compared with the plain async run's.
# Usage: bench/replay_budget_limit.sh [--async] [BUILD_DIR] [STEPS] [PERCENT] [MODELS...]
set -uo pipefail
alloc=()
if [ "${1:-}" = --async ]; then
  alloc=(--async)
  shift
fi
build=$(cd "${1:-build}" && pwd)
steps=${2:-8}
percent=${3:-65}
shift $(( $# > 3 ? 3 : $# ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(alexnet mobilenet_v2 lstm resnet18 bert_tiny gpt_tiny accum_cnn)
repo=$(cd "$(dirname "$0")/.." && pwd)
export LD_LIBRARY_PATH="$build/tests/fakecuda"
replay="$build/tests/apps/replay_train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2" 2>/dev/null || echo 0; }

echo "== replays at $percent% of the plain ${alloc:+sync }peak, $steps steps, device twice the plain peak${alloc:+, stream-ordered allocation}"
printf '%-13s %-9s %-9s %-4s %14s %14s %12s %12s %9s %s\n' model mode identical exit "budget B" "fakecuda peak" \
  "peak/budget" "count/budget" "out GB" note
for model in "${models[@]}"; do
  cmd=("$replay" --log "$repo/tests/fixtures/traces/$model.log" --steps "$steps" "${alloc[@]}")
  FAKECUDA_STATS="$work/plain.json" "${cmd[@]}" > "$work/plain.out" 2> /dev/null || { echo "$model: the plain run failed"; continue; }
  peak=$(field "$work/plain.json" peak_bytes_in_use)
  held=$peak
  if [ ${#alloc[@]} -gt 0 ]; then
    # The bytes the program holds at its peak: the same replay with cuMemAlloc / cuMemFree.
    FAKECUDA_STATS="$work/held.json" "$replay" --log "$repo/tests/fixtures/traces/$model.log" --steps "$steps" \
      > /dev/null 2>&1 || { echo "$model: the plain sync run failed"; continue; }
    held=$(field "$work/held.json" peak_bytes_in_use)
  fi
  budget=$(( held * percent / 100 ))
  for mode in explicit uvm; do
    rm -f "$work/run.json" "$work/summary.json"
    env LD_PRELOAD="$build/interpose/libmemtool.so" MEMTOOL_STRATEGY=swap MEMTOOL_SWAP_MODE=$mode \
      MEMTOOL_BUDGET=$budget FAKECUDA_MEMORY_BYTES=$(( 2 * peak )) FAKECUDA_STATS="$work/run.json" \
      MEMTOOL_SUMMARY="$work/summary.json" "${cmd[@]}" > "$work/run.out" 2> "$work/run.err"
    status=$?
    same=no
    cmp -s "$work/plain.out" "$work/run.out" && same=yes
    got=$(field "$work/run.json" peak_bytes_in_use)
    counted=$(field "$work/summary.json" peak_device_bytes)
    note=$(grep -o 'cannot be met[^;(]*' "$work/run.err" | head -1)
    # A ratio rounds to 1.0000 a few bytes over the budget: say so in words.
    [ "$got" -gt "$budget" ] && note="device peak over the budget by $(( got - budget )) B $note"
    [ "$counted" -gt "$budget" ] && note="count over the budget by $(( counted - budget )) B $note"
    printf '%-13s %-9s %-9s %-4s %14s %14s %12.4f %12.4f %9.2f %s\n' "$model" "$mode" "$same" "$status" "$budget" "$got" \
      "$(awk -v a="$got" -v b="$budget" 'BEGIN { print a / b }')" \
      "$(awk -v a="$counted" -v b="$budget" 'BEGIN { print a / b }')" \
      "$(awk -v b="$(field "$work/summary.json" bytes_swapped_out)" 'BEGIN { print b / 1e9 }')" "$note"
  done
done
