#!/usr/bin/env python3
"""volumes_check.py - each replayed request's volume, from the reference.

Usage: volumes_check.py BASELINE.txt DISKIO.csv EVENTS.csv [D_EVENTS.csv LETTER]

BASELINE.txt is PerfView's own decoding of a trace (its SystemConfig/LogDisk
lines give each volume's DiskNumber, StartOffset, PartitionSize and
DriveLetterString); DISKIO.csv the reference decoding of the same trace's
DiskIo records (completions: opcode 10 Read, 11 Write, 14 FlushBuffers).
EVENTS.csv is `diskmon -r TRACE -f csv`. The rule (docs/output.md, "Partitions"): a
request is named after the volume that holds all of it; one that crosses a
volume's edge, lies outside every volume or has no bytes (a flush) has an
empty partition. The multiset of (disk, offset, bytes, partition) that rule
gives for the reference's completions must be diskmon's. With D_EVENTS.csv
(`diskmon -r TRACE -d LETTER -f csv`): exactly the reference's completions
inside that volume.

Exits 0 when all match, 1 (printing the differences) otherwise.
"""
import collections
import csv
import re
import sys


def num(s):
    return int(s.replace(",", "")) if s else 0


def volumes(baseline):
    out = []
    for line in open(baseline, encoding="utf-8", errors="replace"):
        if not line.startswith("EVENT") or "SystemConfig/LogDisk" not in line:
            continue
        f = dict(re.findall(r"(\w+)=([^;]*);", line))
        out.append((num(f["DiskNumber"]), num(f["StartOffset"]),
                    num(f["StartOffset"]) + num(f["PartitionSize"]),
                    f["DriveLetterString"].strip()))
    return out


def name_of(vols, disk, offset, size):
    if size == 0:
        return ""
    for d, first, end, letter in vols:
        if d == disk and first <= offset and offset + size <= end:
            return letter
    return ""


def main():
    baseline, diskio, events = sys.argv[1:4]
    vols = volumes(baseline)
    if not vols:
        print("no SystemConfig/LogDisk line in", baseline)
        return 1
    want = collections.Counter()
    for r in csv.DictReader(open(diskio, newline="")):
        if int(r["opcode"]) not in (10, 11, 14):
            continue
        disk, off, size = num(r["DiskNumber"]), num(r["ByteOffset"]), num(r["TransferSize"])
        want[(disk, off, size, name_of(vols, disk, off, size))] += 1
    got = collections.Counter()
    for r in csv.DictReader(open(events, newline="")):
        got[(num(r["disk"]), num(r["offset"]), num(r["bytes"]), r["partition"])] += 1
    bad = 0
    for k in sorted(set(want) | set(got)):
        if want[k] != got[k]:
            print("disk %d offset %d bytes %d partition %r: diskmon %d, reference %d"
                  % (k + (got[k], want[k])))
            bad += 1
            if bad > 20:
                break
    named = collections.Counter()
    for k, n in want.items():
        named[k[3]] += n
    print("volumes:", ", ".join("%s disk %d [%d, %d)" % (v[3], v[0], v[1], v[2]) for v in vols))
    print("reference completions by partition:", dict(named))
    if len(sys.argv) > 5:
        letter = sys.argv[5]
        rows = list(csv.DictReader(open(sys.argv[4], newline="")))
        other = [r for r in rows if r["partition"] != letter]
        if len(rows) != named[letter] or other:
            print("-d %s: %d requests (%d in another partition), reference %d"
                  % (letter, len(rows), len(other), named[letter]))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
