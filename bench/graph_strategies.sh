#!/usr/bin/env bash
# CUDA graphs and stream capture under every strategy (issue 32): each graph app
# (tests/apps/graphed: PyTorch-shaped graphed_train in its capture modes and graph splits, the
# XLA-shaped xla_train with exec updates) runs plain, then under record, pool, and swap in both
# modes at PERCENT of its plain peak, on fakecuda. Per row: output identical to the plain run's
# (every loss and checksum line), exit status, device peak against the plain run's, the step
# memtool found (allocations and graph launches per period), the pool's served share, what swap
# moved, and how many graph launches and captures memtool saw. Hidden 1024: the big buffers are
# 2 MiB, explicit mode's granule (smaller ones it leaves on the device).
# Usage: bench/graph_strategies.sh [BUILD_DIR] [ITERATIONS] [PERCENT]
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
iterations=${2:-30}
percent=${3:-60}
export LD_LIBRARY_PATH="$build/tests/fakecuda"
preload="$build/interpose/libmemtool.so"
graphed="$build/tests/apps/graphed_train"
xla="$build/tests/apps/xla_train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A app
app[whole_global]="$graphed --iterations $iterations --hidden 1024 --graphs whole --capture-mode global"
app[whole_thread_local]="$graphed --iterations $iterations --hidden 1024 --graphs whole --capture-mode thread-local"
app[split_relaxed]="$graphed --iterations $iterations --hidden 1024 --graphs split --capture-mode relaxed"
app[xla_updates]="$xla --iterations $iterations --hidden 1024 --update-every 5"
order="whole_global whole_thread_local split_relaxed xla_updates"

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2" 2>/dev/null || echo -; }

echo "== graph apps under every strategy: $iterations iterations, swap at $percent% of the plain peak"
printf '%-19s %-13s %-9s %-5s %-12s %-11s %-14s %-22s %s\n' app strategy identical exit "peak/plain" "step a+g" "pool served" "swap out/in (KiB)" "graph launches, captures"
for name in $order; do
  read -ra cmd <<<"${app[$name]}"
  FAKECUDA_STATS="$work/plain.json" "${cmd[@]}" > "$work/plain.out" 2> "$work/plain.err" ||
    { echo "$name: the plain run failed"; continue; }
  plain_peak=$(field "$work/plain.json" peak_bytes_in_use)
  budget=$(( plain_peak * percent / 100 ))
  for strategy in record pool swap_uvm swap_explicit; do
    env=(MEMTOOL_STRATEGY="${strategy%%_*}")
    case $strategy in
      # UVM pages any buffer; explicit mode maps 2 MiB granules, so the small buffers stay put.
      swap_uvm) env+=(MEMTOOL_SWAP_MODE=uvm MEMTOOL_BUDGET="$budget" MEMTOOL_SWAP_MIN_BYTES=1) ;;
      swap_explicit) env+=(MEMTOOL_SWAP_MODE=explicit MEMTOOL_BUDGET="$budget" MEMTOOL_SWAP_MIN_BYTES=1M) ;;
    esac
    rm -f "$work/summary.json" "$work/run.json"
    env "${env[@]}" LD_PRELOAD="$preload" MEMTOOL_SUMMARY="$work/summary.json" FAKECUDA_STATS="$work/run.json" \
      "${cmd[@]}" > "$work/run.out" 2> "$work/run.err"
    status=$?
    same=no
    cmp -s "$work/plain.out" "$work/run.out" && same=yes
    peak=$(field "$work/run.json" peak_bytes_in_use)
    ratio=$(awk -v a="$peak" -v b="$plain_peak" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
    s="$work/summary.json"
    step="$(field "$s" period_allocations)+$(field "$s" period_graph_launches)"
    served=-
    if [[ $strategy == pool ]]; then
      served="$(field "$s" allocs_from_pool)/$(( $(field "$s" allocs_from_pool) + $(field "$s" allocs_passed_through) ))"
    fi
    moved=-
    if [[ $strategy == swap_* ]]; then
      moved="$(( $(field "$s" bytes_swapped_out) / 1024 ))/$(( $(field "$s" bytes_swapped_in) / 1024 ))"
    fi
    printf '%-19s %-13s %-9s %-5s %-12s %-11s %-14s %-22s %s\n' "$name" "$strategy" "$same" "$status" "$ratio" "$step" \
      "$served" "$moved" "$(field "$s" graph_launches), $(field "$s" captures)"
    grep -h "CAPTURE_INVALIDATED\|CAPTURE_UNJOINED\|CAPTURE_UNMATCHED" "$work/run.err" | head -2
  done
done
