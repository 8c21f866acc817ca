#!/usr/bin/env bash
# clang-tidy 14 (checks in .clang-tidy) over memtool's own translation units — engine, interpose,
# planner, swapper, trace, cupti_tracer, tools — as compiled in BUILD (its compile_commands.json).
#   scripts/lint.sh BUILD [FILE…]    every unit, or only those named; exit 1 on any finding
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/lint.sh BUILD [FILE...]}
shift
database="$build/compile_commands.json"
[ -f "$database" ] || { echo "lint: $database not found (configure $build first)" >&2; exit 1; }
source scripts/clang_tool.sh
tidy=$(clang_tool clang-tidy) || { echo "lint: clang-tidy 14 not found (scripts/setup.sh installs it)" >&2; exit 1; }
if (($#)); then
  units=("$@")
else
  mapfile -t units < <(python3 - "$database" "$PWD" <<'PY'
import json, os, sys
stages = ("engine", "interpose", "planner", "swapper", "trace", "cupti_tracer", "tools")
root = sys.argv[2]
for entry in json.load(open(sys.argv[1])):
    path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), root)
    if path.split(os.sep)[0] in stages:
        print(path)
PY
)
fi
echo "lint: ${#units[@]} translation units with $tidy, ${JOBS:-$(nproc)} at a time" >&2
failed=0
# The build's own -Werror and gcc-only warning flags are not clang-tidy's business.
printf '%s\0' "${units[@]}" | xargs -0 -P "${JOBS:-$(nproc)}" -n 4 "$tidy" -p "$build" --quiet \
  --extra-arg=-Wno-error --extra-arg=-Wno-unknown-warning-option 2>/dev/null >"$build/lint.log" || failed=1
if grep -q 'error:' "$build/lint.log"; then
  grep -E 'error:' "$build/lint.log" | sort -u >&2
  echo "lint: findings above (full output in $build/lint.log)" >&2
  exit 1
fi
if ((failed)); then
  cat "$build/lint.log" >&2
  echo "lint: clang-tidy failed (output above)" >&2
  exit 1
fi
echo "lint: ${#units[@]} units clean"
