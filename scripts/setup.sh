#!/usr/bin/env bash
# Installs what memtool needs to build and test, from Debian's packages, when it is missing.
# Safe to run again: it installs nothing when everything is present.
set -euo pipefail

packages=(cmake g++ make libfmt-dev catch2 libunwind-dev libcli11-dev nlohmann-json3-dev
          clang-format-14 clang-tidy-14   # make format-check, make lint
          libbenchmark-dev python3
          python3-venv chromium    # export tests: a venv for PyPI's perfetto; headless Chromium
          groff-base man-db)       # packaging tests: the generated man pages render
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

# The export tests read Perfetto traces with the PyPI `perfetto` package's protobuf bindings, in
# a venv of their own (MEMTOOL_VENV, default build/venv, where CMake looks for it). Without PyPI
# the setup goes on and those tests skip, saying why.
venv=${MEMTOOL_VENV:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/venv"}
if ! "$venv/bin/python3" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' >/dev/null 2>&1; then
  echo "setup: making $venv with the PyPI perfetto package" >&2
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check perfetto; } >&2; then
    echo "setup: could not install perfetto from PyPI: the Perfetto export checks will skip" >&2
  fi
fi
# The wheel's auditwheel check (tests/packaging/check_wheel_floor.sh --auditwheel) uses PyPI's
# auditwheel from the same venv; without it that test skips, saying why.
if [ -x "$venv/bin/pip" ] && [ ! -x "$venv/bin/auditwheel" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check auditwheel >&2 ||
    echo "setup: could not install auditwheel from PyPI: the wheel's auditwheel check will skip" >&2
fi
