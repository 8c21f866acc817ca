#!/usr/bin/env bash
# Swap policies in the process, side by side in one run: the replays of real PyTorch training
# (tests/apps/replay over tests/fixtures/traces/*.log) on fakecuda with a device of BUDGET_PERCENT
# of the plain run's peak (the plain run cannot run there), kernels that take the bytes they
# touch at COMPUTE_GBPS, and a host link of LINK_GBPS each way (fakecuda's copy engines; memtool
# plans with what it measures of them, MEMTOOL_SWAP_LINK's default). Each policy (MEMTOOL_SWAP_POLICY) learns from
# the first steps; the median wall time of the last four steps is set against the plain run's.
# ours chooses among its candidates by the model once it has learned (docs/swapping.md, the
# selector), timing the rule alone and its choice for a window each: give it 20 steps or more for
# the last four to be the choice it keeps ("applies at exit").
#
# The defaults are 500 GB/s of compute against an H200's 55 GB/s PCIe 5 link, both 100x slower:
# fakecuda's copies are real memmoves and its new memory is faulted in page by page, costs a GPU
# does not have, and at full speed they would be most of every step.
# With ROUNDS > 1, plain and every policy run once a round, and each one's least step time
# (median of its run's last four steps) over the rounds is its figure: a shared machine's busy
# minutes then touch all alike, and its spread (most over least, less one) says how far the same
# run moves from one round to the next: differences inside it are noise. The counters are the
# last round's. ours runs at MEMTOOL_LOG=info, and its selector's verdicts (each figure's host
# time in that one process, minutes apart at most) follow each model's table: the schedules side
# by side without the rounds' noise.
# Usage: bench/replay_swap_policies.sh [BUILD_DIR] [STEPS] [BUDGET_PERCENT] [COMPUTE_GBPS] [LINK_GBPS] [MODELS] [POLICIES] [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-30}
percent=${3:-80}
compute=${4:-5}
link=${5:-0.55}
models=${6:-"alexnet mobilenet_v2 lstm"}
policies=${7:-"belady ours paper-doa paper-aoa paper-wdoa paper-vote save-on-cpu"}
rounds=${8:-1}
repo=$(cd "$(dirname "$0")/.." && pwd)
fakecuda="$build/tests/fakecuda"
lib="$build/interpose/libmemtool.so"
replay="$build/tests/apps/replay_train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Median step time (ms) of the steps from `first` on.
median_step() { awk -v first="$2" '$1 == "step-ms" && $2 >= first { print $3 }' "$1" | sort -n |
                awk '{ v[NR] = $1 } END { print (NR == 0) ? 0 : v[int((NR + 1) / 2)] }'; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2"; }

echo "== swap policies in the process: $steps steps (the last 4 timed), device = $percent% of the plain peak," \
     "compute $compute GB/s of bytes touched, link $link GB/s each way, $rounds round(s)"
printf '%-13s %-12s %9s %7s %7s %13s %7s %9s %9s %6s %6s %6s %5s  %s\n' model policy "step ms" "/plain" "spread" \
  "fakecuda peak" "budget" "out GB" "in GB" "sched" "rule" "demand" "late" "applies at exit"
least() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
most() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b > a) ? b : a }'; }
spread() { awk -v lo="$1" -v hi="$2" 'BEGIN { printf "%.0f%%", (lo > 0) ? 100 * (hi / lo - 1) : 0 }'; }
for model in $models; do
  cmd=("$replay" --log "$repo/tests/fixtures/traces/$model.log" --steps "$steps" --compute-gbps "$compute" --step-times)
  declare -A best=() worst=()
  plain=""
  plain_worst=""
  for ((round = 1; round <= rounds; ++round)); do
    # Each round runs plain and every policy once, side by side in time: a busy minute touches
    # them all alike, and the least of the rounds is each one's figure.
    LD_LIBRARY_PATH=$fakecuda FAKECUDA_STATS="$work/plain.json" "${cmd[@]}" > "$work/plain.out"
    peak=$(field "$work/plain.json" peak_bytes_in_use)
    step=$(median_step "$work/plain.out" 2)
    plain=$(least "$plain" "$step")
    plain_worst=$(most "$plain_worst" "$step")
    budget=$((peak * percent / 100))
    for policy in $policies; do
      log_level=warn
      [ "$policy" = ours ] && log_level=info
      if ! LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=swap MEMTOOL_SWAP_POLICY=$policy MEMTOOL_LOG=$log_level \
           MEMTOOL_BUDGET=$budget FAKECUDA_MEMORY_BYTES=$budget FAKECUDA_LINK_GBPS=$link \
           MEMTOOL_SUMMARY="$work/$policy.json" FAKECUDA_STATS="$work/$policy.stats.json" "${cmd[@]}" \
           > "$work/swap.out" 2> "$work/swap.err"; then
        echo "$model $policy: FAILED"; tail -3 "$work/swap.err"; continue
      fi
      # A run without verdicts (no plan, or the selector off) must not end the bench under pipefail.
      if [ "$policy" = ours ]; then
        { grep -E ' ms an iteration, |is the fastest: it applies| has no swaps: |chosen by prediction: |chosen after ' "$work/swap.err" || true; } | sed "s/^/  round $round: /" >> "$work/trial.txt"
      fi
      step=$(median_step "$work/swap.out" $((steps - 4)))
      best[$policy]=$(least "${best[$policy]:-}" "$step")
      worst[$policy]=$(most "${worst[$policy]:-}" "$step")
    done
  done
  printf '%-13s %-12s %9.1f %7s %7s %13s\n' "$model" plain "$plain" 1.00 "$(spread "$plain" "$plain_worst")" "$peak"
  for policy in $policies; do
    [ -n "${best[$policy]:-}" ] || continue
    step=${best[$policy]}
    s="$work/$policy.json"
    fakepeak=$(field "$work/$policy.stats.json" peak_bytes_in_use)
    printf '%-13s %-12s %9.1f %7.2f %7s %13s %6.1f%% %9.2f %9.2f %6s %6s %6s %5s  %s\n' "$model" "$policy" "$step" \
      "$(awk -v a="$step" -v b="$plain" 'BEGIN { print a / b }')" "$(spread "$step" "${worst[$policy]}")" "$fakepeak" \
      "$(awk -v a="$fakepeak" -v b="$peak" 'BEGIN { print 100 * a / b }')" \
      "$(awk -v b="$(field "$s" bytes_swapped_out)" 'BEGIN { print b / 1e9 }')" \
      "$(awk -v b="$(field "$s" bytes_swapped_in)" 'BEGIN { print b / 1e9 }')" \
      "$(field "$s" swap_ins_scheduled)" "$(field "$s" swap_ins_ahead)" "$(field "$s" swap_ins_on_demand)" \
      "$(field "$s" swap_ins_late)" "$(field "$s" swap_schedule)"
  done
  if [ -s "$work/trial.txt" ]; then
    echo "$model: ours' selector in the process"; cat "$work/trial.txt"; rm -f "$work/trial.txt"
  fi
  unset best worst
done
