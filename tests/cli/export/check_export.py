#!/usr/bin/env python3
"""Checks a `memtool export` file against `memtool report --format json` of the same input.

    check_export.py FORMAT EXPORTED REPORT_JSON [--window]

FORMAT is memory-viz, perfetto or chrome-json. With --window the report was made with the same
--iterations A:B as the export, and the figures to match are those of the selected iterations.

  memory-viz   only the pickle opcodes PyTorch's web viewer (MemoryViz.js) decodes, protocol 2-4;
               the snapshot layout torch.cuda.memory._snapshot() has; replayed backwards from the
               final `segments` as the viewer's segment view does (every block inside a segment at
               every step, free_requested then free_completed, segments tiled by their blocks, as
               torch.cuda._memory_viz.segsum asserts) and forwards for the live bytes: its peak and
               its allocation count are the report's.
  perfetto     decoded with the PyPI `perfetto` package's protobuf bindings (perfetto_trace_pb2):
               one sequence, every track declared with a declared parent, every interned name
               defined before use, slices balanced and never nested on a lane, timestamps in order
               per track, the live-bytes counter's peak and the buffer and iteration slices as in
               the report, a pool plan track when there are iterations.
  chrome-json  JSON; async buffer slices balanced per id, iteration slices balanced, the memory
               counter's peak is the report's.

Exit status: 0 when everything holds, 1 with the first violation, 77 (CTest's skip) when the
perfetto package is not installed (scripts/setup.sh installs it; PyPI may have been unreachable).
"""
import json
import pickle
import pickletools
import sys

# The opcodes MemoryViz.js's unpickler implements (torch/utils/viz/MemoryViz.js).
VIEWER_OPCODES = {
    "PROTO", "FRAME", "MARK", "STOP", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "APPEND", "APPENDS",
    "SETITEM", "SETITEMS", "DICT", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "BININT", "BININT1",
    "BININT2", "LONG1", "BINFLOAT", "NEWTRUE", "NEWFALSE", "NONE", "SHORT_BINUNICODE", "BINUNICODE",
    "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET", "MEMOIZE",
}


class Violation(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Violation(message)


def expected_figures(report, window):
    """(peak live bytes, allocations, iterations) the export must show."""
    its = report["iterations"]
    if window:
        return max(i["peak_live_bytes"] for i in its), sum(i["allocs"] for i in its), len(its)
    return report["peak_live_bytes"], report["total_allocs"], report["iteration_count"]


def check_memory_viz(path, report, window):
    data = open(path, "rb").read()
    expect(data[0] == 0x80 and 2 <= data[1] <= 4, f"pickle protocol {data[1]}: the viewer reads 2 to 4")
    used = {op.name for op, _, _ in pickletools.genops(data)}
    expect(used <= VIEWER_OPCODES, f"opcodes the web viewer cannot decode: {sorted(used - VIEWER_OPCODES)}")
    snapshot = pickle.loads(data)
    expect(isinstance(snapshot, dict) and {"segments", "device_traces"} <= snapshot.keys(), "not a snapshot dict")
    expect(isinstance(snapshot["device_traces"], list) and len(snapshot["device_traces"]) == 1, "one device trace")
    trace = snapshot["device_traces"][0]
    segment_keys = {"device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
                    "segment_type", "blocks"}
    entry_keys = {"action", "addr", "size", "stream", "time_us", "frames"}
    for e in trace:
        expect(entry_keys <= e.keys(), f"trace entry without {entry_keys - e.keys()}: {e}")
        for f in e["frames"]:
            expect({"filename", "line", "name"} <= f.keys(), f"frame without filename/line/name: {f}")

    # The final state, as the viewers build it: blocks tile their segment (segsum's assertion).
    segments = {}  # address -> size
    blocks = {}  # address -> size
    for s in snapshot["segments"]:
        expect(segment_keys <= s.keys(), f"segment without {segment_keys - s.keys()}")
        expect(s["device"] == 0, "segments of device 0")
        expect(sum(b["size"] for b in s["blocks"]) == s["total_size"], f"blocks do not tile segment {s['address']:#x}")
        address = s["address"]
        for b in s["blocks"]:
            expect(b["address"] == address, f"block at {b['address']:#x} not where its segment's blocks end")
            address += b["size"]
            if b["state"] == "active_allocated":
                blocks[b["address"]] = b["size"]
        segments[s["address"]] = s["total_size"]

    def inside(addr, size):
        return any(a <= addr and addr + size <= a + n for a, n in segments.items())

    # Backwards from the final state (MemoryViz.js simulate_memory): every step must find what it
    # undoes, and every block must lie inside a segment.
    pending = set()
    for i in range(len(trace) - 1, -1, -1):
        e = trace[i]
        action, addr, size = e["action"], e["addr"], e["size"]
        where = f"device_traces[0][{i}] ({action} {addr:#x})"
        if action == "free_completed":
            expect(i > 0 and trace[i - 1]["action"] == "free_requested" and trace[i - 1]["addr"] == addr,
                   f"{where}: not preceded by its free_requested")
            expect(addr not in blocks, f"{where}: the block is live again")
            expect(inside(addr, size), f"{where}: block outside every segment")
            blocks[addr] = size
            pending.add(addr)
        elif action == "free_requested":
            expect(addr in pending, f"{where}: no free_completed follows")
            pending.discard(addr)
        elif action == "alloc":
            expect(blocks.get(addr) == size, f"{where}: no live block of that size to undo")
            del blocks[addr]
        elif action == "segment_free":
            expect(all(not (addr <= a < addr + size) for a in segments), f"{where}: overlaps a live segment")
            segments[addr] = size
        elif action == "segment_alloc":
            expect(segments.get(addr) == size, f"{where}: no such segment")
            expect(not any(addr <= a < addr + size for a in blocks), f"{where}: segment still holds blocks")
            del segments[addr]
        else:
            raise Violation(f"{where}: unexpected action")

    # Forwards: live bytes (the buffers live before the window are what the backward walk left).
    live = sum(blocks.values())
    peak, allocs = live, 0
    for e in trace:
        if e["action"] == "alloc":
            live += e["size"]
            allocs += 1
            peak = max(peak, live)
        elif e["action"] == "free_completed":
            live -= e["size"]
    want_peak, want_allocs, _ = expected_figures(report, window)
    expect(peak == want_peak, f"peak live bytes {peak}, the report says {want_peak}")
    expect(allocs == want_allocs, f"{allocs} allocations, the report says {want_allocs}")
    return f"{len(trace)} entries, {len(snapshot['segments'])} final segments, peak {peak}"


def check_perfetto(path, report, window):
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    except ImportError as e:
        print(f"SKIP: the PyPI perfetto package is not installed ({e}); scripts/setup.sh installs it")
        sys.exit(77)
    trace = pb.Trace()
    trace.ParseFromString(open(path, "rb").read())
    tracks, parents, names = {}, {}, {}
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            expect(d.uuid not in tracks, f"track {d.uuid} declared twice")
            tracks[d.uuid] = d.name or d.process.process_name
            parents[d.uuid] = d.parent_uuid
    for uuid, parent in parents.items():
        expect(parent == 0 or parent in tracks, f"track {uuid} has an undeclared parent {parent}")
    open_slices, last_ts = {}, {}
    counts = {"buffers": 0, "iterations": 0, "plan": 0}
    live_peak = 0
    T = pb.TrackEvent
    for i, p in enumerate(trace.packet):
        expect(p.trusted_packet_sequence_id == 1, f"packet {i}: sequence {p.trusted_packet_sequence_id}")
        for n in p.interned_data.event_names:
            names[n.iid] = n.name
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        expect(e.track_uuid in tracks, f"packet {i}: undeclared track {e.track_uuid}")
        name = tracks[e.track_uuid]
        if e.type in (T.TYPE_SLICE_BEGIN, T.TYPE_INSTANT):
            expect(e.name_iid in names, f"packet {i}: name iid {e.name_iid} used before it is interned")
        if e.type == T.TYPE_SLICE_BEGIN:
            expect(open_slices.get(e.track_uuid, 0) == 0 or name == "iterations", f"packet {i}: nested slice on {name}")
            open_slices[e.track_uuid] = open_slices.get(e.track_uuid, 0) + 1
            key = {"buffers": "buffers", "iterations": "iterations", "planned buffers": "plan"}.get(name)
            if key:
                counts[key] += 1
        elif e.type == T.TYPE_SLICE_END:
            expect(open_slices.get(e.track_uuid, 0) > 0, f"packet {i}: slice end without a begin on {name}")
            open_slices[e.track_uuid] -= 1
        elif e.type == T.TYPE_COUNTER and name == "live bytes":
            live_peak = max(live_peak, e.counter_value)
        if name != "planned buffers" and not name.startswith("highest planned"):
            expect(p.timestamp >= last_ts.get(e.track_uuid, 0), f"packet {i}: time goes back on {name}")
            last_ts[e.track_uuid] = p.timestamp
    expect(all(v == 0 for v in open_slices.values()), "slices left open")
    want_peak, want_allocs, want_iterations = expected_figures(report, window)
    expect(live_peak == want_peak, f"live-bytes counter peaks at {live_peak}, the report says {want_peak}")
    if not window:
        expect(counts["buffers"] == want_allocs, f"{counts['buffers']} buffer slices, {want_allocs} allocations")
    expect(counts["iterations"] == want_iterations, f"{counts['iterations']} iteration slices, {want_iterations} iterations")
    if want_iterations:
        expect(any(n.startswith("pool plan") for n in tracks.values()) and counts["plan"] > 0, "no pool plan track")
    return f"{len(trace.packet)} packets, {len(tracks)} tracks, {counts}"


def check_chrome_json(path, report, window):
    doc = json.load(open(path))
    events = doc["traceEvents"]
    open_async, depth, peak = {}, 0, 0
    iterations = 0
    for i, e in enumerate(events):
        ph = e["ph"]
        expect(ph in {"M", "C", "b", "e", "B", "E", "i"}, f"event {i}: phase {ph}")
        if ph == "b":
            expect(e["id"] not in open_async, f"event {i}: buffer {e['id']} begins twice")
            open_async[e["id"]] = e["ts"]
        elif ph == "e":
            expect(e["id"] in open_async, f"event {i}: buffer {e['id']} ends before it begins")
            expect(float(e["ts"]) >= float(open_async.pop(e["id"])), f"event {i}: ends before it begins")
        elif ph == "B":
            depth += 1
            iterations += 1
            expect(depth == 1, f"event {i}: iterations nest")
        elif ph == "E":
            depth -= 1
            expect(depth == 0, f"event {i}: iteration end without a begin")
        elif ph == "C":
            peak = max(peak, e["args"]["live bytes"])
    expect(not open_async and depth == 0, "slices left open")
    want_peak, _, want_iterations = expected_figures(report, window)
    expect(peak == want_peak, f"memory counter peaks at {peak}, the report says {want_peak}")
    expect(iterations == want_iterations, f"{iterations} iteration slices, {want_iterations} iterations")
    return f"{len(events)} events"


def main():
    args = [a for a in sys.argv[1:] if a != "--window"]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    form, exported, report_path = args
    report = json.load(open(report_path))
    check = {"memory-viz": check_memory_viz, "perfetto": check_perfetto, "chrome-json": check_chrome_json}[form]
    try:
        summary = check(exported, report, "--window" in sys.argv)
    except Violation as v:
        print(f"FAIL: {exported}: {v}")
        return 1
    print(f"OK: {exported}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
