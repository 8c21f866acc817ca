#!/usr/bin/env bash
# The simulator against the process (issue 34): for each replay model and each budget, every swap
# policy runs in libmemtool.so on fakecuda (kernels take the bytes they touch at COMPUTE_GBPS, at
# least 5 us; copy engines at LINK_GBPS each way, as bench/replay_swap_policies.sh), the process
# writes the problem it planned from (MEMTOOL_SWAP_DUMP), and `memtool simulate --as-executor`
# predicts the same policy's step on that same problem. Printed per policy: the process's step
# (median of its last four steps, ms), the simulated step (the measured iteration's time, ms), their
# ratio, the problem's own step without swapping (its op times summed: "sim base"), the copies the
# simulation issues a step, and per point whether the two rank the policies alike: as simulated,
# and the policies other than the rule alone once calibrated by it as ours' selector calibrates
# (its miss a time per copy out of the rule's; a time a step leaves the simulated ranking).
#
# The problem carries the executor's host costs as the process measured them (its `host` record:
# per op, per copy, and the host's time back from a wait for the GPU, the sync probe's), which the
# simulation adds; SIM_ARGS="--op-cost 0 --copy-cost 0 --sync-cost 0" leaves them out, and
# SIM_ARGS="--sync-cost US" gives the last to problems written before it.
# The rule alone (belady) plans nothing and writes no problem: it is simulated on ours' problem
# (the same process setup, the same learning steps). ours is simulated as what applied at exit
# ("kept": its schedule, a runner-up or the rule alone, the selector's choice): a runner-up or the
# rule by the process's own prediction for them on its problem (the same simulator, in its log).
# Timings on a shared machine are noisy: differences under about 5-10% between two processes are
# not told apart (bench/RESULTS.md).
# Explicit mode (MEMTOOL_SWAP_MODE=explicit, or SWAP_MODE=uvm in the environment): the simulator
# models copies of the swapped bytes only, and in UVM mode fakecuda also moves managed memory a
# kernel first touches over the link.
# Usage: bench/simulator_vs_process.sh [BUILD_DIR] [STEPS] [PCTS] [MODELS] [POLICIES] [COMPUTE_GBPS] [LINK_GBPS] [SIM_ARGS]
#   PCTS: budgets in percent of the plain peak, e.g. "80 60 50"; SIM_ARGS: extra `memtool simulate`
#   options. KEEP=DIR keeps each run's problem, log and step time there; with SIM_ONLY=1 the
#   processes are not run again: the kept problems are simulated (with other SIM_ARGS).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-30}
pcts=${3:-"80 60 50"}
models=${4:-"lstm mobilenet_v2 alexnet resnet18"}
policies=${5:-"belady ours paper-doa paper-vote"}
compute=${6:-5}
link=${7:-0.55}
sim_args=${8:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
mode=${SWAP_MODE:-explicit}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Copies of what runs, so that a rebuild during the bench changes nothing under it.
mkdir -p "$work/fakecuda"
cp "$build/tests/fakecuda/libcuda.so.1" "$work/fakecuda/"
ln -s libcuda.so.1 "$work/fakecuda/libcuda.so"
cp "$build/interpose/libmemtool.so" "$build/tests/apps/replay_train" "$build/tools/memtool/memtool" "$work/"
fakecuda="$work/fakecuda"
lib="$work/libmemtool.so"
replay="$work/replay_train"
memtool="$work/memtool"
keep=${KEEP:-$work/keep}
mkdir -p "$keep"
sim_only=${SIM_ONLY:-0}
last=4
((steps > 3 * last)) || last=$(((steps + 2) / 3))

# Median step time (ms) of the steps from `first` on.
median_step() { awk -v first="$2" '$1 == "step-ms" && $2 >= first { print $3 }' "$1" | sort -n |
                awk '{ v[NR] = $1 } END { print (NR == 0) ? 0 : v[int((NR + 1) / 2)] }'; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2"; }
# The simulated step (ms) of `strategy`'s stick-to-limit row in memtool simulate's JSON report.
simulated_ms() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
for row in report["results"]:
    if row["strategy"] == sys.argv[2] and row["mode"] == "stick-to-limit":
        print("%.1f %d %d" % (row.get("time_ns", report["base_time_ns"] + row["stall_ns"]) / 1e6, row.get("copies", 0),
                              row.get("rule_swaps", 0)))
        break
else:
    print("- - -")
EOF
}

# The process's own prediction (ms, copies, the rule's copies out) of the candidate that applied
# at exit (`kept`, the summary's swap_schedule: "rule", "ours runner-up K (...)", or the
# schedule), from the last "as the executor runs them" line of its log; "- - -" for ours' own
# schedule (memtool simulate's).
as_run_ms() {
  python3 - "$1" "$2" <<'EOF'
import re, sys
lines = [l for l in open(sys.argv[1]) if "as the executor runs them" in l]
kept = sys.argv[2]
if not lines or not (kept == "rule" or "runner-up" in kept):
    print("- - -"); sys.exit()
said = lines[-1].split("as the executor runs them:", 1)[1]
want = "the rule alone" if kept == "rule" else "runner-up " + re.search(r"runner-up (\d+)", kept).group(1)
m = re.search(re.escape(want) + r" ([0-9.]+) ms \((\d+) copies(?:, (\d+) out by the rule)?", said)
print("%s %s %s" % (m.group(1), m.group(2), m.group(3) or "-") if m else "- - -")
EOF
}

echo "== simulator vs process: $mode mode, $steps steps (median of the last $last), compute $compute GB/s," \
     "link $link GB/s, simulate ${sim_args:-(no extra options)}"
printf '%-13s %4s %-10s %10s %10s %6s %9s %7s  %s\n' model pct policy "process ms" "sim ms" ratio "sim base" copies kept
for model in $models; do
  log="$repo/tests/fixtures/traces/$model.log"
  [ -f "$log" ] || { echo "$model: no trace $log"; continue; }
  cmd=("$replay" --log "$log" --module "$build/tests/apps/replay_kernels.fakecuda" --steps "$steps" --compute-gbps "$compute"
       --step-times)
  if [ "$sim_only" != 1 ]; then
    LD_LIBRARY_PATH=$fakecuda FAKECUDA_STATS="$work/plain.json" "${cmd[@]}" > "$keep/$model.plain.out"
    field "$work/plain.json" peak_bytes_in_use > "$keep/$model.peak"
  fi
  peak=$(cat "$keep/$model.peak")
  printf '%-13s %4s %-10s %10.1f\n' "$model" 100 plain "$(median_step "$keep/$model.plain.out" $((steps - last)))"
  for pct in $pcts; do
    budget=$((peak * pct / 100))
    at="$keep/$model.$pct"
    for policy in $policies; do
      [ "$sim_only" = 1 ] && break
      rm -f "$at.$policy.problem" "$at.$policy.out"
      if ! LD_LIBRARY_PATH=$fakecuda LD_PRELOAD=$lib MEMTOOL_STRATEGY=swap MEMTOOL_SWAP_MODE=$mode MEMTOOL_SWAP_POLICY=$policy \
           MEMTOOL_LOG=info MEMTOOL_BUDGET=$budget FAKECUDA_MEMORY_BYTES=$budget FAKECUDA_LINK_GBPS=$link \
           MEMTOOL_SWAP_DUMP="$at.$policy.problem" MEMTOOL_SUMMARY="$at.$policy.json" "${cmd[@]}" > "$at.$policy.out" 2> "$at.$policy.err"; then
        echo "$model $pct $policy: FAILED"; tail -3 "$at.$policy.err"; rm -f "$at.$policy.problem" "$at.$policy.out"; continue
      fi
    done
    : > "$work/rows"
    for policy in $policies; do
      [ -s "$at.$policy.out" ] || continue  # a failed run
      # What applied at exit (the summary's swap_schedule): ours may end on a runner-up or the rule.
      kept=$(field "$at.$policy.json" swap_schedule)
      echo "$policy $(median_step "$at.$policy.out" $((steps - last))) ${kept// /_}" >> "$work/rows"
    done
    while read -r policy process_ms kept; do
      problem="$at.$policy.problem"
      [ -f "$problem" ] || problem="$at.ours.problem"
      sim="-"
      base="-"
      copies="-"
      rule_out="-"
      # shellcheck disable=SC2086  # sim_args: several options
      if [ -f "$problem" ] && "$memtool" simulate "$problem" --swap "$policy" --format json $sim_args \
           > "$work/sim.json" 2> /dev/null; then
        read -r sim copies rule_out < <(simulated_ms "$work/sim.json" "$policy")
        base=$(python3 -c 'import json,sys; print("%.1f" % (json.load(open(sys.argv[1]))["base_time_ns"] / 1e6))' "$work/sim.json")
      fi
      # ours ended on a runner-up or the rule alone: the prediction of what ran, the process's own
      # simulation of that candidate on this problem (its log's "as the executor runs them").
      if [ "$policy" = ours ] && [ "$sim" != - ]; then
        read -r as_run as_copies as_rule_out < <(as_run_ms "$at.ours.err" "${kept//_/ }")
        if [ "$as_run" != - ]; then sim=$as_run; copies=$as_copies; rule_out=$as_rule_out; fi
      fi
      ratio=$(awk -v p="$process_ms" -v s="$sim" 'BEGIN { print (s + 0 > 0) ? sprintf("%.2f", p / s) : "-" }')
      printf '%-13s %4s %-10s %10.1f %10s %6s %9s %7s  %s\n' "$model" "$pct" "$policy" "$process_ms" "$sim" "$ratio" "$base" \
        "$copies" "${kept//_/ }"
      echo "$policy $process_ms $sim $rule_out" >> "$work/rank"
      echo "$model $pct $policy $process_ms $sim $copies" >> "$work/points"
    done < "$work/rows"
    # The simulated ranking once more on one problem (ours'): the same op times for every policy,
    # so a machine whose load moved between the processes does not reorder it.
    one="-"
    # shellcheck disable=SC2086
    if [ -s "$work/rank" ] && [ -f "$at.ours.problem" ] &&
       "$memtool" simulate "$at.ours.problem" --swap "${policies// /,}" --format json $sim_args > "$work/one.json" 2> /dev/null; then
      one="$work/one.json"
    fi
    if [ -s "$work/rank" ]; then
      python3 - "$work/rank" "$model" "$pct" "$one" "$work/calibrated" <<'EOF'
import json, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r[2] != "-"]
process = {r[0]: float(r[1]) for r in rows}
def counts(sim):
    # Pairs of policies the simulation tells apart (more than 1% between them) ordered alike by
    # the process; ties in the simulation (ours' schedule is the rule's) are not counted.
    names = sorted(sim, key=sim.get)
    told = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if sim[b] > 1.01 * sim[a]]
    return names, sum(1 for a, b in told if process[a] < process[b]), len(told)
def pairs(sim):
    names, alike, told = counts(sim)
    return "%s: %d of %d pairs alike" % (" < ".join(names), alike, told)
line = "%-13s %4s ranking: process %s; simulated %s" % (sys.argv[2], sys.argv[3],
       " < ".join(sorted(process, key=process.get)), pairs({r[0]: float(r[2]) for r in rows}))
if sys.argv[4] != "-":
    report = json.load(open(sys.argv[4]))
    t = {r["strategy"]: r.get("time_ns", 0) for r in report["results"] if r["mode"] == "stick-to-limit"}
    line += "; on ours' problem %s" % pairs({p: t[p] for p in process if p in t})
# The selector's calibration (engine/src/swap/selector.hpp): the rule alone's miss (process less
# simulation) as a time per copy out of the rule's, each other policy's simulation moved by it for
# each copy out its own rule makes; against a time a step, which moves all alike (the simulation's
# own ranking of the others).
rule = [r for r in rows if r[0] == "belady" and r[3] != "-" and float(r[3]) > 0]
others = [r for r in rows if r[0] != "belady" and r[3] != "-"]
if rule and len(others) > 1:
    per = (float(rule[0][1]) - float(rule[0][2])) / float(rule[0][3])
    by_step = {r[0]: float(r[2]) for r in others}
    by_copy = {r[0]: float(r[2]) + per * float(r[3]) for r in others}
    line += "; the others calibrated by the rule alone: a time a step %s; %.2f ms a copy out of the rule's %s" % (
        pairs(by_step), per, pairs(by_copy))
    with open(sys.argv[5], "a") as out:
        print(*counts(by_step)[1:], *counts(by_copy)[1:], file=out)
print(line)
EOF
    fi
    rm -f "$work/rank"
  done
done
# The host time per copy that best explains what the process took beyond the simulation (least
# squares through 0 over every point, one figure for the machine, not per model): a calibration
# for --copy-cost, to be checked with SIM_ONLY=1 SIM_ARGS="--copy-cost US".
if [ -s "$work/points" ]; then
  python3 - "$work/points" "$work/calibrated" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r[4] != "-"]
pts = [(float(r[3]) - float(r[4]), float(r[5])) for r in rows if r[5] != "-" and float(r[5]) > 0]
within = sum(1 for r in rows if abs(float(r[3]) / float(r[4]) - 1) <= 0.10)
print("within +-10%%: %d of %d points" % (within, len(rows)))
try:
    cal = [[int(v) for v in l.split()] for l in open(sys.argv[2]) if l.strip()]
    print("the others calibrated by the rule alone, pairs ranked alike: %d of %d by a time a step, "
          "%d of %d by a time per copy out of the rule's (the selector's)" % tuple(sum(c[i] for c in cal) for i in range(4)))
except FileNotFoundError:
    pass
if pts:
    fit = sum(d * c for d, c in pts) / sum(c * c for _, c in pts) * 1e3  # us a copy
    print("the host time per copy that fits the process's excess best: %.1f us (--copy-cost)" % fit)
EOF
fi
