#!/bin/bash
# Two outputs on one file (issue 39, item 5): MEMTOOL_LOG_FILE or MEMTOOL_SWAP_DUMP naming the
# trace (by path, and through a second name of the same inode), and two processes on one
# MEMTOOL_TRACE. Each trace must read back whole, and each clash be said in one line.
# Usage: two_outputs.sh MEMTOOL LIBMEMTOOL FAKECUDA_DIR CONV_TRAIN WORKDIR
set -u
memtool=$1 lib=$2 fakecuda=$3 app=$4 dir=$5
mkdir -p "$dir" && cd "$dir" && rm -f trace* log* dump* run*.out run*.err
fail=0
say() {
  echo "$1"
  if [[ $1 == FAIL* ]]; then fail=1; fi
  return 0
}
run() {  # run NAME ENV...: conv_train under memtool, stdout and stderr kept
  local name=$1
  shift
  env LD_LIBRARY_PATH="$fakecuda" LD_PRELOAD="$lib" "$@" "$app" --iterations 12 >"$name.out" 2>"$name.err"
}
events_of() { "$memtool" report "$1" 2>&1 | sed -n 's/^  events *\([0-9,]*\) .*/\1/p'; }

# The log file is the trace, by path and by a hard link's name.
run run1 MEMTOOL_TRACE=trace1 MEMTOOL_LOG_FILE=trace1 MEMTOOL_LOG=info
[[ $(events_of trace1) == 802 ]] && say "ok: log by path: trace reads" || say "FAIL: log by path: $(events_of trace1)"
grep -q "MEMTOOL_LOG_FILE and MEMTOOL_TRACE name the same file trace1" run1.err && say "ok: log by path: said" || say "FAIL: log by path: not said: $(cat run1.err)"
: >trace2 && ln -f trace2 log2
run run2 MEMTOOL_TRACE=trace2 MEMTOOL_LOG_FILE=log2 MEMTOOL_LOG=info
[[ $(events_of trace2) == 802 ]] && say "ok: log by inode: trace reads" || say "FAIL: log by inode: $(events_of trace2)"
grep -q "name the same file trace2" run2.err && say "ok: log by inode: said" || say "FAIL: log by inode: not said"

# The swap dump is the trace.
run run3 MEMTOOL_TRACE=trace3 MEMTOOL_SWAP_DUMP=trace3 MEMTOOL_STRATEGY=swap MEMTOOL_BUDGET=1M MEMTOOL_SWAP_MIN_BYTES=0
[[ $(events_of trace3) == 802 ]] && say "ok: swap dump: trace reads" || say "FAIL: swap dump: $(events_of trace3)"
grep -q "MEMTOOL_SWAP_DUMP and MEMTOOL_TRACE name the same file trace3" run3.err && say "ok: swap dump: said" || say "FAIL: swap dump: not said"

# Two processes on one trace: the second gets its own file and says so. (The second starts
# while the first runs: it holds the trace's lock until it exits.)
env LD_LIBRARY_PATH="$fakecuda" LD_PRELOAD="$lib" MEMTOOL_TRACE=trace4 "$app" --iterations 400 >run4a.out 2>run4a.err &
first=$!
for _ in $(seq 100); do [[ -s trace4 ]] && break; sleep 0.05; done
run run4b MEMTOOL_TRACE=trace4
wait $first
other=$(ls trace4.* 2>/dev/null)
[[ -n $other && $(events_of "$other") == 802 ]] && say "ok: two processes: the second's own trace reads" || say "FAIL: two processes: second trace '$other'"
[[ -n $(events_of trace4) && $(events_of trace4) != 802 ]] && say "ok: two processes: the first's trace reads" || say "FAIL: two processes: first trace $(events_of trace4)"
grep -q "another process is writing that trace; this one ([0-9]*) records to trace4\.[0-9]*" run4b.err && say "ok: two processes: said" || say "FAIL: two processes: not said: $(cat run4b.err)"
exit $fail
