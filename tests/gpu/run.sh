#!/usr/bin/env bash
# The one script to run on a machine with a real GPU (docs: DESIGN.md §7). It leaves everything in
# one results folder and prints a summary at the end; the whole run stays under 8 minutes.
#
#   tests/gpu/run.sh [--build DIR] [--out DIR] [--budget SECONDS] [--models "resnet50 transformer"]
#                    [--strategy NAME]... [--module IMAGE] [--no-torch] [--fakecuda DIR]
# --build: a build folder made on the development machine (default: build/); --module: the kernel
# image the apps load (default: app_kernels.fatbin of the apps, else compiled here).
# --fakecuda DIR: a rehearsal without a GPU: fakecuda's libcuda.so.1 from DIR stands in for the
# driver and every stage but torch runs, so the script itself is tested before the one real run
# (ctest runs it so: gpu.run_sh.rehearsal_on_fakecuda).
#
# Stages, each under a timeout and skipped (with a note) when its prerequisite is missing:
#   1. machine    nvidia-smi, driver, toolkit and PyTorch versions (no GPU: note it, exit 0)
#   2. apps       the test apps from --build (carried from the development machine), or rebuilt
#                 here with nvcc + g++ from tests/apps when the carried ones are missing or cannot
#                 run on this system; app_kernels.fatbin likewise
#   3. ctest      `ctest -L gpu` in --build when that build's CTest files are valid here
#   4. preload    each app against the real driver, plain and with LD_PRELOAD=libmemtool.so
#                 (MEMTOOL_TRACE set), in record mode and each --strategy (default: pool, swap
#                 and swap-uvm: every buffer swappable under a 64 KiB budget, so each one goes
#                 out and comes back through VMM copies or managed-memory prefetches):
#                 checksums must be identical
#   4b. overhead  bench/overhead_probe: the time libmemtool.so adds per cuMemAlloc/cuMemFree and per
#                 cuLaunchKernel against this driver (paired blocks, median), into overhead.json
#   4c. cupti     the apps with MEMTOOL_CUPTI=on: every launch timed and joined in the trace, the
#                 same calls recorded as without CUPTI; overhead_probe with the tracer off and on
#                 (overhead-cupti-off.json, overhead-cupti-on.json)
#   5. torch      PyTorch training steps (torchvision ResNet-50, a GPT-2-size transformer; random
#                 weights and data, no downloads): the caching allocator, then
#                 PYTORCH_NO_CUDA_MEMORY_CACHING=1 plain, under libmemtool.so recording, and in
#                 pool mode (MEMTOOL_SUMMARY kept); losses must be
#                 bit-identical, step times and peak memory are compared; traces are kept.
#                 Then CUDA graphs: torch.cuda.graph (backend:cudaMallocAsync) and
#                 torch.compile(mode="reduce-overhead") steps of a small MLP, plain, recorded,
#                 pooled and swapped (explicit, UVM) at 60%: losses bit-identical
#   6b. exports   each trace exported (memory-viz checked; opened by torch.cuda._memory_viz with
#                 torch); PyTorch under backend:cudaMallocAsync recorded, against the caching allocator
#   6. summary    summary.txt in the results folder, and on stdout
# Exit status: 0 when nothing that ran disagreed (skips included), 1 on a mismatch or failure.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build="$repo/build"
out=""
budget=450            # seconds for the whole run, leaving margin under the 8 minutes
models="resnet50 transformer"
strategies=()  # strategies besides record for the test apps (default: pool swap swap-uvm)
module=""
run_torch=1
fakecuda=""
while (($#)); do
  case "$1" in
    --build) build=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --strategy) strategies+=("$2"); shift 2 ;;
    --module) module=$2; shift 2 ;;
    --no-torch) run_torch=0; shift ;;
    --fakecuda) fakecuda=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
((${#strategies[@]})) || strategies=(pool swap swap-uvm)
[ -n "$out" ] || out="$repo/tests/gpu/results/$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out/logs" "$out/traces" || { echo "run.sh: cannot create $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
summary="$out/summary.txt"
: >"$summary"
start=$SECONDS
failures=0

note() { echo "$*" | tee -a "$summary"; }
remaining() { echo $((budget - (SECONDS - start))); }
# guarded SECONDS LOG cmd…: runs cmd under a timeout bounded by what is left of the budget;
# stdout goes to LOG (what runs are compared on), stderr to LOG.stderr.
guarded() {
  local limit=$1 log=$2
  shift 2
  local left
  left=$(remaining)
  ((limit > left)) && limit=$left
  if ((limit < 5)); then
    echo "out of time budget" >"$log.stderr"
    return 124
  fi
  timeout --kill-after=5 "$limit" "$@" >"$log" 2>"$log.stderr"
  local rc=$?
  ((rc == 124 || rc == 137)) && echo "timed out after $limit s" >>"$log.stderr"
  return $rc
}
# why LOG: the last line of a failed command's stderr (else of its stdout).
why() { if [ -s "$1.stderr" ]; then tail -n1 "$1.stderr"; else tail -n1 "$1" 2>/dev/null; fi; }
stage() { note ""; note "== $* ($((SECONDS - start)) s into the run)"; }

finish() {
  stage "summary"
  note "results folder: $out"
  note "wall time: $((SECONDS - start)) s; mismatches or failures: $failures"
  if ((failures)); then
    note "RESULT: FAIL"
    exit 1
  fi
  note "RESULT: OK"
  exit 0
}

# ---------------------------------------------------------------------------------------- 1
stage "machine"
note "date: $(date -u +%FT%TZ); host: $(uname -srm)"
if [ -n "$fakecuda" ]; then
  [ -f "$fakecuda/libcuda.so.1" ] || { note "FAIL: --fakecuda: no libcuda.so.1 in $fakecuda"; failures=1; finish; }
  note "REHEARSAL: fakecuda ($fakecuda) stands in for the driver; no GPU, no torch"
  export LD_LIBRARY_PATH="$fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export FAKECUDA_DEVICES=2  # two_gpu_train's second device; the other apps use the first
  echo "fakecuda, 4096 MiB, 13000, none" >"$out/gpus.csv"
  run_torch=0
  [ -n "$module" ] || module="$build/tests/apps/app_kernels.fakecuda"
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  note "SKIP: no nvidia-smi on this machine: no GPU stages run"
  finish
elif ! guarded 30 "$out/logs/nvidia-smi.txt" nvidia-smi ||
   ! guarded 30 "$out/gpus.csv" nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader ||
   ! [ -s "$out/gpus.csv" ]; then
  note "SKIP: nvidia-smi finds no usable GPU (see logs/nvidia-smi.txt): no GPU stages run"
  finish
fi
note "gpu: $(head -n1 "$out/gpus.csv")"
compute_cap=$(head -n1 "$out/gpus.csv" | awk -F', *' '{print $4}' | tr -d '.')
cuda_home=${CUDA_HOME:-/usr/local/cuda}
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x "$cuda_home/bin/nvcc" ] && nvcc="$cuda_home/bin/nvcc"
if [ -n "$nvcc" ]; then note "nvcc: $("$nvcc" --version | tail -n1)"; else note "nvcc: none"; fi
python=$(command -v python3 || command -v python || true)

# ---------------------------------------------------------------------------------------- 2
stage "apps"
apps="$build/tests/apps"
app_programs=(mlp_train conv_train mlp_train_getproc conv_train_getproc)
# The carried programs may need a newer libc/libstdc++ than this system has: try one first.
apps_usable() {
  local dir=$1 p
  for p in "${app_programs[@]}"; do [ -x "$dir/$p" ] || return 1; done
  guarded 20 "$out/logs/apps-probe.txt" "$dir/mlp_train" --help
}
if apps_usable "$apps"; then
  note "apps: carried build $apps"
else
  note "apps: no usable carried build in $apps ($(why "$out/logs/apps-probe.txt")); rebuilding here"
  apps="$out/apps-build"
  mkdir -p "$apps"
  src="$repo/tests/apps"
  cxx=$(command -v g++ || command -v c++ || true)
  if [ -z "$cxx" ] || [ ! -f "$cuda_home/include/cuda.h" ]; then
    note "SKIP: cannot rebuild the apps (compiler: ${cxx:-none}; cuda.h: $cuda_home/include)"
    apps=""
  else
    common=("$src/common/arguments.cpp" "$src/common/check.cpp" "$src/common/driver_api_getproc.cpp" "$src/common/options.cpp"
            "$src/common/session.cpp" "$src/common/synthetic_data.cpp")
    flags=(-std=c++20 -O2 -I"$cuda_home/include")
    ok=1
    for app in mlp conv; do
      guarded 120 "$out/logs/build-${app}_train.txt" "$cxx" "${flags[@]}" -o "$apps/${app}_train" \
        "$src/$app/${app}_train.cpp" "$src/$app/${app}_model.cpp" "$src/common/driver_api_linked.cpp" \
        "${common[@]}" -L"$cuda_home/lib64/stubs" -L"$cuda_home/lib64" -lcuda -ldl || ok=0
      guarded 120 "$out/logs/build-${app}_train_getproc.txt" "$cxx" "${flags[@]}" \
        -o "$apps/${app}_train_getproc" "$src/$app/${app}_train_getproc.cpp" \
        "$src/$app/${app}_model.cpp" "${common[@]}" -ldl || ok=0
    done
    # The CUDA-graph apps (issue 32): the same common files and the graphed MLP.
    graphed=("$src/graphed/graphed_mlp.cpp" "$src/graphed/graphed_options.cpp" "$src/graphed/torch_graph_train.cpp"
             "$src/mlp/mlp_model.cpp" "$src/conv/conv_model.cpp")
    for program in graphed_train xla_train; do
      guarded 120 "$out/logs/build-$program.txt" "$cxx" "${flags[@]}" -pthread -o "$apps/$program" \
        "$src/graphed/$program.cpp" "${graphed[@]}" "$src/common/driver_api_linked.cpp" "${common[@]}" \
        -L"$cuda_home/lib64/stubs" -L"$cuda_home/lib64" -lcuda -ldl || ok=0
    done
    guarded 120 "$out/logs/build-graphed_train_getproc.txt" "$cxx" "${flags[@]}" -pthread \
      -o "$apps/graphed_train_getproc" "$src/graphed/graphed_train_getproc.cpp" "${graphed[@]}" "${common[@]}" -ldl || ok=0
    guarded 120 "$out/logs/build-table_train.txt" "$cxx" "${flags[@]}" -o "$apps/table_train" \
      "$src/adversarial/table_train.cpp" "$src/adversarial/table_options.cpp" "$src/adversarial/table_step.cpp" \
      "$src/common/driver_api_linked.cpp" "${common[@]}" -L"$cuda_home/lib64/stubs" -L"$cuda_home/lib64" -lcuda -ldl || ok=0
    # The framework-shaped programs (issue 33): one file each, the driver linked.
    for program in ipc_ring_train pool_step_train two_gpu_train ce_collective_train ptds_handoff_train \
                   value_wait_free_train; do
      guarded 120 "$out/logs/build-$program.txt" "$cxx" "${flags[@]}" -pthread -o "$apps/$program" \
        "$src/frameworks/$program.cpp" -L"$cuda_home/lib64/stubs" -L"$cuda_home/lib64" -lcuda || ok=0
    done
    if ((ok)); then
      note "apps: rebuilt in $apps"
    else
      note "FAIL: rebuilding the apps (see logs/build-*.txt)"
      failures=$((failures + 1))
      apps=""
    fi
  fi
fi
if [ -n "$apps" ]; then
  if [ -n "$module" ]; then
    :
  elif [ -s "$apps/app_kernels.fatbin" ]; then
    module="$apps/app_kernels.fatbin"
  elif [ -n "$nvcc" ]; then
    module="$out/app_kernels.fatbin"
    arch=${compute_cap:-90}
    if guarded 180 "$out/logs/nvcc.txt" "$nvcc" -fatbin -O3 -std=c++17 \
         -gencode "arch=compute_$arch,code=sm_$arch" -gencode "arch=compute_$arch,code=compute_$arch" \
         -o "$module" "$repo/tests/apps/kernels/app_kernels.cu"; then
      note "apps: app_kernels.fatbin compiled here for sm_$arch"
    else
      note "FAIL: nvcc app_kernels.cu (see logs/nvcc.txt)"
      failures=$((failures + 1))
      module=""
    fi
  else
    note "SKIP: no app_kernels.fatbin and no nvcc to make one"
  fi
fi
[ -n "$module" ] && note "apps: module $module"

# ---------------------------------------------------------------------------------------- 3
stage "ctest -L gpu"
if [ -n "$fakecuda" ]; then
  note "SKIP: rehearsal (the gpu-labelled tests need a real GPU)"
elif ! command -v ctest >/dev/null 2>&1; then
  note "SKIP: no ctest"
elif [ ! -f "$build/CTestTestfile.cmake" ] || ! grep -q "$build" "$build/CTestTestfile.cmake"; then
  note "SKIP: no CTest files for $build on this machine (a carried build keeps its origin's paths)"
else
  if guarded 150 "$out/logs/ctest-gpu.txt" ctest --test-dir "$build" -L gpu --output-on-failure; then
    note "ctest: $(grep -E 'tests passed|tests failed' "$out/logs/ctest-gpu.txt" | tail -n1)"
  else
    note "FAIL: ctest -L gpu: $(grep -E 'tests passed|tests failed' "$out/logs/ctest-gpu.txt" | tail -n1; why "$out/logs/ctest-gpu.txt")"
    failures=$((failures + 1))
  fi
fi

# ---------------------------------------------------------------------------------------- 4
stage "apps: plain vs libmemtool.so"
preload="$build/interpose/libmemtool.so"
[ -f "$preload" ] || { note "SKIP (preload runs): no $preload"; preload=""; }
memtool_cli="$build/tools/memtool/memtool"
if [ -n "$apps" ] && [ -n "$module" ]; then
  ptds_side=1024
  [ -n "$fakecuda" ] && ptds_side=192
  # Runs: "name|program|args…" — the linked apps, and the cudart-style clients in both modes.
  runs=("mlp_train|mlp_train|" "conv_train|conv_train|"
        "mlp_train_getproc|mlp_train_getproc|" "conv_train_getproc_ptsz|conv_train_getproc|--per-thread"
        "mlp_train_getproc_13000|mlp_train_getproc|--cuda-version 13000"
        # CUDA graphs (issue 32): torch.cuda.graph's shape (one graph, global capture, a loader
        # thread beside it), make_graphed_callables' (forward and backward graphs, thread-local),
        # cudart's route to the graph entry points, XLA's hand-built graph updated every step.
        "graphed_train|graphed_train|" "graphed_train_split|graphed_train|--graphs split --capture-mode thread-local"
        "graphed_train_getproc|graphed_train_getproc|--per-thread" "xla_train|xla_train|"
        # Kernels that reach their buffers through pointer tables (issue 33): built by kernels,
        # and published in a device global (the grouped kernels then take no pointer at all).
        "table_train_kernel|table_train|--table kernel --through written --refresh --layers 4 --groups 2 --words 65536"
        "table_train_global|table_train|--table global --layers 4 --groups 2 --words 65536"
        # Issue 33: NCCL's legacy IPC ring between two processes (exports of served buffers).
        "ipc_ring_train|ipc_ring_train|"
        # XLA's step on a memory pool of its own (cuMemAllocFromPoolAsync, pool export, trim).
        "pool_step_train|pool_step_train|"
        # Two GPUs in one process with peer reads (on one GPU it prints a skip line).
        "two_gpu_train|two_gpu_train|"
        # PyTorch's cudaMallocAsync backend on two GPUs: peers granted by cuMemPoolSetAccess only.
        "two_gpu_train_pool_grant|two_gpu_train|--pool-grant"
        # NCCL's copy-engine collective: batch copies, write/wait values, prefetch and advice, in
        # CUDA 13's generation and (through cuGetProcAddress) the first ones.
        "ce_collective_train|ce_collective_train|" "ce_collective_train_old_abi|ce_collective_train|--old-abi"
        # Two threads handing memory between their per-thread default streams under a slow matmul
        # (slow enough on a GPU at 1024; fakecuda's host matmul is slow at its default, 192).
        "ptds_handoff_train|ptds_handoff_train|--side ${ptds_side}"
        # A buffer freed while its copy out would queue behind another stream's value wait (NCCL's
        # proxy holding a stream on a flag): memtool must neither wait on the host nor hang there.
        "value_wait_free_train|value_wait_free_train|")
  for entry in "${runs[@]}"; do
    IFS='|' read -r name program args <<<"$entry"
    if [ ! -x "$apps/$program" ]; then
      note "SKIP: $name: no $apps/$program (a build from before the graph apps)"
      continue
    fi
    read -ra extra <<<"$args"
    cmd=("$apps/$program" --iterations 30 --module "$module" "${extra[@]}")
    if ! guarded 60 "$out/logs/$name.plain.txt" env -u LD_PRELOAD "${cmd[@]}"; then
      note "FAIL: $name (plain): $(why "$out/logs/$name.plain.txt")"
      failures=$((failures + 1))
      continue
    fi
    if grep -q '^skip:' "$out/logs/$name.plain.txt"; then  # e.g. two_gpu_train on one GPU
      note "SKIP: $name: $(head -n1 "$out/logs/$name.plain.txt")"
      continue
    fi
    guarded 60 "$out/logs/$name.plain2.txt" env -u LD_PRELOAD "${cmd[@]}"
    if ! cmp -s "$out/logs/$name.plain.txt" "$out/logs/$name.plain2.txt"; then
      note "FAIL: $name is not deterministic on this GPU (logs/$name.plain*.txt)"
      failures=$((failures + 1))
    fi
    line="$name: $(tail -n1 "$out/logs/$name.plain.txt")"
    if [ -n "$preload" ]; then
      for strategy in record "${strategies[@]}"; do
        log="$out/logs/$name.$strategy.txt"
        if [ "$program" = ipc_ring_train ] && [ "$strategy" = swap-uvm ]; then
          line+="; swap-uvm: not run (managed memory cannot be exported: docs/swapping.md)"
          continue
        fi
        # swap, swap-uvm: a budget no iteration fits and every buffer a candidate.
        case "$strategy" in
          swap) app_swap_mode=explicit ;;
          swap-uvm) app_swap_mode=uvm ;;
          *) app_swap_mode="" ;;
        esac
        strategy_env=(MEMTOOL_STRATEGY="$strategy")
        [ -n "$app_swap_mode" ] && strategy_env=(MEMTOOL_STRATEGY=swap MEMTOOL_SWAP_MODE="$app_swap_mode" MEMTOOL_BUDGET=64K
                                                 MEMTOOL_SWAP_MIN_BYTES=0 MEMTOOL_SUMMARY="$out/logs/$name.$strategy.summary.json")
        # A preload the loader cannot load is ignored with a message: the trace proves it ran.
        if guarded 90 "$log" env LD_PRELOAD="$preload" "${strategy_env[@]}" \
             MEMTOOL_TRACE="$out/traces/$name.$strategy.%p.trace" MEMTOOL_LOG_FILE="$out/logs/$name.$strategy.memtool.log" \
             "${cmd[@]}" && cmp -s "$out/logs/$name.plain.txt" "$log"; then
          if [ "$strategy" = off ] || compgen -G "$out/traces/$name.$strategy.*.trace" >/dev/null; then
            line+="; $strategy: identical"
            # Identical proves something only if buffers went out and came back.
            if [ -n "$app_swap_mode" ] && [ -n "$python" ]; then
              moved=$("$python" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["bytes_swapped_out"], s["bytes_swapped_in"], s["swap_ins_on_demand"])' \
                      "$out/logs/$name.$strategy.summary.json" 2>/dev/null)
              read -r moved_out moved_in on_demand <<<"$moved"
              if [ "${moved_out:-0}" -gt 0 ] && [ "${moved_in:-0}" -gt 0 ]; then
                line+=" ($moved_out B out, $moved_in B in, $on_demand on demand)"
              else
                line+=" but NOTHING SWAPPED (logs/$name.$strategy.summary.json)"
                failures=$((failures + 1))
              fi
            fi
          else
            line+="; $strategy: identical but NO TRACE written: was libmemtool.so loaded? (logs/$name.$strategy.txt.stderr)"
            failures=$((failures + 1))
          fi
        else
          line+="; $strategy: DIFFERENT or failed (logs/$name.$strategy.txt)"
          failures=$((failures + 1))
        fi
      done
    fi
    note "$line"
  done
else
  note "SKIP: no apps or no GPU module"
fi

# ---------------------------------------------------------------------------------------- 4b
stage "overhead: what recording adds per call on this driver"
probe="$build/bench/overhead_probe"
if [ -x "$probe" ] && [ -n "$preload" ] && [ -n "$module" ]; then
  # The real libcuda.so.1, as the loader finds it; the goal on fakecuda is <= 100 ns per call.
  if guarded 60 "$out/overhead.json" "$probe" --driver libcuda.so.1 --preload "$preload" --module "$module" \
       --samples 2000 --seconds 15; then
    note "overhead (median added per call, direct call's own time): $(cat "$out/overhead.json")"
  else
    note "FAIL: overhead_probe: $(why "$out/overhead.json")"
    failures=$((failures + 1))
  fi
else
  note "SKIP: no overhead_probe in $build/bench, no libmemtool.so or no GPU module"
fi

# ---------------------------------------------------------------------------------------- 4c
stage "cupti: every launch's GPU time joined, and what CUPTI adds per launch"
# MEMTOOL_CUPTI=on: the apps recorded with GPU times. Each trace must time every launch
# (gpu_timed_launches == total_launches) and hold exactly the calls of the record run above (no
# event of CUPTI's own); overhead_probe with the tracer off and on gives the cost per launch.
# The rehearsal uses fakecupti from --build; on a GPU libmemtool.so finds libcupti itself.
cupti_lib=""
if [ -n "$fakecuda" ] && [ -f "$build/tests/fakecupti/lib64/libcupti.so.13" ]; then
  cupti_lib="$build/tests/fakecupti/lib64/libcupti.so.13"
fi
if [ -z "$preload" ] || [ -z "$apps" ] || [ -z "$module" ] || [ -z "$python" ] || [ ! -x "$memtool_cli" ]; then
  note "SKIP: no libmemtool.so, apps, module, python or memtool"
elif [ -n "$fakecuda" ] && [ -z "$cupti_lib" ]; then
  note "SKIP: rehearsal without fakecupti in $build/tests/fakecupti"
else
  cupti_env=(MEMTOOL_CUPTI=on)
  [ -n "$cupti_lib" ] && cupti_env+=(MEMTOOL_CUPTI_LIBRARY="$cupti_lib")
  for name in mlp_train conv_train; do
    log="$out/logs/$name.cupti.txt"
    trace="$out/traces/$name.cupti.trace"
    if ! guarded 90 "$log" env LD_PRELOAD="$preload" MEMTOOL_TRACE="$trace" MEMTOOL_LOG=info \
         MEMTOOL_LOG_FILE="$out/logs/$name.cupti.memtool.log" "${cupti_env[@]}" \
         "$apps/$name" --iterations 30 --module "$module"; then
      note "FAIL: $name with CUPTI: $(why "$log")"
      failures=$((failures + 1))
      continue
    fi
    if ! cmp -s "$out/logs/$name.plain.txt" "$log"; then
      note "FAIL: $name with CUPTI: checksums DIFFERENT from the plain run"
      failures=$((failures + 1))
      continue
    fi
    guarded 60 "$out/logs/$name.cupti.report.json" "$memtool_cli" report --format json "$trace"
    record_trace=$(compgen -G "$out/traces/$name.record.*.trace" | head -n1)
    [ -n "$record_trace" ] &&
      guarded 60 "$out/logs/$name.record.report.json" "$memtool_cli" report --format json "$record_trace"
    if verdict=$("$python" - "$out/logs/$name.cupti.report.json" "$out/logs/$name.record.report.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
g = c.get("gpu", {})
line = (f"{c['gpu_timed_launches']}/{c['total_launches']} launches timed, {g.get('timed_copies', 0)} copies, "
        f"{g.get('timed_memsets', 0)} memsets; {g.get('unjoined', 0)} GPU records name no call; "
        f"GPU busy {g.get('busy_ns', 0) / 1e6:.2f} ms of {g.get('span_ns', 0) / 1e6:.2f} ms")
ok = c["gpu_timed_launches"] == c["total_launches"] and c["total_launches"] > 0
try:
    r = json.load(open(sys.argv[2]))
    same = all(r[k] == c[k] for k in ("total_events", "total_allocs", "total_frees", "total_launches"))
    line += "; same calls as the record run" if same else "; calls DIFFER from the record run"
    ok = ok and same
except (OSError, ValueError):
    line += "; no record run to compare"
print(line)
sys.exit(0 if ok else 1)
PY
    ); then
      note "$name with CUPTI: identical; $verdict"
    else
      note "FAIL: $name with CUPTI: ${verdict:-no report}"
      failures=$((failures + 1))
    fi
  done
  if [ -x "$probe" ]; then
    probe_size=(--samples 2000 --seconds 15)
    [ -n "$fakecuda" ] && probe_size=(--samples 200 --seconds 3)  # the rehearsal proves it runs
    for mode in off on; do
      if guarded 60 "$out/overhead-cupti-$mode.json" env "${cupti_env[@]}" MEMTOOL_CUPTI=$mode \
           "$probe" --driver libcuda.so.1 --preload "$preload" --module "$module" "${probe_size[@]}"; then
        note "overhead, tracer $mode: $(cat "$out/overhead-cupti-$mode.json")"
      else
        note "FAIL: overhead_probe, tracer $mode: $(why "$out/overhead-cupti-$mode.json")"
        failures=$((failures + 1))
      fi
    done
  fi
fi

# ---------------------------------------------------------------------------------------- 5
stage "torch"
if ((!run_torch)); then
  note "SKIP: ${fakecuda:+rehearsal, }--no-torch"
elif [ -z "$python" ] || ! guarded 120 "$out/logs/torch-version.txt" "$python" -c \
     'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available()); assert torch.cuda.is_available()'; then
  note "SKIP: no PyTorch with CUDA ($(why "$out/logs/torch-version.txt"))"
else
  note "$(tail -n1 "$out/logs/torch-version.txt")"
  step="$repo/tests/gpu/torch_train_step.py"
  for model in $models; do
    common_env=(CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONHASHSEED=0)
    # name|extra environment
    configs=("caching|" "nocache|PYTORCH_NO_CUDA_MEMORY_CACHING=1")
    [ -n "$preload" ] && configs+=("memtool|PYTORCH_NO_CUDA_MEMORY_CACHING=1 LD_PRELOAD=$preload MEMTOOL_TRACE=$out/traces/$model.%p.trace MEMTOOL_LOG_FILE=$out/logs/$model.memtool.log"
      "pool|PYTORCH_NO_CUDA_MEMORY_CACHING=1 LD_PRELOAD=$preload MEMTOOL_STRATEGY=pool MEMTOOL_LOG=info MEMTOOL_SUMMARY=$out/$model.pool.summary.json MEMTOOL_LOG_FILE=$out/logs/$model.pool.memtool.log")
    for config in "${configs[@]}"; do
      IFS='|' read -r cname cenv <<<"$config"
      if (($(remaining) < 60)); then
        note "SKIP: $model/$cname: under 60 s of the budget left"
        continue
      fi
      # shellcheck disable=SC2086 # cenv is NAME=VALUE words
      if guarded 150 "$out/logs/$model.$cname.txt" env -u LD_PRELOAD "${common_env[@]}" $cenv \
           "$python" "$step" --model "$model" --iterations 8 --json "$out/$model.$cname.json"; then
        note "$model/$cname: $(grep '^summary' "$out/logs/$model.$cname.txt" | tail -n1)"
        if [ "$cname" = memtool ] && ! compgen -G "$out/traces/$model.*.trace" >/dev/null; then
          note "FAIL: $model/memtool wrote no trace: was libmemtool.so loaded? (logs/$model.$cname.txt.stderr)"
          failures=$((failures + 1))
        fi
      else
        note "FAIL: $model/$cname: $(why "$out/logs/$model.$cname.txt")"
        failures=$((failures + 1))
      fi
    done
    # Swap, explicit (VMM copies) and UVM mode with the swapper's schedule (ours), and explicit
    # with the rule alone (belady), at 60% of the no-caching run's sampled device peak: the step
    # must still train, bit-identical, and its step time and peak are compared with the plain
    # run's. 12 iterations: the schedule is learned from the first ones.
    for swap_run in explicit:ours uvm:ours explicit:belady; do
      swap_mode=${swap_run%%:*}
      swap_policy=${swap_run##*:}
      if [ -z "$preload" ] || [ ! -s "$out/$model.nocache.json" ] || (($(remaining) < 60)); then continue; fi
      run_name="swap-$swap_mode"
      [ "$swap_policy" != ours ] && run_name="swap-$swap_mode-$swap_policy"
      swap_budget=$("$python" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["device_bytes_used_peak_sampled"] * 0.6))' "$out/$model.nocache.json" 2>/dev/null)
      if [ -n "$swap_budget" ] && guarded 150 "$out/logs/$model.$run_name.txt" env -u LD_PRELOAD "${common_env[@]}" \
           PYTORCH_NO_CUDA_MEMORY_CACHING=1 LD_PRELOAD="$preload" MEMTOOL_STRATEGY=swap MEMTOOL_SWAP_MODE="$swap_mode" MEMTOOL_SWAP_POLICY="$swap_policy" \
           MEMTOOL_BUDGET="$swap_budget" MEMTOOL_LOG=info MEMTOOL_SUMMARY="$out/$model.$run_name.summary.json" \
           MEMTOOL_LOG_FILE="$out/logs/$model.$run_name.memtool.log" \
           "$python" "$step" --model "$model" --iterations 12 --json "$out/$model.$run_name.json"; then
        note "$model/$run_name (budget $swap_budget B): $(grep '^summary' "$out/logs/$model.$run_name.txt" | tail -n1)"
        note "$model/$run_name memtool: $(tail -n1 "$out/logs/$model.$run_name.memtool.log" 2>/dev/null)"
        # The link the schedule was planned with: measured from the copies timed while learning.
        note "$model/$run_name link: $("$python" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s.get("swap_link_source","-"), round(s.get("swap_link_to_host_bytes_per_s",0)/1e9,2), "GB/s to the host,", round(s.get("swap_link_to_device_bytes_per_s",0)/1e9,2), "GB/s back")' "$out/$model.$run_name.summary.json" 2>/dev/null)"
      else
        note "FAIL: $model/$run_name: $(why "$out/logs/$model.$run_name.txt")"
        failures=$((failures + 1))
      fi
    done
    # Losses must be bit-identical between the no-caching runs (with and without memtool).
    for cname in caching memtool pool swap-explicit swap-uvm swap-explicit-belady; do
      if [ ! -s "$out/$model.nocache.json" ] || [ ! -s "$out/$model.$cname.json" ]; then continue; fi
      if "$python" - "$out/$model.nocache.json" "$out/$model.$cname.json" <<'EOF'; then
import json, sys
a, b = (json.load(open(p))["losses_hex"] for p in sys.argv[1:3])
n = min(len(a), len(b))  # the swap runs train longer: the steps both ran
sys.exit(0 if n > 0 and a[:n] == b[:n] else 1)
EOF
        note "$model: losses nocache vs $cname: bit-identical"
      else
        note "$model: losses nocache vs $cname: DIFFERENT"
        [ "$cname" != caching ] && failures=$((failures + 1))  # the caching allocator may differ
      fi
    done
  done
  # CUDA graphs (issue 32): PyTorch's own capture (torch.cuda.graph, under
  # backend:cudaMallocAsync, so the capture's allocations are graph memory memtool must leave to
  # the graph) and torch.compile(mode="reduce-overhead") (CUDA graph trees, from the caching
  # allocator's pools) on the small MLP: plain, recorded, pooled, and swapped (explicit and UVM)
  # at 60% of the plain run's peak. Losses must be bit-identical to the plain run of the same
  # mode, and memtool must have seen the captures and replays.
  common_env=(CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONHASHSEED=0)
  for graph in cuda-graph compile; do
    alloc_env=()
    [ "$graph" = cuda-graph ] && alloc_env=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)
    base="mlp-$graph"
    configs=("plain|")
    if [ -n "$preload" ]; then
      configs+=("record|LD_PRELOAD=$preload MEMTOOL_STRATEGY=record MEMTOOL_TRACE=$out/traces/$base.%p.trace"
                "pool|LD_PRELOAD=$preload MEMTOOL_STRATEGY=pool" "swap-explicit|" "swap-uvm|")
    fi
    for config in "${configs[@]}"; do
      IFS='|' read -r cname cenv <<<"$config"
      if [ "${cname#swap-}" != "$cname" ]; then
        # The swap runs, at 60% of the plain run's sampled device peak.
        swap_budget=$("$python" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["device_bytes_used_peak_sampled"] * 0.6))' "$out/$base.plain.json" 2>/dev/null)
        [ -z "$swap_budget" ] && continue
        cenv="LD_PRELOAD=$preload MEMTOOL_STRATEGY=swap MEMTOOL_SWAP_MODE=${cname#swap-} MEMTOOL_BUDGET=$swap_budget"
      fi
      if (($(remaining) < 90)); then
        note "SKIP: $base/$cname: under 90 s of the budget left"
        continue
      fi
      [ "$cname" != plain ] && cenv+=" MEMTOOL_LOG=info MEMTOOL_SUMMARY=$out/$base.$cname.summary.json MEMTOOL_LOG_FILE=$out/logs/$base.$cname.memtool.log"
      # shellcheck disable=SC2086 # cenv is NAME=VALUE words
      if guarded 240 "$out/logs/$base.$cname.txt" env -u LD_PRELOAD "${common_env[@]}" "${alloc_env[@]}" $cenv \
           "$python" "$step" --model mlp --graph "$graph" --iterations 12 --json "$out/$base.$cname.json"; then
        line="$base/$cname: $(grep '^summary' "$out/logs/$base.$cname.txt" | tail -n1)"
        if [ "$cname" != plain ]; then
          line+="; memtool: $("$python" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["captures"], "captures,", s["graph_launches"], "graph launches (", s["period_graph_launches"], "a step,", s["opaque_graph_launches"], "opaque ),", s["graph_memory_bytes"], "B of graph memory,", s["allocs_from_pool"], "allocations from the pool,", s["bytes_swapped_out"], "B swapped out")' "$out/$base.$cname.summary.json" 2>/dev/null)"
        fi
        note "$line"
        if [ "$cname" = plain ]; then
          :
        elif "$python" -c 'import json,sys; a, b = (json.load(open(p))["losses_hex"] for p in sys.argv[1:3]); sys.exit(0 if a and a == b else 1)' \
               "$out/$base.plain.json" "$out/$base.$cname.json"; then
          note "$base: losses plain vs $cname: bit-identical"
        else
          note "$base: losses plain vs $cname: DIFFERENT"
          failures=$((failures + 1))
        fi
      else
        note "FAIL: $base/$cname: $(why "$out/logs/$base.$cname.txt")"
        failures=$((failures + 1))
      fi
    done
  done
fi

# ---------------------------------------------------------------------------------------- 6
stage "traces"
shopt -s nullglob
traces=("$out"/traces/*)
if ((${#traces[@]} == 0)); then
  note "no traces recorded"
else
  for t in "${traces[@]}"; do note "$(du -h "$t" | cut -f1)  ${t#"$out"/}"; done
  if [ -x "$memtool_cli" ] && guarded 10 "$out/logs/memtool-version.txt" "$memtool_cli" version; then
    for t in "${traces[@]}"; do
      base=$(basename "$t")
      guarded 60 "$out/logs/report-$base.txt" "$memtool_cli" report "$t" ||
        note "memtool report $base failed (logs/report-$base.txt)"
    done
    note "memtool report: logs/report-*.txt"
  else
    note "SKIP (reports): no runnable $memtool_cli"
  fi
fi

# --------------------------------------------------------------------------------------- 6b
# 6b. exports  every recorded trace exported (memory-viz, perfetto, html, chrome-json) and the
#              memory-viz file checked as PyTorch's viewer reads it (tests/cli/export/
#              check_export.py); with torch, also opened by torch.cuda._memory_viz (segsum, trace,
#              trace_plot, segment_plot). Then PyTorch as it is: backend:cudaMallocAsync plain and
#              recorded by `memtool record` (which sets it), step time and peak against the default
#              caching allocator, and which stream-ordered entry PyTorch reaches (the runtime
#              functions libc10_cuda imports, and the memory kinds the trace recorded).
stage "exports and PyTorch under backend:cudaMallocAsync"
checker="$repo/tests/cli/export/check_export.py"
has_torch=0
((run_torch)) && [ -n "$python" ] && "$python" -c 'import torch.cuda._memory_viz' >/dev/null 2>&1 && has_torch=1
export_trace() {  # export_trace TRACE: exports and checks one trace, notes one line
  local t=$1 base line f
  base=$(basename "$t")
  mkdir -p "$out/exports"
  line="$base:"
  if ! guarded 60 "$out/logs/report-json-$base.json" "$memtool_cli" report --format json "$t"; then
    note "FAIL: memtool report --format json $base: $(why "$out/logs/report-json-$base.json")"
    failures=$((failures + 1))
    return
  fi
  for f in memory-viz:pickle perfetto:pftrace html:html chrome-json:json; do
    if guarded 90 "$out/logs/export-$base.${f%%:*}.txt" "$memtool_cli" export --format "${f%%:*}" --time-limit 0.2 \
         -o "$out/exports/$base.${f##*:}" "$t"; then
      line+=" ${f%%:*} written"
    else
      line+=" ${f%%:*} FAILED"
      failures=$((failures + 1))
    fi
  done
  if [ -n "$python" ] && guarded 60 "$out/logs/check-$base.txt" "$python" "$checker" memory-viz \
       "$out/exports/$base.pickle" "$out/logs/report-json-$base.json"; then
    line+="; memory-viz checked"
  else
    line+="; memory-viz check FAILED ($(why "$out/logs/check-$base.txt"))"
    failures=$((failures + 1))
  fi
  if ((has_torch)); then
    if guarded 120 "$out/logs/memory_viz-$base.txt" "$python" - "$out/exports/$base.pickle" "$out/exports/$base.viz.html" <<'PY'; then
import pickle, sys
import torch.cuda._memory_viz as mv
snapshot = pickle.load(open(sys.argv[1], "rb"))
print(mv.segsum(snapshot))
print(mv.trace(snapshot)[-400:])
open(sys.argv[2], "w").write(mv.trace_plot(snapshot))
mv.segment_plot(snapshot)
print("memory_viz: opened", len(snapshot["device_traces"][0]), "entries")
PY
      line+="; torch.cuda._memory_viz opened it"
    else
      line+="; torch.cuda._memory_viz FAILED ($(why "$out/logs/memory_viz-$base.txt"))"
      failures=$((failures + 1))
    fi
  fi
  note "$line"
}
shopt -s nullglob
if [ ! -x "$memtool_cli" ]; then
  note "SKIP (exports): no runnable $memtool_cli"
else
  exported=0
  for t in "$out"/traces/*.trace; do
    case $t in *.pool.*|*.off.*) continue ;; esac  # the same programs as their record-mode traces
    if (($(remaining) < 30)); then note "SKIP: exports of the remaining traces: under 30 s left"; break; fi
    export_trace "$t"
    exported=$((exported + 1))
  done
  note "exports: $exported traces exported and checked"
fi
if ((!has_torch)); then
  note "SKIP: PyTorch under backend:cudaMallocAsync: ${fakecuda:+rehearsal, }no torch with torch.cuda._memory_viz"
elif [ ! -x "$memtool_cli" ] || (($(remaining) < 90)); then
  note "SKIP: PyTorch under backend:cudaMallocAsync: no memtool or under 90 s of the budget left"
else
  model=${models%% *}
  c10=$("$python" -c 'import glob, os, torch; print((glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libc10_cuda.so")) or [""])[0])' 2>/dev/null)
  if [ -n "$c10" ] && command -v nm >/dev/null 2>&1; then
    note "PyTorch's allocator imports: $(nm -D --undefined-only "$c10" | grep -oE 'cu(da)?Malloc(FromPool)?Async[A-Za-z0-9_]*' | sort -u | tr '\n' ' ')(cudaMallocAsync reaches cuMemAllocAsync, cudaMallocFromPoolAsync cuMemAllocFromPoolAsync)"
  fi
  common_env=(CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONHASHSEED=0)
  for cname in caching async async-recorded; do
    json="$out/$model.$cname.json"
    if [ "$cname" = caching ] && [ -s "$json" ]; then continue; fi  # stage 5 measured it
    cmd=("$python" "$repo/tests/gpu/torch_train_step.py" --model "$model" --iterations 8 --json "$json")
    envs=()
    case $cname in
      async) envs=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) ;;
      async-recorded) cmd=("$memtool_cli" record -o "$out/traces/$model.async.%p.trace" -- "${cmd[@]}") ;;
    esac
    if guarded 150 "$out/logs/$model.$cname.txt" env -u LD_PRELOAD -u PYTORCH_CUDA_ALLOC_CONF "${common_env[@]}" "${envs[@]}" "${cmd[@]}"; then
      note "$model/$cname: $(grep '^summary' "$out/logs/$model.$cname.txt" | tail -n1)"
    else
      note "FAIL: $model/$cname: $(why "$out/logs/$model.$cname.txt")"
      failures=$((failures + 1))
    fi
  done
  if [ -s "$out/$model.caching.json" ] && [ -s "$out/$model.async.json" ]; then
    note "$model: $("$python" - "$out/$model.caching.json" "$out/$model.async.json" "$out/$model.async-recorded.json" <<'PY'
import json, os, sys
runs = [json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None for p in sys.argv[1:]]
base = runs[0]
parts = []
for name, run in zip(("caching", "async", "async under memtool record"), runs):
    if run is None:
        continue
    parts.append("{}: step {:.2f} ms ({:+.1f}%), driver peak {:.0f} MiB ({:+.1f}%)".format(
        name, run["median_step_ms_after_first"],
        100 * (run["median_step_ms_after_first"] / base["median_step_ms_after_first"] - 1),
        run["device_bytes_used_peak_sampled"] / 2**20,
        100 * (run["device_bytes_used_peak_sampled"] / max(1, base["device_bytes_used_peak_sampled"]) - 1)))
print("; ".join(parts))
PY
)"
  fi
  for t in "$out"/traces/"$model".async.*.trace; do
    export_trace "$t"
    kinds=$("$python" -c 'import collections, json, sys; d = json.load(open(sys.argv[1])); print(dict(collections.Counter(e["args"]["memory"] for e in d["traceEvents"] if e["ph"] == "b")))' \
      "$out/exports/$(basename "$t").json" 2>/dev/null)
    note "$model/async-recorded: allocations by memory kind in the trace: ${kinds:-unknown}"
  done
fi
finish
