#!/usr/bin/env python3
"""Renders a `memtool export --format html` page in headless Chromium and checks what it shows.

    check_html.py PAGE.html REPORT_JSON [--chromium PATH] [--keep DIR]

Two browser runs: --dump-dom gives the page after its script ran, including the boxes the script
measured for every data-probe element (<pre id="memtool-layout">); --screenshot gives the pixels.
Checked against `memtool report --format json` of the same input:
  text    the peak's exact bytes, one iteration-table row per iteration, the first row of the
          largest-buffers table, the plan summary with the PyTorch baseline (when iterations exist)
  pixels  inside the live-bytes area at the peak's column (the area colour), an iteration mark
          (its colour), the centre of the plan's largest rectangle (its own fill), the pool and
          PyTorch bars (their colours)
The page's colours are those of trace/export/src/html_parts.hpp.
Exit status 0 when all holds, 1 on the first violation, 77 (CTest's skip) without Chromium.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

LIVE, MARK, POOL, PYTORCH = (0x4E, 0x79, 0xA7), (0xE1, 0x57, 0x59), (0x59, 0xA1, 0x4F), (0xF2, 0x8E, 0x2C)
WIDTH, HEIGHT = 1200, 3200


def read_png(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG, standard library only."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = previous[x]
            c = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + b) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, channels)])
        previous = line
    return width, height, rows


def hex_colour(text):
    return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))


class Violation(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Violation(message)


def chromium_run(chromium, page, *flags):
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--force-device-scale-factor=1", f"--window-size={WIDTH},{HEIGHT}", *flags,
               "file://" + os.path.abspath(page)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def main():
    args = sys.argv[1:]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    keep = None
    if "--chromium" in args:
        chromium = args[args.index("--chromium") + 1]
    if "--keep" in args:
        keep = args[args.index("--keep") + 1]
    page, report_path = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or not args[i - 1].startswith("--"))][:2]
    if not chromium:
        print("SKIP: no chromium on this machine (scripts/setup.sh installs Debian's chromium)")
        return 77
    report = json.load(open(report_path))
    work = keep or tempfile.mkdtemp(prefix="memtool-html-")
    os.makedirs(work, exist_ok=True)
    try:
        dom = chromium_run(chromium, page, "--dump-dom")
        expect(dom.returncode == 0, f"chromium --dump-dom failed: {dom.stderr[-400:]}")
        shot_path = os.path.join(work, "page.png")
        shot = chromium_run(chromium, page, f"--screenshot={shot_path}")
        expect(shot.returncode == 0 and os.path.exists(shot_path), f"chromium --screenshot failed: {shot.stderr[-400:]}")
        html = dom.stdout
        if keep:
            open(os.path.join(work, "page.dom.html"), "w").write(html)

        # Text, from the DOM after the script ran.
        layout_text = re.search(r'<pre id="memtool-layout" hidden="">(.*?)</pre>', html, re.S)
        expect(layout_text and layout_text.group(1).strip(), "the page's script did not run (no layout)")
        boxes = json.loads(layout_text.group(1).replace("&quot;", '"'))
        peak = report["peak_live_bytes"]
        expect(f"({peak} B) at event {report['peak_event']}" in html, f"the summary does not give the peak {peak} B")
        table = re.search(r'<table id="iteration-table">(.*?)</table>', html, re.S)
        rows = len(re.findall(r"<tr><td>", table.group(1))) if table else 0
        expect(rows == report["iteration_count"], f"{rows} iteration rows, the report has {report['iteration_count']}")
        largest = re.search(r'<table id="largest-table">.*?<tr><td>(\d+)</td><td data-bytes="(\d+)"', html, re.S)
        first = report["largest_at_peak"][0]
        expect(largest and (int(largest.group(1)), int(largest.group(2))) == (first["id"], first["size"]),
               f"largest buffer at the peak: page {largest and largest.groups()}, report {first}")
        if report["iteration_count"]:
            expect(re.search(r'<p id="plan-summary">.*pytorch would reserve', html), "no plan summary with the PyTorch baseline")

        # Pixels, where the script says the shapes are.
        width, height, pixels = read_png(shot_path)

        def colour_at(x, y):
            x, y = int(round(x)), int(round(y))
            expect(0 <= x < width and 0 <= y < height, f"({x}, {y}) is outside the {width}x{height} screenshot")
            return pixels[y][x]

        def check_colour(what, x, y, want, tolerance=6):
            got = colour_at(x, y)
            expect(all(abs(g - w) <= tolerance for g, w in zip(got, want)),
                   f"{what}: pixel ({int(x)}, {int(y)}) is {got}, expected {want}")

        area, dot = boxes["live-area"], boxes["peak"]
        check_colour("live area under the peak", dot["x"] + dot["width"] / 2, area["y"] + area["height"] - 3, LIVE)
        mark = boxes.get("mark-1") or boxes.get("mark-0")
        if report["iteration_count"]:
            expect(mark, "no iteration mark drawn")
            check_colour("iteration mark", mark["x"] + mark["width"] / 2, mark["y"] + mark["height"] / 2, MARK)
            rect = boxes["plan-largest"]
            check_colour("plan's largest rectangle", rect["x"] + rect["width"] / 2, rect["y"] + rect["height"] / 2,
                         hex_colour(rect["fill"]))
            for probe, want in (("bar-pool", POOL), ("bar-pytorch", PYTORCH)):
                bar = boxes[probe]
                check_colour(probe, bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] - 3, want)
    except Violation as v:
        print(f"FAIL: {page}: {v}")
        return 1
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"OK: {page}: text and {len(boxes)} measured shapes as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
