#!/usr/bin/env bash
# Pool mode on the replays of recorded training runs (tests/apps/replay over the logs in
# tests/fixtures/traces): per model and mode, against the plain run — the step found (its
# allocations, and whether that is the log's step), steps planned, the share of allocations
# served from the plan from step FIRST on (step 0 is the warm-up, steps 1 and 2 are observed,
# so 3 is the first a plan can serve), the worst planned step's share, plans, re-plans, misses,
# fakecuda's device peak against the plain run's, corrupted words and the summary's state.
# Modes: sync (cuMemAlloc), async (cuMemAllocAsync), nolaunch (allocations and frees only), all
# three with the plans made on the calling thread (MEMTOOL_POOL_SYNC_PLANNING=1, so the figures
# do not depend on timing); background and bg-nolaunch: cuMemAlloc with and without launches,
# planned on the planner's own thread (the default).
# Usage: bench/replay_pool_models.sh [BUILD_DIR] [STEPS] [MODELS...]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-12}
shift $(( $# > 2 ? 2 : $# ))
repo=$(cd "$(dirname "$0")/.." && pwd)
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 bert_tiny gpt_tiny accum_cnn alexnet mobilenet_v2 lstm)
first=3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$build/tests/fakecuda"
replay="$build/tests/apps/replay_train"

printf '%-13s %-11s %-12s %7s %8s %8s %6s %7s %6s %11s %8s %s\n' model mode "step found" planned \
  "served" "worst" plans replans misses "peak/plain" corrupt state
for model in "${models[@]}"; do
  log="$repo/tests/fixtures/traces/$model.log"
  for mode in sync async nolaunch background bg-nolaunch; do
    extra=()
    planning=(MEMTOOL_POOL_SYNC_PLANNING=1)
    case $mode in async) extra=(--async) ;; nolaunch) extra=(--no-launches) ;; esac
    case $mode in background) planning=() ;; bg-nolaunch) planning=() extra=(--no-launches) ;; esac
    cmd=("$replay" --log "$log" --steps "$steps" "${extra[@]}")
    FAKECUDA_STATS="$work/plain.json" "${cmd[@]}" > "$work/plain.out"
    set +e
    env "${planning[@]}" FAKECUDA_STATS="$work/pool.json" LD_PRELOAD="$build/interpose/libmemtool.so" \
      MEMTOOL_STRATEGY=pool MEMTOOL_SUMMARY="$work/summary.json" "${cmd[@]}" > "$work/pool.out" 2> "$work/pool.err"
    status=$?
    set -e
    python3 - "$log" "$steps" "$first" "$model" "$mode" "$status" "$work" <<'PY'
import json, re, sys
log, steps, first, model, mode, status, work = sys.argv[1:]
steps, first = int(steps), int(first)
per_step, it = {}, None
for line in open(log):
    if line.startswith("I "): it = int(line.split()[1]); per_step[it] = 0
    elif line.startswith("A ") and it is not None: per_step[it] += 1
last = max(per_step)
allocs = [per_step[min(s, last)] for s in range(steps)]
s = json.load(open(work + "/summary.json"))
plain, pool = json.load(open(work + "/plain.json")), json.load(open(work + "/pool.json"))
corrupt = sum(int(m) for m in re.findall(r"corrupted (\d+)", open(work + "/pool.out").read()))
same = open(work + "/plain.out").read() == open(work + "/pool.out").read()
found = s.get("period_allocations", 0)
exact = "exact" if found == allocs[-1] else "NOT %d" % allocs[-1]
served = s["allocs_from_pool"] / max(1, sum(allocs[first:]))
worst = s.get("worst_step_served", 0) if s["iterations_planned"] > 0 else -1
print("%-13s %-11s %-12s %7d %7.1f%% %8s %6d %7d %6d %11.4f %8s %s%s" % (
    model, mode, "%d %s" % (found, exact), s["iterations_planned"], 100 * served,
    "%.1f%%" % (100 * worst) if worst >= 0 else "-", s["plans_made"], s["replans"], s["misses"],
    pool["peak_bytes_in_use"] / max(1, plain["peak_bytes_in_use"]), corrupt if same else "DIFF",
    s["state"] + (" (%s)" % s["state_reason"] if s.get("state_reason") else ""),
    "" if status == "0" else " (exit %s)" % status))
PY
  done
done
