#!/usr/bin/env bash
# What the CUPTI tracer adds per launch: bench/overhead_probe with the tracer off and on
# (MEMTOOL_CUPTI=off / on), in alternating runs, and the medians side by side. On fakecuda with
# fakecupti by default; with --driver libcuda.so.1 --cupti <libcupti> and a real module on a GPU.
# A traced launch costs the direct call (which CUPTI slows down itself, driver side: `direct`)
# plus what libmemtool.so adds (`added`: recording, and with the tracer the external id pushed
# and popped); the tracer's cost per launch is total(on) - total(off).
#
#   bench/cupti_overhead.sh [--build DIR] [--driver LIBCUDA] [--cupti LIBCUPTI] [--module IMAGE]
#                           [--rounds N] [--samples N] [--seconds S]
set -euo pipefail
build=build
driver="" cupti="" module="" rounds=3 samples=400 seconds=4
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --cupti) cupti=$2; shift 2 ;;
    --module) module=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "cupti_overhead.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$driver" ] || driver="$build/tests/fakecuda/libcuda.so.1"
[ -n "$cupti" ] || cupti="$build/tests/fakecupti/lib64/libcupti.so.13"
[ -n "$module" ] || module="$build/tests/apps/app_kernels.fakecuda"
probe="$build/bench/overhead_probe"
preload="$build/interpose/libmemtool.so"
for f in "$probe" "$preload" "$driver" "$cupti" "$module"; do
  [ -e "$f" ] || { echo "cupti_overhead.sh: missing $f" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  for mode in off on; do
    env MEMTOOL_CUPTI=$mode MEMTOOL_CUPTI_LIBRARY="$cupti" LD_LIBRARY_PATH="$(dirname "$driver")" \
      "$probe" --driver "$driver" --preload "$preload" --module "$module" --samples "$samples" \
      --seconds "$seconds" >"$out/$mode.$r.json"
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def runs(mode):
    return [json.load(open(f"{out}/{mode}.{r}.json")) for r in range(rounds)]
def med(values):
    return statistics.median(values)
rows = {}
for mode in ("off", "on"):
    rs = runs(mode)
    for call in ("launch", "alloc_free"):
        direct = med([r[call]["direct_ns"] for r in rs])
        added = med([r[call]["added_ns"] for r in rs])
        totals = [r[call]["direct_ns"] + r[call]["added_ns"] for r in rs]
        rows[(mode, call)] = (direct, added, med(totals), min(totals), max(totals))
print(f"rounds: {rounds} of each, alternating; medians of per-round medians (ns per call)")
print(f"{'call':<11} {'tracer':<6} {'direct':>8} {'added':>8} {'total':>8}  total range")
for call in ("launch", "alloc_free"):
    for mode in ("off", "on"):
        d, a, t, lo, hi = rows[(mode, call)]
        print(f"{call:<11} {mode:<6} {d:8.1f} {a:8.1f} {t:8.1f}  {lo:.1f}-{hi:.1f}")
    print(f"{call:<11} tracer adds {rows[('on', call)][2] - rows[('off', call)][2]:.1f} ns per call")
PY
