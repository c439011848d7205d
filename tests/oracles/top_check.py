#!/usr/bin/env python3
"""top_check.py - recompute diskmon --top's json rows from the per-event json.

Usage: top_check.py EVENTS.json TOP.json SEC BY

EVENTS.json is `diskmon ... -f json` (one event per line), TOP.json is
`diskmon ... --top SEC --by BY -f json` over the same input. Every interval
and every group is recomputed here from the events alone, with the rules
docs/output.md ("top") states (not with diskmon's code):

- intervals are [k*SEC, (k+1)*SEC); an event belongs to the one holding its
  completion `time`; an event older than the interval already open counts in
  the open one; intervals without events have no rows;
- reads, writes and flushes are counted, discards are not;
- at most 256 groups per interval, the first seen; later ones sum into one
  (other) row, shown last; the others sorted by bytes, then requests, then
  first seen;
- a request is [time - duration, time); aqu_sz is the sum of its parts inside
  its interval divided by the interval, util_pct the length of their union;
- means in whole nanoseconds rounded half up; aqu_sz to 3 and util_pct to 2
  decimals, rounded half up.

Exits 0 when every row matches, 1 (printing the differences) otherwise.
"""
import json
import sys
from decimal import Decimal

GROUPS_MAX = 256
NS = Decimal(1000000000)


def ns_of_seconds(text):
    return int(Decimal(text) * NS)


def ns_of_ms(text):
    return int(Decimal(text) * 1000000)


def key_of(by, ev):
    if by == "process":
        return (ev.get("pid"), ev.get("process"))
    if by == "file":
        return (ev.get("file"), ev.get("process"))
    return (str(ev["disk"]),)


def new_group(key):
    return {"key": key, "reads": 0, "writes": 0, "flushes": 0, "read_bytes": 0,
            "write_bytes": 0, "lat": 0, "max": 0, "rlat": 0, "wlat": 0,
            "spans": [], "overlap": 0}


def fixed(x, d, digits):
    scale = 10 ** digits
    whole, rem = divmod(x, d)
    frac = (rem * scale + d // 2) // d
    if frac == scale:
        whole, frac = whole + 1, 0
    return Decimal(whole) + Decimal(frac) / scale


def union_length(spans):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def mean_ms(total, n):
    return Decimal((total + n // 2) // n if n else 0) / 1000000


def expected_rows(events_path, sec, by):
    iv = ns_of_seconds(sec)
    open_k = None
    intervals = []  # (k, groups list in first-seen order, other or None)
    groups, index, other = [], {}, None

    def close():
        if groups or other is not None:
            intervals.append((open_k, list(groups), other))

    with open(events_path, encoding="utf-8") as f:
        for line in f:
            ev = json.loads(line, parse_float=str, parse_int=int)
            if ev["request"] not in ("Read", "Write", "Flush"):
                continue
            t = ns_of_seconds(ev["time"])
            d = ns_of_ms(ev["duration_ms"])
            k = t // iv
            if open_k is None:
                open_k = k
            if k > open_k:
                close()
                groups, index, other = [], {}, None
                open_k = k
            key = key_of(by, ev)
            if key in index:
                g = index[key]
            elif len(groups) < GROUPS_MAX:
                g = index[key] = new_group(key)
                groups.append(g)
            else:
                if other is None:
                    other = new_group(("(other)",))
                g = other
            size = int(ev["bytes"])
            if ev["request"] == "Read":
                g["reads"] += 1
                g["read_bytes"] += size
                g["rlat"] += d
            elif ev["request"] == "Write":
                g["writes"] += 1
                g["write_bytes"] += size
                g["wlat"] += d
            else:
                g["flushes"] += 1
            g["lat"] += d
            g["max"] = max(g["max"], d)
            lo, hi = open_k * iv, (open_k + 1) * iv
            s, e = max(t - d, lo, 0), min(t, hi)
            if s < e:
                g["overlap"] += e - s
                g["spans"].append((s, e))
    if open_k is not None:
        close()

    rows = []
    for k, gs, oth in intervals:
        order = sorted(enumerate(gs), key=lambda p: (
            -(p[1]["read_bytes"] + p[1]["write_bytes"]),
            -(p[1]["reads"] + p[1]["writes"] + p[1]["flushes"]), p[0]))
        ordered = [g for _, g in order] + ([oth] if oth is not None else [])
        for g in ordered:
            n = g["reads"] + g["writes"] + g["flushes"]
            row = {"interval_start": Decimal(k * iv) / NS,
                   "interval_end": Decimal((k + 1) * iv) / NS}
            is_other = g["key"] == ("(other)",)
            if by == "process":
                row["pid"] = None if is_other else g["key"][0]
                row["process"] = "(other)" if is_other else g["key"][1]
            elif by == "file":
                row["file"] = "(other)" if is_other else g["key"][0]
                row["process"] = None if is_other else g["key"][1]
            else:
                row["disk"] = g["key"][0]
            for name in ("reads", "writes", "flushes", "read_bytes", "write_bytes"):
                row[name] = g[name]
            row["avg_ms"] = mean_ms(g["lat"], n)
            row["max_ms"] = Decimal(g["max"]) / 1000000
            if by == "disk":
                row["r_await_ms"] = mean_ms(g["rlat"], g["reads"])
                row["w_await_ms"] = mean_ms(g["wlat"], g["writes"])
                row["aqu_sz"] = fixed(g["overlap"], iv, 3)
                row["util_pct"] = fixed(union_length(g["spans"]) * 100, iv, 2)
            rows.append(row)
    return rows


def main():
    events_path, top_path, sec, by = sys.argv[1:5]
    want = expected_rows(events_path, sec, by)
    with open(top_path, encoding="utf-8") as f:
        got = [json.loads(line, parse_float=Decimal) for line in f]
    bad = 0
    if len(got) != len(want):
        print(f"top_check: {len(got)} rows, expected {len(want)}")
        bad += 1
    for i, (g, w) in enumerate(zip(got, want)):
        if list(g.keys()) != list(w.keys()):
            print(f"top_check: row {i + 1}: keys {list(g.keys())}, expected {list(w.keys())}")
            bad += 1
            continue
        diff = [k for k in w if g[k] != w[k]]
        if diff:
            bad += 1
            if bad <= 10:
                print(f"top_check: row {i + 1}: " +
                      ", ".join(f"{k}={g[k]} expected {w[k]}" for k in diff))
    util_rows = sum(1 for w in want if w.get("util_pct", 0) > 0)
    print(f"top_check: {len(want)} rows in "
          f"{len({w['interval_start'] for w in want})} intervals, "
          f"{bad} differing" + (f", {util_rows} with %util > 0" if by == "disk" else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
