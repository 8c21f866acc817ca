#!/usr/bin/env bash
# `cmake --install` of a build into a temporary prefix gives a memtool that works from there:
# bin/memtool finds lib/libmemtool.so relative to itself (also after the prefix is moved), runs
# a test program from a planned pool on fakecuda with the installed library, and the man pages
# (one per verb, generated from the CLI definitions) render and name every option --help names.
# Usage: check_install.sh BUILD_DIR FAKECUDA_DIR TEST_APP
set -euo pipefail
build=$1 fakecuda=$2 app=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/memtool-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset MEMTOOL_LIBRARY
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/memtool lib/libmemtool.so share/man/man1/memtool.1 share/doc/memtool/README.md; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done

# The verbs --help lists, each with its page; every long option of `memtool VERB --help` is on it.
verbs=$("$prefix/bin/memtool" --help | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1}')
[ -n "$verbs" ] || fail "no verbs in memtool --help"
for verb in $verbs; do
  page=$prefix/share/man/man1/memtool-$verb.1
  [ -f "$page" ] || fail "no man page for $verb"
  grep -q "^\\.TP\$" "$page" || fail "$page has no options"
  for option in $("$prefix/bin/memtool" "$verb" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
    grep -qF -- "${option//-/\\-}" "$page" || fail "$page does not document $option"
  done
  grep -qF "memtool\\-$verb\\fR(1)" "$prefix/share/man/man1/memtool.1" || fail "memtool.1 does not list $verb"
  warnings=$(groff -man -Tutf8 -ww -Wbreak -z "$page" 2>&1) || fail "groff failed on $page"  # every warning but line filling
  [ -z "$warnings" ] || fail "groff warns on $page: $warnings"
done
man -l "$prefix/share/man/man1/memtool-run.1" 2>/dev/null | grep -q "MEMTOOL_BUDGET" || fail "memtool-run(1) has no ENVIRONMENT"

# Runs: the plain program, then under the installed memtool, then with the prefix moved.
run_pool() {
  LD_LIBRARY_PATH=$fakecuda "$1/bin/memtool" run --strategy pool --no-framework-env -- "$app" --iterations 40 \
    >"$work/pool.out" 2>"$work/pool.err" || fail "memtool run failed: $(cat "$work/pool.err")"
  grep -qF "strategy pool: " "$work/pool.err" || fail "no strategy line: $(cat "$work/pool.err")"
  grep -qF "($1/lib/libmemtool.so)" "$work/pool.err" || fail "not the installed library: $(cat "$work/pool.err")"
  grep -Eq "memtool: served: [1-9][0-9]* iterations from a plan" "$work/pool.err" || fail "nothing served: $(cat "$work/pool.err")"
  cmp -s "$work/plain.out" "$work/pool.out" || fail "checksums differ from the plain run"
}
LD_LIBRARY_PATH=$fakecuda "$app" --iterations 40 >"$work/plain.out"
run_pool "$prefix"
mv "$prefix" "$work/moved"
run_pool "$work/moved"
echo "OK: installed memtool in $prefix runs from its own lib/libmemtool.so (also moved); $(echo $verbs | wc -w) man pages"
