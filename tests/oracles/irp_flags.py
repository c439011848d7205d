#!/usr/bin/env python3
"""irp_flags.py - check diskmon's flags and priority columns of a replay
against the reference decoding's IrpFlags column.

Usage: irp_flags.py REFERENCE.diskio.csv DISKMON.csv

REFERENCE.diskio.csv is a sample trace's reference decoding (one row per
DiskIo record; IrpFlags_hex as the trace holds it), DISKMON.csv is
`diskmon -r TRACE.etl -f csv` of the same trace. The IrpFlags of every
Read (10), Write (11) and FlushBuffers (14) row is decoded here, from
Microsoft's documentation rather than diskmon's code:

- the IRP_* bits of "DiskIo_TypeGroup1 class" (Microsoft Learn; values from
  Ntddk.h): IRP_NOCACHE 0x1 nocache, IRP_PAGING_IO 0x2 paging,
  IRP_SYNCHRONOUS_API 0x4 sync_api, IRP_ASSOCIATED_IRP 0x8 associated,
  IRP_BUFFERED_IO 0x10 buffered, IRP_SYNCHRONOUS_PAGING_IO 0x40 sync_paging,
  the words in that order joined with '|' (docs/output.md);
- the priority: bits 17-19 (DiskIOFlags.PriorityHintMask 0xE0000 of
  Microsoft.Windows.EventTracing.Disk), as a number 0-7.

Each row is the tuple (request, disk, offset, bytes, flags, priority); the
two sides must hold the same tuples, as many times each. Exits 0 when they
do, 1 (printing the first differences) otherwise.
"""
import collections
import csv
import sys

IRP_WORDS = [
    (0x1, "nocache"),
    (0x2, "paging"),
    (0x4, "sync_api"),
    (0x8, "associated"),
    (0x10, "buffered"),
    (0x40, "sync_paging"),
]
PRIORITY_SHIFT = 17
PRIORITY_MASK = 0x7
REQUESTS = {"10": "Read", "11": "Write", "14": "Flush"}


def words(irp_flags):
    return "|".join(w for bit, w in IRP_WORDS if irp_flags & bit)


def reference_rows(path):
    rows = collections.Counter()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            req = REQUESTS.get(r["opcode"])
            if req is None:
                continue
            flags = int(r["IrpFlags_hex"], 16)
            rows[(req, r["DiskNumber"], r["ByteOffset"] or "0",
                  r["TransferSize"] or "0", words(flags),
                  str((flags >> PRIORITY_SHIFT) & PRIORITY_MASK))] += 1
    return rows


def diskmon_rows(path):
    rows = collections.Counter()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows[(r["request"], r["disk"], r["offset"], r["bytes"], r["flags"],
                  r["priority"])] += 1
    return rows


def main():
    if len(sys.argv) != 3:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    ref = reference_rows(sys.argv[1])
    got = diskmon_rows(sys.argv[2])
    flagged = sum(n for k, n in ref.items() if k[4] != "")
    if sum(ref.values()) == 0 or flagged == 0:
        print("irp_flags: the reference has no rows with flags to check")
        return 1
    if ref == got:
        return 0
    for k in sorted(set(ref) | set(got)):
        if ref[k] != got[k]:
            print("irp_flags: %s: reference %d, diskmon %d" % (",".join(k), ref[k], got[k]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
