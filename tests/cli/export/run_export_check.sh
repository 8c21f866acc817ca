#!/usr/bin/env bash
# One export test: `memtool export` of INPUT, `memtool report --format json` of the same input
# (with the same --iterations, if any), then the checker for that format.
#   run_export_check.sh MEMTOOL PYTHON OUTDIR FORMAT INPUT [export options...]
# FORMAT html is checked in headless Chromium (check_html.py), the others by check_export.py.
# Exit status: the checker's (77: skipped, with the reason on stdout).
set -uo pipefail
memtool=$1 python=$2 outdir=$3 format=$4 input=$5
shift 5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$outdir"
case $format in memory-viz) ext=pickle ;; perfetto) ext=pftrace ;; chrome-json) ext=json ;; *) ext=$format ;; esac
# The browser goes by the extension: a page must end in .html.
name="$(basename "$input")${1:+.$(echo "$*" | tr -c 'A-Za-z0-9\n' '_')}.$ext"
out="$outdir/$name"
report_args=()
window=()
for ((i = 1; i <= $#; i++)); do
  if [ "${!i}" = --iterations ]; then
    j=$((i + 1))
    report_args=(--iterations "${!j}")
    window=(--window)
  fi
done
"$memtool" export --format "$format" -o "$out" "$@" "$input" || { echo "FAIL: memtool export exited $?"; exit 1; }
"$memtool" report --format json "${report_args[@]}" "$input" >"$out.report.json" || { echo "FAIL: memtool report"; exit 1; }
if [ "$format" = html ]; then
  exec "$python" "$here/check_html.py" "$out" "$out.report.json"
fi
exec "$python" "$here/check_export.py" "$format" "$out" "$out.report.json" "${window[@]}"
