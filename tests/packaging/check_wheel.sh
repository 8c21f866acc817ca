#!/usr/bin/env bash
# The Python wheel: built from a build folder (packaging/python, pip wheel), installed into a fresh
# venv, and the demo's steps run with only the installed files: the `memtool` console script on
# the venv's PATH, its executable and libmemtool.so from the package (never the build tree).
# Usage: check_wheel.sh SOURCE_DIR BUILD_DIR FAKECUDA_DIR TEST_APP
set -euo pipefail
src=$1 build=$2 fakecuda=$3 app=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/memtool-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset MEMTOOL_LIBRARY
fail() { echo "FAIL: $*" >&2; exit 1; }
t0=$(date +%s)

python3 -m venv "$work/venv" || fail "python3 -m venv failed (scripts/setup.sh installs python3-venv)"
pip=("$work/venv/bin/python3" -m pip --disable-pip-version-check --quiet)
"${pip[@]}" wheel --no-build-isolation --no-deps --no-index -w "$work/dist" \
  --config-settings "build-dir=$build" "$src/packaging/python" || fail "pip wheel failed"
wheel=$(ls "$work"/dist/memtool-*.whl)
case "$(basename "$wheel")" in
  memtool-*-py3-none-manylinux_2_*_"$(uname -m)".whl) ;;
  *) fail "wheel tag: $(basename "$wheel")" ;;
esac
python3 -m zipfile -l "$wheel" >"$work/contents"
for f in memtool/bin/memtool memtool/lib/libmemtool.so memtool/_cli.py entry_points.txt RECORD; do
  grep -q "$f" "$work/contents" || fail "$f not in the wheel"
done
"${pip[@]}" install --no-index "$wheel" || fail "pip install failed"

# From here on only the venv: its bin first, the system's tools after (no build folder on PATH).
export PATH=$work/venv/bin:/usr/bin:/bin
cd "$work"
[ "$(command -v memtool)" = "$work/venv/bin/memtool" ] || fail "memtool on PATH is $(command -v memtool)"
site=$("$work/venv/bin/python3" -c 'import memtool; print(memtool.PACKAGE_DIR)')
memtool --version | grep -q "^memtool [0-9]" || fail "memtool --version"
python3 -m memtool version | grep -q "^memtool [0-9]" || fail "python -m memtool"

# The demo's steps (scripts/demo.sh): report on a real PyTorch trace, record a training program
# on fakecuda, report it, plan, and run it from a planned pool, bit-identical to the plain run.
memtool report --rows 5 "$src/tests/fixtures/traces/alexnet.snapshot.json" >report.out || fail "report"
grep -Eq "^iterations +8 " report.out || grep -q "iteration" report.out || fail "report says: $(head -5 report.out)"
LD_LIBRARY_PATH=$fakecuda memtool record -o conv.trace -- "$app" --iterations 8 >/dev/null 2>record.err ||
  fail "record: $(cat record.err)"
grep -qF "($site/lib/libmemtool.so)" record.err || fail "record preloaded another library: $(cat record.err)"
grep -q "memtool: trace written to conv.trace" record.err || fail "record: $(cat record.err)"
memtool report conv.trace | grep -q "events" || fail "report of the recorded trace"
memtool plan --time-limit 0.2 "$src/tests/fixtures/traces/alexnet.snapshot.json" | grep -q "lower bound" || fail "plan"
LD_LIBRARY_PATH=$fakecuda "$app" --iterations 40 >plain.out
LD_LIBRARY_PATH=$fakecuda memtool run --strategy pool -- "$app" --iterations 40 >pool.out 2>pool.err ||
  fail "run: $(cat pool.err)"
grep -qF "($site/lib/libmemtool.so)" pool.err || fail "run preloaded another library: $(cat pool.err)"
grep -Eq "memtool: served: [1-9][0-9]* iterations from a plan" pool.err || fail "run served nothing: $(cat pool.err)"
cmp -s plain.out pool.out || fail "checksums differ from the plain run"
LD_LIBRARY_PATH=$fakecuda memtool doctor --format json >doctor.json || fail "doctor: $(cat doctor.json)"
grep -qF "$site/lib/libmemtool.so" doctor.json || fail "doctor names another libmemtool.so"
echo "OK: $(basename "$wheel") installed in a fresh venv runs the demo's steps ($(($(date +%s) - t0)) s)"
