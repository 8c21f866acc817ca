#!/usr/bin/env bash
# `memtool simulate` on the three shared training traces (tests/fixtures/traces/*.snapshot.json),
# all in one run: each allocator's peak reserved bytes, over the whole run and in the last
# (steady) iteration, as ratios to the peak live bytes and to PyTorch's caching allocator, and
# the replay's wall time.
#   bench/bench_simulate.sh [BUILD]      (default: build)
set -euo pipefail
build=${1:-build}
memtool="$build/tools/memtool/memtool"
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-13s %-16s %14s %9s %10s %14s %10s\n' model resource "peak reserved" "/ live" "/ pytorch" "last iteration" "/ pytorch"
for model in alexnet mobilenet_v2 lstm; do
  start=$(date +%s.%N)
  "$memtool" simulate --format json "$root/tests/fixtures/traces/$model.snapshot.json" >"$work/$model.json"
  end=$(date +%s.%N)
  python3 - "$work/$model.json" "$model" "$(echo "$end - $start" | bc -l)" <<'PY'
import json, sys
resources = json.load(open(sys.argv[1]))["resources"]
by_name = {r["name"]: r for r in resources}
torch = by_name["pytorch-caching"]
for r in resources:
    print(f'{sys.argv[2]:<13} {r["name"]:<16} {r["peak_reserved_bytes"] / 2**20:10.1f} MiB {r["fragmentation"]:9.4f}'
          f' {r["peak_reserved_bytes"] / torch["peak_reserved_bytes"]:10.4f}'
          f' {r["steady_peak_reserved_bytes"] / 2**20:10.1f} MiB'
          f' {r["steady_peak_reserved_bytes"] / torch["steady_peak_reserved_bytes"]:10.4f}')
print(f'{sys.argv[2]:<13} (replay of all four: {float(sys.argv[3]):.2f} s wall)')
PY
done
