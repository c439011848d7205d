#!/usr/bin/env python3
"""heatmap_check.py - a diskmon heat map (--heatmap or --offset-map SVG)
recounted from diskmon's own -f json rows of the same input and filters.

Usage: heatmap_check.py latency|offset MAP.svg ROWS.json [NAME]
       heatmap_check.py size MAP.svg SPEC [NAME]

Every cell is one element with data-t0/data-t1 (seconds, whole ms) and
data-lat0/data-lat1 (ms, whole us) or data-off0/data-off1 (whole bytes)
and data-disk, and data-count. Cells are half-open [t0, t1) x [lo, hi),
the last column and the top row closed. The check works from the cells'
own edges: each json row (time and duration_ms are exact decimals, so
they are read as integers of ns) is placed in the cell whose edges hold
it; a row that no cell holds, a cell whose count differs from the rows it
holds, overlapping edges, or edges that are not whole ms / us: FAIL.
The title's "N requests drawn" must be the number of rows too.

"size" checks an offset map's rows against the disks' sizes, which the
caller gets from a source independent of diskmon (blockdev --getsize64,
the PerfView baseline's PhyDisk and LogDisk fields). SPEC is "none" (the
source knows no size: no panel carries data-disk-size and each heading
says "largest offset seen"), or a comma-separated list of DISK=BYTES (the
panel's data-disk-size is BYTES, its heading names it, and its rows are
DM_OFF_ROWS = 64 rows of h bytes, h the least power of two of at least
4 KiB that covers the disk in 64 rows: every cell is h high) or
DISK>=BYTES (the size is at least BYTES: where only a lower bound is
known independently).
Prints one PASS or FAIL line; exit 0 or 1.
"""
import bisect
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict

SVG = "{http://www.w3.org/2000/svg}"


def dec_int(text, decimals):
    """'1.250' with decimals=3 -> 1250; refuses any other number of decimals."""
    whole, _, frac = text.partition(".")
    if len(frac) != decimals or not whole.isdigit() or (frac and not frac.isdigit()):
        raise ValueError("not a number with %d decimals: %r" % (decimals, text))
    return int(whole) * 10 ** decimals + (int(frac) if frac else 0)


def intervals(pairs, what):
    """Sorted distinct [lo, hi) pairs that must not overlap."""
    s = sorted(set(pairs))
    for (a0, a1), (b0, b1) in zip(s, s[1:]):
        if b0 < a1:
            raise ValueError("%s intervals overlap: [%d,%d) and [%d,%d)" % (what, a0, a1, b0, b1))
    for a0, a1 in s:
        if a1 <= a0:
            raise ValueError("%s interval empty: [%d,%d)" % (what, a0, a1))
    return s


def find(ivs, starts, v, closed_top):
    """Index of the interval holding v (the last one closed at its top);
    starts: the intervals' lower edges."""
    i = bisect.bisect_right(starts, v) - 1
    if i < 0:
        return None
    lo, hi = ivs[i]
    if lo <= v < hi or (closed_top and i == len(ivs) - 1 and v == hi):
        return i
    return None


ROWS = 64          # offmap.h DM_OFF_ROWS: the rows per panel
MIN_ROW = 4096     # offmap.h: rows of at least 4 KiB


def check_size(svg_path, spec, name):
    root = ET.parse(svg_path).getroot()
    panels = {g.get("data-disk"): g for g in root.iter(SVG + "g") if g.get("data-disk")}
    text = " ".join(root.itertext())
    if spec == "none":
        sized = [d for d, g in panels.items() if g.get("data-disk-size")]
        if sized or not panels or text.count("largest offset seen") < len(panels) + 1:
            raise SystemExit("FAIL %s: expected no disk size, panels %r, sized %r" % (
                name, sorted(panels), sized))
        print("PASS %s: no size known, %d panel(s) to the largest offset seen" % (
            name, len(panels)))
        return
    for item in spec.split(","):
        at_least = ">=" in item
        disk, want = item.split(">=" if at_least else "=")
        want = int(want)
        g = panels.get(disk)
        if g is None or not g.get("data-disk-size"):
            raise SystemExit("FAIL %s: disk %s has no panel with a size" % (name, disk))
        got = int(g.get("data-disk-size"))
        if (got < want) if at_least else (got != want):
            raise SystemExit("FAIL %s: disk %s size %d, want %s%d" % (
                name, disk, got, ">=" if at_least else "", want))
        if "disk %s: disk size" % disk not in text or ("(%d bytes" % got) not in text:
            raise SystemExit("FAIL %s: disk %s's heading does not name its size" % (name, disk))
        h = MIN_ROW
        while h * ROWS < got:
            h *= 2
        heights = {int(c.get("data-off1")) - int(c.get("data-off0"))
                   for c in g.iter() if c.get("data-count")}
        if heights - {h}:
            raise SystemExit("FAIL %s: disk %s rows of %r bytes, want %d (64 rows over %d)" % (
                name, disk, sorted(heights), h, got))
        print("PASS %s: disk %s size %d (%s %d), rows of %d bytes" % (
            name, disk, got, "at least" if at_least else "equal to", want, h))


def main():
    if sys.argv[1] == "size":
        check_size(sys.argv[2], sys.argv[3],
                   sys.argv[4] if len(sys.argv) > 4 else "size %s" % sys.argv[2])
        return
    kind, svg_path, rows_path = sys.argv[1:4]
    name = sys.argv[4] if len(sys.argv) > 4 else "%s %s" % (kind, svg_path)
    lo_attr, hi_attr, dec = (("data-lat0", "data-lat1", 3) if kind == "latency"
                             else ("data-off0", "data-off1", 0))
    root = ET.parse(svg_path).getroot()
    cells = {}
    for el in root.iter():
        if el.get("data-count") is None:
            continue
        t = (dec_int(el.get("data-t0"), 3), dec_int(el.get("data-t1"), 3))  # ms
        r = (dec_int(el.get(lo_attr), dec), dec_int(el.get(hi_attr), dec))  # us or bytes
        disk = el.get("data-disk", "")
        key = (disk, t, r)
        if key in cells:
            raise SystemExit("FAIL %s: two elements for the cell %r" % (name, key))
        cells[key] = int(el.get("data-count"))
        if el.find(SVG + "title") is None:
            raise SystemExit("FAIL %s: a cell without a <title> tooltip" % name)
    try:
        cols = intervals([k[1] for k in cells], "time")
        rows = defaultdict(list)
        for k in cells:
            rows[k[0]].append(k[2])
        rows = {d: intervals(v, "row") for d, v in rows.items()}
    except ValueError as e:
        raise SystemExit("FAIL %s: %s" % (name, e))
    got = Counter()
    n_rows = 0
    scale = 1000 if kind == "latency" else 1  # row edges in us (ns in the rows) or bytes
    cols_ns = [(a * 10 ** 6, b * 10 ** 6) for a, b in cols]
    cols_starts = [a for a, _ in cols_ns]
    rows_v = {d: [(a * scale, b * scale) for a, b in v] for d, v in rows.items()}
    rows_starts = {d: [a for a, _ in v] for d, v in rows_v.items()}
    with open(rows_path) as f:
        for line in f:
            ev = json.loads(line, parse_float=str)
            n_rows += 1
            t_ns = dec_int(ev["time"], 9)
            if kind == "latency":
                v = dec_int(ev["duration_ms"], 6)  # ns
                disk = ""
            else:
                v = int(ev["offset"])
                disk = str(ev["disk"])
            ci = find(cols_ns, cols_starts, t_ns, True)
            ri = find(rows_v.get(disk, []), rows_starts.get(disk, []), v, True)
            if ci is None or ri is None:
                raise SystemExit("FAIL %s: the row %s (time %s, %s) is in no cell" % (
                    name, ev["seq"], ev["time"],
                    "duration_ms %s" % ev["duration_ms"] if kind == "latency" else
                    "disk %s offset %s" % (disk, v)))
            got[(disk, cols[ci], rows[disk][ri])] += 1
    bad = [(k, cells.get(k, 0), got.get(k, 0)) for k in set(cells) | set(got)
           if cells.get(k, 0) != got.get(k, 0)]
    if bad:
        k, c, g = sorted(bad)[0]
        raise SystemExit("FAIL %s: %d cells differ, e.g. %r: map %d, rows %d" % (
            name, len(bad), k, c, g))
    total = sum(cells.values())
    if total != n_rows:
        raise SystemExit("FAIL %s: cells sum to %d, rows %d" % (name, total, n_rows))
    said = re.search(r"(\d+) requests? drawn", " ".join(root.itertext()))
    if said is None or int(said.group(1)) != n_rows:
        raise SystemExit("FAIL %s: the title says %s requests drawn, the rows are %d" % (
            name, said.group(1) if said else "no number of", n_rows))
    print("PASS %s: %d cells, every count equal to the json rows'; %d rows" % (
        name, len(cells), n_rows))


if __name__ == "__main__":
    main()
