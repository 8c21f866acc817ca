#!/usr/bin/env bash
# Installs what memtool needs to build and test, from Debian's packages, when it is missing.
# Safe to run again: it installs nothing when everything is present.
set -euo pipefail

packages=(cmake g++ make libfmt-dev catch2 libunwind-dev libcli11-dev nlohmann-json3-dev
          libbenchmark-dev python3)
optional=(clang libclang-rt-14-dev)   # libFuzzer and sanitizers; skipped if unavailable

missing=()
for p in "${packages[@]}" "${optional[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
  for p in "${optional[@]}"; do
    $sudo apt-get install -y -qq "$p" >/dev/null 2>&1 || echo "setup: optional $p not installed" >&2
  done
fi

if [ ! -f /usr/local/cuda/include/cuda.h ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "setup: the CUDA toolkit (headers) is expected at /usr/local/cuda; set CUDAToolkit_ROOT otherwise" >&2
fi
