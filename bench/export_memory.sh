#!/usr/bin/env bash
# Peak memory and time of `memtool export` (each format) and of `memtool report` (loading alone)
# on a synthetic training trace, against the trace file's size, all in one run:
#   bench/export_memory.sh [BUILD] [ITERATIONS] [BUFFERS]     (default: build 2000 400, ~2.4 M events)
set -euo pipefail
build=${1:-build}
iterations=${2:-2000}
buffers=${3:-400}
memtool="$build/tools/memtool/memtool"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trace="$work/train.trace"
"$build/tests/cli/make_training_trace" "$trace" "$iterations" "$buffers"
size=$(stat -c %s "$trace")
printf 'trace: %d iterations x %d buffers, %.1f MiB\n' "$iterations" "$buffers" "$(echo "$size / 1048576" | bc -l)"
printf '%-22s %10s %12s %9s %12s\n' command seconds "peak RSS" "RSS/trace" output
measure() {  # measure NAME OUTPUT command...
  local name=$1 output=$2
  shift 2
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr"; exit 1; }
  read -r seconds kib <"$work/time"
  local out_size=0
  [ -f "$output" ] && out_size=$(stat -c %s "$output")
  printf '%-22s %10s %10.1f MiB %8.2fx %10.1f MiB\n' "$name" "$seconds" "$(echo "$kib / 1024" | bc -l)" \
    "$(echo "$kib * 1024 / $size" | bc -l)" "$(echo "$out_size / 1048576" | bc -l)"
}
measure "report" /dev/null "$memtool" report "$trace"
for format in memory-viz perfetto chrome-json html; do
  measure "export $format" "$work/out.$format" "$memtool" export --format "$format" --time-limit 0.2 -o "$work/out.$format" "$trace"
done
measure "export memory-viz 5:9" "$work/out.window" "$memtool" export --format memory-viz --iterations 5:9 -o "$work/out.window" "$trace"
