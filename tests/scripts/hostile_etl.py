#!/usr/bin/env python3
"""hostile_etl.py - the small compressed .etl that asks for gigabytes, and
what diskmon must do with it: read it through in under 2 s, its max RSS far
under the reader's 256 MiB budget (etl.h), as each CPU holds a window of
its buffer, not the buffer; and, where its LZ77 data inflates to less than
a buffer claims, stop with one line on stderr naming the file, the buffer
and why, exit 1, as fast and as small.

The trace: a plain buffer 0 holding the trace header record, whose
TRACE_LOGFILE_HEADER.BufferSize says 16 MiB, then STREAMS compressed buffers
of one CPU each. Each buffer's header claims 16 MiB of inflated records,
and its 31 bytes of MS-XCA Plain LZ77 really inflate to that many: one
16-byte PERFINFO64 record of a HookId group no decoder takes, then 0xFF
bytes (a literal, then one match of distance 1 with a 32-bit length;
[MS-XCA] 2.4), which read as the end marker. Each CPU's stream waits in the
merge with its one record, so a reader that inflates every CPU's first
buffer before merging holds STREAMS x 16 MiB: 4 GiB for 256 CPUs in 27 KB.
The damaged variant's match makes 1,000 bytes, not 16 MiB.

Layouts: docs/etw.md §4. WMI_BUFFER_HEADER: BufferSize
0x00, SavedOffset 0x04, ProcessorIndex 0x28 (with BufferFlag 0x20), Offset
0x30, BufferFlag 0x34 (0x40 compressed). TRACE_LOGFILE_HEADER (64-bit
layout): BufferSize 0x00, Version 0x04, NumberOfProcessors 0x0C,
LogFileMode 0x20, PointerSize 0x2C, CpuSpeedInMHz 0x34, PerfFreq 0x100,
StartTime 0x108, ReservedFlags 0x110 (clock: 1 QPC), then the logger and
file names (UTF-16, here empty).

Usage: hostile_etl.py DISKMON       (the test: PASS/FAIL lines, exit 0 or 1)
       hostile_etl.py --write OUT.etl [STREAMS]
"""
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time

BUF_HDR = 0x48
CLAIM = 16 << 20                 # the largest inflated size a buffer may claim
BUDGET_KB = 256 << 10            # DM_ETL_BUDGET_BYTES in KiB (ru_maxrss unit)
SHORT = 1000                     # what the damaged variant inflates to
FLAG_PROC_INDEX = 0x0020
FLAG_COMPRESSED = 0x0040
HEADER_TS = 1000
PERF_FREQ = 10000000
START_FILETIME = 0x01DA000000000000


def header_buffer():
    tlh = bytearray(0x118 + 4)
    struct.pack_into('<I', tlh, 0x00, CLAIM)          # BufferSize: 16 MiB
    struct.pack_into('<I', tlh, 0x04, 0x0501000A)     # Version 10.0
    struct.pack_into('<I', tlh, 0x0C, 2048)           # NumberOfProcessors
    struct.pack_into('<I', tlh, 0x20, 0x04000001)     # sequential, compressed
    struct.pack_into('<I', tlh, 0x2C, 8)              # PointerSize
    struct.pack_into('<I', tlh, 0x34, 3000)           # CpuSpeedInMHz
    struct.pack_into('<Q', tlh, 0x100, PERF_FREQ)     # PerfFreq
    struct.pack_into('<Q', tlh, 0x108, START_FILETIME)
    struct.pack_into('<I', tlh, 0x110, 1)             # ReservedFlags: QPC
    size = 0x20 + len(tlh)
    rec = struct.pack('<HBBHHIIQQ', 2, 0x02, 0xC0, size, 0, 4, 4, HEADER_TS, 0) + tlh
    rec += b'\0' * (-len(rec) % 8)
    filled = BUF_HDR + len(rec)
    disk = 512
    h = bytearray(BUF_HDR)
    struct.pack_into('<I', h, 0x00, disk)
    struct.pack_into('<I', h, 0x04, filled)
    struct.pack_into('<I', h, 0x30, filled)
    struct.pack_into('<H', h, 0x36, 4)                # BufferType: header
    return bytes(h) + rec + b'\xff' * (disk - filled)


def record(ts):
    """PERFINFO64 header (marker flags 0xC0, type 0x11, version 2),
    Packet.Size 16, HookId 0xAA00, TimeStamp at 0x08."""
    return struct.pack('<HBBHHQ', 2, 0x11, 0xC0, 16, 0xAA00, ts)


def lz77(lit, n):
    """Plain LZ77 for the literals lit then 0xFF up to n bytes: a flag word
    (one 0 bit per literal, then the match's 1, then 1s so the stream ends
    at the input's end), the literals, a token with distance 1 and length
    code 7, nibble 15, byte 255, and a 16-bit 0 that selects the 32-bit
    field, which holds the match length minus 3."""
    lit = lit + b'\xff'
    return (struct.pack('<I', 0xFFFFFFFF >> len(lit)) + lit +
            struct.pack('<H', 0x0007) + b'\x0f\xff' + struct.pack('<H', 0) +
            struct.pack('<I', n - len(lit) - 3))


def trace(streams, damaged=False):
    body = bytearray(header_buffer())
    for cpu in range(streams):
        z = lz77(record(HEADER_TS + 1 + cpu), SHORT if damaged else CLAIM - BUF_HDR)
        h = bytearray(BUF_HDR)
        struct.pack_into('<I', h, 0x00, BUF_HDR + len(z))
        struct.pack_into('<I', h, 0x04, CLAIM)
        struct.pack_into('<H', h, 0x28, cpu)
        struct.pack_into('<I', h, 0x30, CLAIM)
        struct.pack_into('<H', h, 0x34, FLAG_PROC_INDEX | FLAG_COMPRESSED)
        body += h + z
    return bytes(body)


def check(diskmon, tmp, streams, damaged):
    """One case; each run is measured alone in a child, so ru_maxrss of
    RUSAGE_CHILDREN is this diskmon's."""
    name = 'hostile_etl/%d_cpus%s' % (streams, '_damaged' if damaged else '')
    path = os.path.join(tmp, 'hostile%d%s.etl' % (streams, 'd' if damaged else ''))
    with open(path, 'wb') as f:
        f.write(trace(streams, damaged))
    size = os.path.getsize(path)
    probe = [sys.executable, '-c', '''
import resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
sys.stdout.write('%d %d %.3f\\n' % (p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.monotonic() - t))
sys.stdout.write(p.stderr.decode('utf-8', 'replace'))
''', diskmon, '-r', path]
    out = subprocess.run(probe, stdout=subprocess.PIPE, timeout=120).stdout.decode()
    first, _, err = out.partition('\n')
    rc, rss, secs = first.split()
    rc, rss, secs = int(rc), int(rss), float(secs)
    lines = err.splitlines()
    why = []
    # The first buffer (after buffer 0, 512 bytes) is the one that fails.
    want_err = ('%s: corrupt compressed buffer at offset 512: inflates to %d '
                'bytes, its header says %d' % (path, SHORT, CLAIM - BUF_HDR))
    if rc != (1 if damaged else 0):
        why.append('exit %d, want %d' % (rc, 1 if damaged else 0))
    if damaged and (len(lines) != 1 or want_err not in lines[0]):
        why.append('stderr %r, want one line with %r' % (err, want_err))
    if not damaged and err:
        why.append('stderr %r, want none' % err)
    # A window per CPU of 104 KiB, of which the first 16 KiB are touched
    # (etl_internal.h): 32 MiB for 2,048 CPUs, under the budget even with
    # a sanitizer's shadow memory and quarantine.
    if rss >= BUDGET_KB:
        why.append('max RSS %d KiB, budget %d KiB' % (rss, BUDGET_KB))
    if secs >= 2.0:
        why.append('took %.2f s, want < 2 s' % secs)
    if why:
        print('FAIL %s: %s' % (name, '; '.join(why)))
        return 1
    print('PASS %s (%d bytes: exit %d, max RSS %d KiB, %.2f s)' % (name, size, rc, rss, secs))
    return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == '--write':
        with open(sys.argv[2], 'wb') as f:
            f.write(trace(int(sys.argv[3]) if len(sys.argv) > 3 else 256))
        return 0
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    diskmon = os.path.realpath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        fails = sum(check(diskmon, tmp, n, d) for n in (256, 2048) for d in (False, True))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
