#!/bin/bash
# A program's trace survives however the program ends (issue 39, item 4): _exit, abort,
# quick_exit, a segfault, exec and SIGKILL from outside, each after 5 iterations of 3
# allocations and 2 frees made within a second. Every trace must read with `memtool report`
# holding all 15 allocations and 10 frees, and be said to be cut short (no end record). A
# program that execs itself under the same MEMTOOL_TRACE keeps its trace; the new image records
# to <trace>.exec1.
# Usage: abrupt_ends.sh MEMTOOL LIBMEMTOOL FAKECUDA_DIR ABRUPT_END WORKDIR
set -u
memtool=$1 lib=$2 fakecuda=$3 app=$4 dir=$5
mkdir -p "$dir" && cd "$dir" && rm -f ./*.trace* ./*.out ./*.err
fail=0
say() {
  echo "$1"
  if [[ $1 == FAIL* ]]; then fail=1; fi
  return 0
}
under_memtool() {  # under_memtool TRACE ARGS...: the program preloaded, recording to TRACE
  local trace=$1
  shift
  env LD_LIBRARY_PATH="$fakecuda" LD_PRELOAD="$lib" MEMTOOL_TRACE="$trace" "$app" "$@"
}
# check NAME TRACE ALLOCS FREES CUT: the report of TRACE counts ALLOCS allocations and FREES
# frees; CUT=yes: it says the trace was cut short, no: it does not.
check() {
  local name=$1 trace=$2 allocs=$3 frees=$4 cut=$5 report
  report=$("$memtool" report "$trace" 2>&1)
  if [[ $report =~ events\ +[0-9]+\ \(([0-9]+)\ allocations,\ ([0-9]+)\ frees ]] &&
    [[ ${BASH_REMATCH[1]} == "$allocs" && ${BASH_REMATCH[2]} == "$frees" ]]; then
    say "ok: $name: $allocs allocations, $frees frees"
  else
    say "FAIL: $name: expected $allocs allocations and $frees frees in $trace: $report"
    return
  fi
  if [[ $report == *"has no end record"* || $report == *"ends inside a record"* ]]; then
    [[ $cut == yes ]] && say "ok: $name: cut short" || say "FAIL: $name: said cut short: $report"
  else
    [[ $cut == no ]] && say "ok: $name: complete" || say "FAIL: $name: not said cut short: $report"
  fi
}

for end in _exit abort quick_exit segv exec; do
  under_memtool "$end.trace" "$end" >"$end.out" 2>"$end.err"
  grep -q '^ready$' "$end.out" || say "FAIL: $end: the program did not get to its end: $(cat "$end.err")"
  check "$end" "$end.trace" 15 10 yes
done

# SIGKILL from outside, once the program said it is done (it then waits).
under_memtool wait.trace wait >wait.out 2>wait.err &
program=$!
for _ in $(seq 200); do grep -q '^ready$' wait.out && break; sleep 0.05; done
kill -KILL "$program"
wait "$program" 2>/dev/null
check "SIGKILL" wait.trace 15 10 yes

# exec of itself under the same trace: the first image's trace kept, the second image's beside it.
under_memtool self.trace exec-self >self.out 2>self.err
grep -q '^child done$' self.out || say "FAIL: exec-self: the child did not run: $(cat self.err)"
check "exec-self (before exec)" self.trace 15 10 yes
check "exec-self (after exec)" self.trace.exec1 2 1 no
grep -q "this process wrote that trace before it called exec" self.err &&
  say "ok: exec-self: said" || say "FAIL: exec-self: not said: $(cat self.err)"

# A normal end still closes the trace (end record, no reserved tail).
under_memtool normal.trace child >normal.out 2>normal.err
check "normal exit" normal.trace 2 1 no
exit $fail
