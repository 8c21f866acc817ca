#!/usr/bin/env bash
# Swap mode against kernels that reach their buffers through pointer tables (issue 33): each
# program (tests/apps/adversarial/table_train variants, the alexnet replay with --table) runs
# RUNS times under each library and mode given, at PERCENT of its plain peak, on fakecuda with a
# modelled host link (LINK_GBPS each way) and a capacity of twice the plain peak, so a budget
# passed shows as a peak instead of a failure. Per row: runs corrupted (exit status not 0, or
# output not the plain run's; the words counted when the program says), fakecuda's peak against
# the budget (each run, in %), and wall time against the plain run's (table_train: the whole
# run; the replay: its steps' mean).
# Usage: bench/swap_tables.sh [BUILD_DIR] [RUNS] [PERCENT] [LINK_GBPS] [CONFIGS] [PROGRAMS]
#   CONFIGS: space-separated LABEL=LIBMEMTOOL:MODE ("" mode: the library's default), e.g.
#            "before=/tmp/old.so:explicit after=build/interpose/libmemtool.so:"
#   PROGRAMS: names from the list below (default: all)
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
runs=${2:-5}
percent=${3:-65}
link=${4:-0.55}
configs=${5:-"default=$build/interpose/libmemtool.so: explicit=$build/interpose/libmemtool.so:explicit"}
repo=$(cd "$(dirname "$0")/.." && pwd)
export LD_LIBRARY_PATH="$build/tests/fakecuda"
table="$build/tests/apps/table_train"
replay="$build/tests/apps/replay_train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A program
shape="--layers 4 --groups 2"  # 48 MiB of 2 MiB buffers, 6 steps: the default shape is slow on 2 cores
program[written_refresh]="$table $shape --through written --refresh"
program[kernel_refresh]="$table $shape --table kernel --refresh"
program[pageable_async_interior]="$table $shape --table pageable --through written --refresh --alloc async --interior"
program[in_large_refresh]="$table $shape --table-in-large --refresh"
program[global_all]="$table $shape --table global"
program[global_written]="$table $shape --table global --through written"
program[replay_all]="$replay --log $repo/tests/fixtures/traces/alexnet.log --steps 2 --compute-gbps 5 --step-times --table all"
program[replay_written]="$replay --log $repo/tests/fixtures/traces/alexnet.log --steps 2 --compute-gbps 5 --step-times --table written"
program[replay_all_async]="$replay --log $repo/tests/fixtures/traces/alexnet.log --steps 2 --compute-gbps 5 --step-times --table all --async"
order="written_refresh kernel_refresh pageable_async_interior in_large_refresh global_all global_written replay_all replay_written replay_all_async"
programs=${6:-$order}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
peak_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_bytes_in_use"])' "$1" 2>/dev/null || echo 0; }
# The replay's mean step time; table_train's: none (the run's wall time is used).
step_ms() { awk '$1 == "step-ms" { s += $3; n++ } END { if (n) printf "%.1f", s / n }' "$1"; }
# What the program says it found corrupted (table_train: per step; the replay: its last count).
words_of() { awk '$1 == "step" && $3 == "corrupted" { s += $4 } $1 == "step" && $7 == "corrupted" { r = $8 }
                  END { print s + r }' "$1"; }
# The lines that must match the plain run's (the replay's step-ms lines are times).
lines_of() { grep -v '^step-ms' "$1"; }

echo "== pointer tables under swap: $runs runs each at $percent% of the plain peak, link $link GB/s each way"
printf '%-24s %-10s %-9s %-26s %-36s %s\n' program config corrupted "words (corrupted runs)" "peak vs budget, % (each run)" "time / plain"
for name in $programs; do
  read -ra cmd <<<"${program[$name]}"
  start=$(now_ms)
  FAKECUDA_LINK_GBPS=$link FAKECUDA_STATS="$work/plain.json" "${cmd[@]}" > "$work/plain.out" 2> "$work/plain.err" ||
    { echo "$name: the plain run failed"; continue; }
  plain_ms=$(( $(now_ms) - start ))
  plain_step=$(step_ms "$work/plain.out")
  peak=$(peak_of "$work/plain.json")
  budget=$((peak * percent / 100))
  for config in $configs; do
    label=${config%%=*}
    spec=${config#*=}
    lib=${spec%:*}
    mode=${spec##*:}
    bad=0; words=""; peaks=""; times=""
    for ((i = 0; i < runs; ++i)); do
      rm -f "$work/swap.json"
      start=$(now_ms)
      env LD_PRELOAD="$lib" MEMTOOL_STRATEGY=swap ${mode:+MEMTOOL_SWAP_MODE=$mode} MEMTOOL_BUDGET=$budget \
        FAKECUDA_MEMORY_BYTES=$((2 * peak)) FAKECUDA_LINK_GBPS=$link FAKECUDA_STATS="$work/swap.json" \
        "${cmd[@]}" > "$work/swap.out" 2> "$work/swap.err"
      status=$?
      ms=$(( $(now_ms) - start ))
      if [ $status -ne 0 ] || ! cmp -s <(lines_of "$work/plain.out") <(lines_of "$work/swap.out"); then
        bad=$((bad + 1))
        words+=" $(words_of "$work/swap.out")$([ $status -gt 128 ] && echo "(signal $((status - 128)))")"
      fi
      p=$(peak_of "$work/swap.json")
      peaks+=" $(awk -v p="$p" -v b="$budget" 'BEGIN { if (p == 0) printf "?"; else printf "%+.1f", 100 * (p / b - 1) }')"
      step=$(step_ms "$work/swap.out")
      if [ -n "$plain_step" ] && [ -n "$step" ]; then
        times+=" $(awk -v a="$step" -v b="$plain_step" 'BEGIN { printf "%.2f", a / b }')"
      else
        times+=" $(awk -v a="$ms" -v b="$plain_ms" 'BEGIN { printf "%.2f", a / b }')"
      fi
    done
    printf '%-24s %-10s %-9s %-26s %-36s %s\n' "$name" "$label" "$bad/$runs" "${words:- -}" "$peaks" "$times"
  done
done
