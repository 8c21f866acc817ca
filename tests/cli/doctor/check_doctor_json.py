"""`memtool doctor --format json` on fakecuda, its fields checked against what fakecuda was told
(FAKECUDA_DEVICES, FAKECUDA_MEMORY_BYTES) and what the environment holds.
Usage: check_doctor_json.py MEMTOOL [FAKECUPTI_LIBRARY]"""
import json
import os
import subprocess
import sys

memtool = sys.argv[1]
fakecupti = sys.argv[2] if len(sys.argv) > 2 else ""
env = dict(os.environ)
if fakecupti:
    env["MEMTOOL_CUPTI_LIBRARY"] = fakecupti
run = subprocess.run([memtool, "doctor", "--format", "json"], env=env, capture_output=True, text=True, timeout=60)
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)


expect(run.returncode == 0, f"exit status {run.returncode}, stderr: {run.stderr}")
report = json.loads(run.stdout)
checks = {c["check"]: c for c in report["checks"]}
driver = report["driver"]

capacities = [1 << 30, 2 << 30, 512 << 20]  # FAKECUDA_MEMORY_BYTES=1G,2G,512M
expect(driver["probe_completed"] and driver["loaded"] and driver["is_driver"], "the probe did not complete")
expect(driver["fakecuda"], "fakecuda not recognised")
expect(driver["path"].endswith("/libcuda.so.1"), f"driver path {driver['path']}")
expect(driver["version"] >= 12040, f"version {driver['version']}")
expect(driver["init_result"] == 0, f"cuInit {driver['init_result']}")
expect(driver["func_get_param_info"] and driver["graph_mem_alloc_node"], "driver functions not resolved")
expect([d["total_bytes"] for d in driver["devices"]] == capacities, f"devices {driver['devices']}")
for d in driver["devices"]:
    expect(d["context"] and d["free_bytes"] == d["total_bytes"], f"device {d['ordinal']} free bytes")
    expect(d["host_vmm"] and d["virtual_memory"] and d["memory_pools"] and d["managed_memory"]
           and d["concurrent_managed_access"], f"device {d['ordinal']} features {d}")
    expect(checks[f"device.{d['ordinal']}"]["verdict"] == "ok", f"device.{d['ordinal']} verdict")
expect(checks["devices"]["detail"] == "3 devices, 3.50 GiB in all", f"devices: {checks['devices']['detail']}")
for name in ("driver", "argument-scanning", "host-vmm", "uvm", "graph-memory", "libmemtool"):
    expect(checks[name]["verdict"] == "ok", f"{name}: {checks[name]}")
if fakecupti:
    expect(driver["cupti_path"] == fakecupti, f"cupti path {driver['cupti_path']} (wanted {fakecupti})")
    expect(checks["cupti"]["verdict"] == "ok" and fakecupti in checks["cupti"]["detail"], f"cupti: {checks['cupti']}")
# The environment: the caching allocator PyTorch was told to keep, the MEMTOOL_* values set.
expect(checks["framework.pytorch"]["verdict"] == "warn", f"pytorch: {checks['framework.pytorch']}")
expect(checks["env.MEMTOOL_LOG"] == {"check": "env.MEMTOOL_LOG", "verdict": "ok", "detail": "MEMTOOL_LOG=info",
                                     "fix": ""}, f"MEMTOOL_LOG: {checks.get('env.MEMTOOL_LOG')}")
expect(checks["env.MEMTOOL_BUDGET"]["verdict"] == "ok", "MEMTOOL_BUDGET")
counts = {v: sum(1 for c in report["checks"] if c["verdict"] == v) for v in ("ok", "info", "warn", "fail")}
expect(report["counts"] == counts and report["ok"] is True, f"counts {report['counts']} against {counts}")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures) + "\n" + run.stdout)
    sys.exit(1)
print(f"OK: memtool doctor --format json on fakecuda: {len(report['checks'])} checks, {counts}")
