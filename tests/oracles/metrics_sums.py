#!/usr/bin/env python3
"""metrics_sums.py METRICS.prom EVENTS.csv

Checks that the per-process series of diskmon's --metrics file add up, disk
by disk, as docs/metrics.md says they do: for each disk and op, the sum
over processes (the promoted names and "(other)") of
diskmon_process_requests_total{process,disk,op} and of
diskmon_process_bytes_total must equal both
  - the file's own per-disk diskmon_requests_total / diskmon_bytes_total, and
  - the counts and bytes of the csv output of the same run (-f csv),
    summed here per disk and request from its disk, request and bytes
    columns.
Also that every disk of the csv has its series, and that for each disk
and flag diskmon_requests_by_flag_total equals the csv lines whose flags
column (words joined by "|") has that word. Prints one line per difference and exits 1 if there
is any, else 0."""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics_check import FLAGS, OPS, parse_prom  # noqa: E402


def main():
    prom, events = sys.argv[1], sys.argv[2]
    got = parse_prom(prom)
    by_proc, by_disk = {}, {}
    for k, v in got.items():
        labels = dict(k[1:])
        if k[0] in ("diskmon_process_requests_total", "diskmon_process_bytes_total"):
            kk = (k[0], labels["disk"], labels["op"])
            by_proc[kk] = by_proc.get(kk, 0) + int(v)
        elif k[0] in ("diskmon_requests_total", "diskmon_bytes_total"):
            by_disk[(k[0], labels["disk"], labels["op"])] = int(v)
        elif k[0] == "diskmon_requests_by_flag_total":
            by_disk[(k[0], labels["disk"], labels["flag"])] = int(v)
    from_csv = {}
    with open(events, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            disk, op = row["disk"], row["request"].lower()
            n = ("diskmon_requests_total", disk, op)
            b = ("diskmon_bytes_total", disk, op)
            from_csv[n] = from_csv.get(n, 0) + 1
            from_csv[b] = from_csv.get(b, 0) + int(row["bytes"])
            for word in filter(None, row["flags"].split("|")):
                fk = ("diskmon_requests_by_flag_total", disk, word)
                from_csv[fk] = from_csv.get(fk, 0) + 1
    disks = {d for (_, d, _) in by_disk} | {d for (_, d, _) in from_csv}
    bad = checked = 0
    for disk in sorted(disks):
        for op in OPS:
            for total, proc in (("diskmon_requests_total", "diskmon_process_requests_total"),
                                ("diskmon_bytes_total", "diskmon_process_bytes_total")):
                p = by_proc.get((proc, disk, op))
                d = by_disk.get((total, disk, op))
                c = from_csv.get((total, disk, op), 0)
                checked += 1
                if p is None or d is None:
                    print("missing: disk=%s op=%s %s=%s %s=%s" % (disk, op, proc, p, total, d))
                    bad += 1
                elif not p == d == c:
                    print("disk=%s op=%s: sum of %s %d, %s %d, csv %d" %
                          (disk, op, proc, p, total, d, c))
                    bad += 1
        for flag in FLAGS:
            fk = ("diskmon_requests_by_flag_total", disk, flag)
            checked += 1
            if by_disk.get(fk) != from_csv.get(fk, 0):
                print("disk=%s flag=%s: %s, csv %d" % (disk, flag, by_disk.get(fk),
                                                      from_csv.get(fk, 0)))
                bad += 1
    print("%d disk sums checked over %d disks, %d differences" % (checked, len(disks), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
