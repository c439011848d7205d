#!/usr/bin/env python3
"""hostile_names.py - file and process names holding control bytes must
reach a terminal as visible escapes, one line per event (docs/output.md, "Names" under "text").

A plain trace from tests/bench/gen_etl.c has its names patched in place,
same lengths, so the trace stays valid: in the UTF-16 file names,
"f00000" becomes ESC [31m LF (an escape sequence and a line break) or
DEL U+0085 TAB CR x U+009B (DEL, two C1 controls, CSI among them); in the
8-bit process names (ImageFileName), "app0" becomes ESC [2J (clear the
screen) and "svc0" a LF b DEL. Then:
  - text: no byte below 0x20 but the line ends, no 0x7F, no C1 control
    (UTF-8 C2 80..C2 9F); after the header every line starts with the next
    event number; as many events as csv has rows (Python's csv module
    reads the quoted line breaks); the escapes \\x1b, \\x0a, \\x7f, \\x85,
    \\x9b appear, so the names can be grepped;
  - --top blocks (--by file and --by process): the same byte rules.
Usage: hostile_names.py DISKMON GEN_ETL (PASS/FAIL/SKIP lines, exit 0/1/77)
"""
import csv
import io
import os
import subprocess
import sys
import tempfile

FILE_PATTERNS = [
    [0x1B, ord('['), ord('3'), ord('1'), ord('m'), 0x0A],
    [0x7F, 0x85, 0x09, 0x0D, ord('x'), 0x9B],
]
PROCESS_PATTERNS = {b'app0': b'\x1b[2J', b'svc0': b'a\nb\x7f'}


def patch(data):
    out = bytearray(data)
    needle = 'f00000'.encode('utf-16-le')
    at, n = 0, 0
    while True:
        at = out.find(needle, at)
        if at < 0:
            break
        units = FILE_PATTERNS[n % 2]
        out[at:at + len(needle)] = b''.join(u.to_bytes(2, 'little') for u in units)
        at += len(needle)
        n += 1
    for old, new in PROCESS_PATTERNS.items():
        out = out.replace(old, new)
    return bytes(out), n


def bad_bytes(text):
    """Offsets of bytes a terminal must not get raw."""
    bad = [i for i, b in enumerate(text) if (b < 0x20 and b != 0x0A) or b == 0x7F]
    bad += [i for i in range(len(text) - 1) if text[i] == 0xC2 and 0x80 <= text[i + 1] <= 0x9F]
    return bad


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    diskmon, gen = sys.argv[1], sys.argv[2]
    if not os.access(gen, os.X_OK):
        print('SKIP hostile_names: no gen_etl at %s (cmake --build B --target gen_etl)' % gen)
        return 77
    fails = 0

    def result(ok, name, why=''):
        nonlocal fails
        if ok:
            print('PASS hostile_names/%s' % name)
        else:
            print('FAIL hostile_names/%s: %s' % (name, why))
            fails += 1

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'src.etl')
        path = os.path.join(tmp, 'names.etl')
        subprocess.run([gen, '--ios', '3000', '--cpus', '2', '--processes', '16',
                        '--threads', '4', '--files', '64', '--open', '64', src],
                       check=True, stdout=subprocess.DEVNULL)
        with open(src, 'rb') as f:
            data, patched = patch(f.read())
        with open(path, 'wb') as f:
            f.write(data)
        result(patched > 10, 'trace_patched', '%d file names patched' % patched)

        def run(*args):
            p = subprocess.run([diskmon, '-r', path] + list(args), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            return p.returncode, p.stdout

        rc, text = run()
        rc_csv, csv_out = run('-f', 'csv')
        rows = list(csv.reader(io.StringIO(csv_out.decode('utf-8', 'replace'), newline='')))
        events = len(rows) - 1
        lines = text.split(b'\n')
        if lines and lines[-1] == b'':
            lines.pop()
        numbered = all(l.split(None, 1)[0] == str(i).encode() for i, l in enumerate(lines[1:], 1)
                       if l.strip())
        bad = bad_bytes(text)
        result(rc == 0 and rc_csv == 0 and not bad, 'text_no_control_bytes',
               'rc %d/%d, raw control bytes at %s' % (rc, rc_csv, bad[:5]))
        result(numbered and len(lines) - 1 == events and events > 100, 'text_one_line_per_event',
               '%d text lines after the header, %d csv rows, numbered %s' %
               (len(lines) - 1, events, numbered))
        raw_names = sum(1 for r in rows[1:] for v in r if any(ord(c) < 0x20 for c in v))
        result(raw_names > 0, 'csv_keeps_names', 'no csv field kept its control bytes')
        for esc in (b'\\x1b[31m\\x0a', b'\\x7f\\x85\\x09\\x0dx\\x9b', b'\\x1b[2J', b'a\\x0ab\\x7f'):
            result(esc in text, 'text_shows_' + esc.decode().replace('\\', '').replace('[', ''),
                   '%r not in the text output' % esc)
        for by in ('file', 'process'):
            rc, out = run('--top', '1', '--by', by)
            bad = bad_bytes(out)
            result(rc == 0 and not bad and b'\\x' in out, 'top_blocks_by_' + by,
                   'rc %d, raw control bytes at %s' % (rc, bad[:5]))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
