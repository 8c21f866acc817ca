#!/usr/bin/env bash
# The Debian package CPack makes of a build: its control fields, its files under /usr, and the
# memtool it carries unpacked (dpkg-deb -x) finding the package's own libmemtool.so.
# Usage: check_deb.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/memtool-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset MEMTOOL_LIBRARY
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"
cpack --config "$build/CPackConfig.cmake" -G DEB >cpack.log 2>&1 || fail "cpack: $(tail -5 cpack.log)"
deb=$(ls memtool_*_*.deb) || fail "no .deb written"
dpkg-deb -f "$deb" Package Depends >control
grep -qx "Package: memtool" control || fail "control: $(cat control)"
depends=$(sed -n 's/^Depends: libc6 (>= \([0-9.]*\))$/\1/p' control)
[ -n "$depends" ] || fail "control: $(cat control)"
dpkg-deb -c "$deb" >contents
for f in ./usr/bin/memtool ./usr/lib/libmemtool.so ./usr/share/man/man1/memtool.1 ./usr/share/man/man1/memtool-doctor.1 \
         ./usr/share/doc/memtool/README.md; do
  grep -q " $f\$" contents || fail "$f not in the package"
done
dpkg-deb -x "$deb" root
# The libc6 it depends on is new enough for every glibc symbol version the binaries need.
needed=$(objdump -T root/usr/bin/memtool root/usr/lib/libmemtool.so | grep -o 'GLIBC_2\.[0-9]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
[ "$(printf '%s\n%s\n' "$needed" "$depends" | sort -V | tail -1)" = "$depends" ] ||
  fail "Depends: libc6 (>= $depends), but the binaries need GLIBC_$needed"
root/usr/bin/memtool doctor --driver /nonexistent/libcuda.so.1 --format json >doctor.json || true
grep -qF "$work/root/usr/lib/libmemtool.so (memtool run and record preload it)" doctor.json ||
  fail "the unpacked memtool does not find its libmemtool.so: $(grep -A1 libmemtool doctor.json)"
echo "OK: $deb ($(du -k "$deb" | cut -f1) KiB, libc6 >= $depends, binaries need GLIBC_$needed)"
