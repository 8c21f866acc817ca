#!/usr/bin/env bash
# The tree's C, C++ and CUDA sources against .clang-format, with clang-format 14 (the version the
# tree is formatted with: another version formats some constructs differently).
#   scripts/check_format.sh          report files that differ; exit 1 if any does
#   scripts/check_format.sh --fix    format them in place
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/clang_tool.sh
formatter=$(clang_tool clang-format) || { echo "check_format: clang-format 14 not found (scripts/setup.sh installs it)" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh')
else
  mapfile -t files < <(find . -path ./build -prune -o -path './build-*' -prune -o -path ./out -prune -o \
    -type f \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.h' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
if [ "${1:-}" = "--fix" ]; then
  printf '%s\0' "${files[@]}" | xargs -0 "$formatter" -i
  exit 0
fi
report=$(printf '%s\0' "${files[@]}" | xargs -0 "$formatter" --dry-run --Werror 2>&1) && exit_code=0 || exit_code=$?
if [ "$exit_code" -ne 0 ]; then
  echo "check_format: not formatted (make format fixes it):" >&2
  grep -o '^[^:]*:[0-9]*:[0-9]*: error' <<<"$report" | cut -d: -f1 | sort -u | sed 's/^/  /' >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
