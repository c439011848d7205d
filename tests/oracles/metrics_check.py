#!/usr/bin/env python3
"""metrics_check.py EVENTS.jsonl METRICS.prom K [SOURCE]

Recomputes every counter of diskmon's --metrics file from the per-event json
of the same run, on its own reading of docs/metrics.md ("The metrics",
"Histogram buckets"), and compares them exactly: requests, bytes, each histogram
bucket (requests at or under le), _sum and _count, busy seconds (the length
of the union of [completion - duration, completion) per disk), in-flight
seconds (the sum of durations), requests per flag (each word of the
json "flags" once), and per process and disk the top K (image name, disk)
pairs by bytes (then requests, then name, then disk) with the rest in
"(other)" of their disk.
Prints one line per difference and exits 1 if there is any, else 0."""
import json
import re
import sys
from decimal import Decimal

OPS = ["read", "write", "flush", "discard"]
# docs/output.md "Request flags", in bit order
FLAGS = ["preflush", "fua", "sync", "meta", "readahead", "secure", "nocache", "paging",
         "sync_api", "associated", "buffered", "sync_paging"]
LE = ["0.000025", "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
      "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10"]


def unescape(v):
    out, i = [], 0
    while i < len(v):
        c = v[i]
        if c == "\\" and i + 1 < len(v):
            n = v[i + 1]
            out.append({"\\": "\\", '"': '"', "n": "\n"}.get(n, "\\" + n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_labels(s):
    labels, i = {}, 0
    while i < len(s):
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)="', s[i:])
        if not m:
            raise ValueError("bad labels: " + s)
        key = m.group(1)
        i += m.end()
        j = i
        while s[j] != '"':
            j += 2 if s[j] == "\\" else 1
        labels[key] = unescape(s[i:j])
        i = j + 1
        if i < len(s) and s[i] == ",":
            i += 1
    return labels


def parse_prom(path):
    samples = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
            if not m:
                raise ValueError("bad line: " + line)
            labels = parse_labels(m.group(2) or "")
            key = (m.group(1),) + tuple(sorted(labels.items()))
            if key in samples:
                raise ValueError("duplicate sample: " + line)
            samples[key] = Decimal(m.group(3))
    return samples


def key(name, **labels):
    return (name,) + tuple(sorted(labels.items()))


def ns_of_ms(s):
    return int(Decimal(s) * 1000000)


def ns_of_s(s):
    return int(Decimal(s) * 1000000000)


def main():
    events, prom, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    source = sys.argv[4] if len(sys.argv) > 4 else "replay"
    got = parse_prom(prom)
    want = {}
    disks, spans, procs = {}, {}, {}
    with open(events, encoding="utf-8") as f:
        for line in f:
            ev = json.loads(line, parse_float=str, parse_int=str)
            disk = str(ev["disk"])
            op = ev["request"].lower()
            dur = ns_of_ms(ev["duration_ms"])
            end = ns_of_s(ev["time"])
            size = int(ev["bytes"])
            d = disks.setdefault(disk, {o: {"n": 0, "b": 0, "sum": 0,
                                            "buckets": [0] * len(LE)} for o in OPS})
            d["inflight"] = d.get("inflight", 0) + dur
            byflag = d.setdefault("flags", {f: 0 for f in FLAGS})
            for f in (ev.get("flags") or "").split("|"):
                if f:
                    byflag[f] += 1
            x = d[op]
            x["n"] += 1
            x["b"] += size
            x["sum"] += dur
            for i, le in enumerate(LE):
                if dur <= ns_of_s(le):
                    x["buckets"][i] += 1
            spans.setdefault(disk, []).append((max(end - dur, 0), end))
            name = ev.get("process") or "(unknown)"
            p = procs.setdefault((name, disk), {o: [0, 0] for o in OPS})
            p[op][0] += 1
            p[op][1] += size
    for disk, d in disks.items():
        for op in OPS:
            x = d[op]
            want[key("diskmon_requests_total", disk=disk, op=op)] = x["n"]
            want[key("diskmon_bytes_total", disk=disk, op=op)] = x["b"]
            for i, le in enumerate(LE):
                want[key("diskmon_request_duration_seconds_bucket", disk=disk, op=op,
                         le=le)] = x["buckets"][i]
            want[key("diskmon_request_duration_seconds_bucket", disk=disk, op=op,
                     le="+Inf")] = x["n"]
            want[key("diskmon_request_duration_seconds_count", disk=disk, op=op)] = x["n"]
            want[key("diskmon_request_duration_seconds_sum", disk=disk, op=op)] = \
                Decimal(x["sum"]) / 1000000000
        for f in FLAGS:
            want[key("diskmon_requests_by_flag_total", disk=disk, flag=f)] = d["flags"][f]
        busy, cur_s, cur_e = 0, None, None
        for s, e in sorted(spans[disk]):
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    busy += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            busy += cur_e - cur_s
        want[key("diskmon_busy_seconds_total", disk=disk)] = Decimal(busy) / 1000000000
        want[key("diskmon_in_flight_seconds_total", disk=disk)] = \
            Decimal(d["inflight"]) / 1000000000

    def order(item):
        (name, disk), p = item
        return (-sum(v[1] for v in p.values()), -sum(v[0] for v in p.values()),
                name.encode("utf-8"), disk.encode("utf-8"))
    ranked = sorted(procs.items(), key=order)
    other = {disk: {o: [0, 0] for o in OPS} for disk in disks}
    for i, ((name, disk), p) in enumerate(ranked):
        if i < k:
            for op in OPS:
                want[key("diskmon_process_requests_total", process=name, disk=disk,
                         op=op)] = p[op][0]
                want[key("diskmon_process_bytes_total", process=name, disk=disk,
                         op=op)] = p[op][1]
        else:
            for op in OPS:
                other[disk][op][0] += p[op][0]
                other[disk][op][1] += p[op][1]
    for disk in disks:
        for op in OPS:
            want[key("diskmon_process_requests_total", process="(other)", disk=disk,
                     op=op)] = other[disk][op][0]
            want[key("diskmon_process_bytes_total", process="(other)", disk=disk,
                     op=op)] = other[disk][op][1]
    want[key("diskmon_build_info", version=None, source=source)] = 1

    bad = 0
    for kk, v in want.items():
        if kk[0] == "diskmon_build_info":
            hits = [g for g in got if g[0] == kk[0] and ("source", source) in g]
            if len(hits) != 1 or got[hits[0]] != 1:
                print("build_info with source=%s missing" % source)
                bad += 1
            continue
        if kk not in got:
            print("missing: %s (want %s)" % (kk, v))
            bad += 1
        elif got[kk] != Decimal(v):
            print("differs: %s got %s want %s" % (kk, got[kk], v))
            bad += 1
    checked = {"diskmon_requests_total", "diskmon_bytes_total",
               "diskmon_request_duration_seconds_bucket",
               "diskmon_request_duration_seconds_sum",
               "diskmon_request_duration_seconds_count", "diskmon_busy_seconds_total",
               "diskmon_in_flight_seconds_total", "diskmon_requests_by_flag_total",
               "diskmon_process_requests_total",
               "diskmon_process_bytes_total"}
    for kk in got:
        if kk[0] in checked and kk not in want:
            print("unexpected series: %s = %s" % (kk, got[kk]))
            bad += 1
    for reason in ("ring_full", "source"):
        if key("diskmon_events_lost_total", reason=reason) not in got:
            print("missing: diskmon_events_lost_total{reason=%s}" % reason)
            bad += 1
    if key("diskmon_last_update_timestamp_seconds") not in got:
        print("missing: diskmon_last_update_timestamp_seconds")
        bad += 1
    print("%d series checked, %d differences" % (len(want), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
