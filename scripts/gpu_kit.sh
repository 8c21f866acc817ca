#!/usr/bin/env bash
# Packs what tests/gpu/run.sh needs from a build into a folder small enough to carry to a GPU
# machine (the device tool carries at most 64 MiB; a build folder is ~800 MB): libmemtool.so,
# the memtool command, the test apps and their kernels, the overhead probe, without debug sections, in the build's
# own layout so that `run.sh --build <kit>` finds them.
# Usage: scripts/gpu_kit.sh [BUILD_DIR] [KIT_DIR]      (defaults: build, out/gpu-kit)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
kit=${2:-$repo/out/gpu-kit}

files=(
  interpose/libmemtool.so
  tools/memtool/memtool
  tests/apps/mlp_train tests/apps/conv_train
  tests/apps/mlp_train_getproc tests/apps/conv_train_getproc
  tests/apps/adversarial_train tests/apps/table_train
  tests/apps/app_kernels.fatbin
  bench/overhead_probe
)
rm -rf "$kit"
missing=()
for f in "${files[@]}"; do
  if [ ! -f "$build/$f" ]; then
    missing+=("$f")
    continue
  fi
  mkdir -p "$kit/$(dirname "$f")"
  case "$f" in
    *.fatbin) cp "$build/$f" "$kit/$f" ;;
    *) objcopy --strip-debug "$build/$f" "$kit/$f" ;;
  esac
done
if ((${#missing[@]})); then
  # app_kernels.fatbin needs nvcc at build time; run.sh compiles it there when it is missing.
  echo "gpu_kit: not in $build: ${missing[*]}" >&2
  for f in "${missing[@]}"; do [ "$f" = tests/apps/app_kernels.fatbin ] || exit 1; done
fi
git -C "$repo" rev-parse --short HEAD > "$kit/COMMIT" 2>/dev/null || true
echo "gpu_kit: $kit ($(du -sh "$kit" | cut -f1)); on the GPU machine: tests/gpu/run.sh --build ${kit#"$repo"/}"
