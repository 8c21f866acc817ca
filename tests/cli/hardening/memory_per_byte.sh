#!/bin/bash
# Peak memory of `memtool report` per byte of trace (issue 39, item 3): a generated trace of N
# one-byte buffers, none freed (every buffer live to the end: the index of live buffers at its
# largest), read with /usr/bin/time -v; the peak resident set, less the RSS of `memtool version`
# (the program itself), must stay under BOUND bytes per trace byte. CTest's bound, 20, is above the
# 16.9 measured (README.md, "Memory per command") and below the 22.1 of the std::map index of live
# buffers that LiveIndex replaced: it catches a per-buffer structure that grows back.
# Usage: memory_per_byte.sh MEMTOOL GENERATOR WORKDIR BUFFERS BOUND
set -u
memtool=$1 generator=$2 dir=$3 buffers=$4 bound=$5
mkdir -p "$dir" && cd "$dir" || exit 1
"$generator" many.trace "$buffers" || exit 1
peak_kb() { /usr/bin/time -v "$@" 2>&1 >/dev/null | sed -n 's/^\s*Maximum resident set size (kbytes): //p'; }
base=$(peak_kb "$memtool" version)
peak=$(peak_kb "$memtool" report many.trace)
bytes=$(stat -c %s many.trace)
per_byte=$(awk -v p="$peak" -v b="$base" -v n="$bytes" 'BEGIN { printf "%.1f", (p - b) * 1024 / n }')
echo "report: trace $bytes bytes, $buffers buffers; peak $peak KiB (memtool itself $base KiB): $per_byte bytes per trace byte"
awk -v x="$per_byte" -v bound="$bound" 'BEGIN { exit !(x <= bound) }' || { echo "FAIL: more than $bound bytes per trace byte"; exit 1; }
echo "ok: at most $bound bytes per trace byte"
