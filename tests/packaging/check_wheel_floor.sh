#!/usr/bin/env bash
# The wheel's platform tag against what its binaries really need: no binary in the wheel may
# need a glibc symbol version newer than the tag's floor (manylinux_X_Y: glibc X.Y), nor a
# libstdc++/libgcc version (GLIBCXX_, CXXABI_, GCC_) beyond that floor's manylinux policy, nor a
# library outside the policy's list; libstdc++ and libgcc must be inside (static, their symbols
# not exported), so libmemtool.so preloaded into a PyTorch process never meets the process's own.
# With MAX_FLOOR (e.g. 2.17) the tag itself may be no newer than that.
# --auditwheel: `auditwheel show` (PyPI's checker) must find the same tag; exits 77 (skipped)
# when auditwheel is not installed ($MEMTOOL_AUDITWHEEL, BUILD_DIR/venv/bin/auditwheel from
# scripts/setup.sh, on PATH, or as python3 -m auditwheel).
# Usage: check_wheel_floor.sh [--auditwheel] SOURCE_DIR BUILD_DIR [MAX_FLOOR]
# (MEMTOOL_WHEEL_FILE=WHEEL checks that wheel instead of building one from BUILD_DIR.)
set -euo pipefail
audit=0
if [ "${1:-}" = --auditwheel ]; then audit=1; shift; fi
src=$1 build=$2 max_floor=${3:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/memtool-wheel-floor.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Limits of the manylinux policies (auditwheel's policy/manylinux-policy.json, x86_64): the
# newest GLIBCXX_, CXXABI_ and GCC_ versions manylinux_2_17 (manylinux2014) and manylinux_2_28
# allow.
policy_limits() {  # floor minor -> "glibcxx cxxabi gcc"
  if (($1 < 28)); then echo "3.4.19 1.3.7 4.8.0"; else echo "3.4.24 1.3.11 7.0.0"; fi
}
allowed_libraries="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2"

newer() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$1" ]; }  # $1 > $2

if [ -n "${MEMTOOL_WHEEL_FILE:-}" ]; then  # a wheel made elsewhere (and how this check is checked)
  wheel=$(realpath "$MEMTOOL_WHEEL_FILE")
else
  python3 "$src/packaging/python/backend/memtool_wheel.py" "$work/dist" "$build" >/dev/null 2>"$work/build.log" ||
    fail "building the wheel: $(tail -5 "$work/build.log")"
  wheel=$(ls "$work"/dist/memtool-*.whl)
fi
name=$(basename "$wheel")
[[ $name =~ -manylinux_([0-9]+)_([0-9]+)_([a-z0-9_]+)\.whl$ ]] || fail "no manylinux tag in $name"
floor="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}" arch=${BASH_REMATCH[3]}

if ((audit)); then
  if [ -n "${MEMTOOL_AUDITWHEEL:-}" ]; then auditwheel=("$MEMTOOL_AUDITWHEEL")
  elif [ -x "$build/venv/bin/auditwheel" ]; then auditwheel=("$build/venv/bin/auditwheel")
  elif command -v auditwheel >/dev/null; then auditwheel=(auditwheel)
  elif python3 -c 'import auditwheel' 2>/dev/null; then auditwheel=(python3 -m auditwheel)
  else
    echo "SKIP: auditwheel is not installed (scripts/setup.sh or pip install auditwheel, or set MEMTOOL_AUDITWHEEL); $name unchecked"
    exit 77
  fi
  "${auditwheel[@]}" show "$wheel" >"$work/audit.out" 2>&1 || fail "auditwheel show: $(cat "$work/audit.out")"
  verdict=$(tr -s ' \n' ' ' <"$work/audit.out")
  expected="manylinux_${floor/./_}_$arch"
  grep -qF "consistent with the following platform tag: \"$expected\"" <<<"$verdict" ||
    fail "auditwheel finds another tag than $name's: $verdict"
  echo "OK: auditwheel: $name is consistent with $expected"
  exit 0
fi

if [ -n "$max_floor" ] && newer "$floor" "$max_floor"; then
  fail "$name needs glibc $floor, newer than the wanted floor $max_floor"
fi
read -r max_glibcxx max_cxxabi max_gcc <<<"$(policy_limits "${floor#*.}")"
(cd "$work" && python3 -m zipfile -e "$wheel" unpacked)
report=()
for binary in "$work"/unpacked/memtool/bin/memtool "$work"/unpacked/memtool/lib/libmemtool.so; do
  [ -f "$binary" ] || fail "${binary#"$work"/unpacked/} not in the wheel"
  short=${binary##*/}
  # The versions the binary requires (.gnu.version_r), whatever symbol asks for them.
  needed_versions=$(readelf -V --wide "$binary" | sed -n 's/.*Name: \([A-Z_]*_[0-9.]*\) .*/\1/p' | sort -u)
  newest_glibc=$(sed -n 's/^GLIBC_\([0-9.]*\)$/\1/p' <<<"$needed_versions" | sort -V | tail -1)
  [ -n "$newest_glibc" ] || fail "$short: no GLIBC_ version found (readelf -V)"
  if newer "$newest_glibc" "$floor"; then
    fail "$short needs GLIBC_$newest_glibc ($(objdump -T "$binary" | grep -F "GLIBC_$newest_glibc)" | awk '{print $NF}' | tr '\n' ' ')), newer than the tag's $floor"
  fi
  for family in GLIBCXX:$max_glibcxx CXXABI:$max_cxxabi GCC:$max_gcc; do
    prefix=${family%%:*} limit=${family#*:}
    for version in $(sed -n "s/^${prefix}_\([0-9.]*\)$/\1/p" <<<"$needed_versions"); do
      newer "$version" "$limit" && fail "$short needs ${prefix}_$version, beyond manylinux_${floor/./_}'s ${prefix}_$limit"
    done
  done
  for library in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ " $allowed_libraries " == *" $library "* ]] || fail "$short needs $library (the wheel must carry libstdc++/libgcc inside)"
  done
  exported=$(nm -D --defined-only "$binary" | awk '{print $NF}' | grep -cE '^(_ZN?St|_ZNKSt|__cxa_|__gxx_personality|_Unwind_)' || true)
  ((exported == 0)) || fail "$short exports $exported libstdc++/libgcc symbols"
  report+=("$short GLIBC_$newest_glibc")
done
echo "OK: $name: ${report[*]}; no GLIBCXX/CXXABI/GCC versions beyond manylinux_${floor/./_}'s policy${max_floor:+, floor <= $max_floor}"
