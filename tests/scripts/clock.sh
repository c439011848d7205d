#!/usr/bin/env bash
# clock.sh - --clock and --utc on both sample traces, checked against the
# trace header read independently from the file bytes (python3, not
# diskmon's reader): TRACE_LOGFILE_HEADER.StartTime and .TimeZone
# (TIME_ZONE_INFORMATION), with the daylight-time rule applied by a separate
# implementation (Python's datetime calendar). Every event of every trace,
# in text, csv and json.
# Usage: clock.sh PATH/TO/diskmon. Exit 0 pass, 1 fail, 77 skip.
set -u
DISKMON=$(realpath "${1:?usage: clock.sh DISKMON}")
HERE=$(cd "$(dirname "$0")" && pwd)
ETL=${DM_SHARED_ETL:-$HERE/../../../shared/etl}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if ! command -v python3 >/dev/null; then
    echo "SKIP clock/all: python3 is not installed (apt-get install python3)"
    exit 77
fi
if [ ! -f "$ETL/perfview-net452-x64-win8.etl" ] || [ ! -f "$ETL/filtrace-diskio-win11.etl" ]; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL clock/sample_traces: not found at $ETL (required under CI=true)"
        exit 1
    fi
    echo "SKIP clock/all: sample traces not found at $ETL (set DM_SHARED_ETL)"
    exit 77
fi

fails=0
for trace in perfview-net452-x64-win8 filtrace-diskio-win11; do
    etl=$ETL/$trace.etl
    # Time since the start (already checked against the reference in cli.sh),
    # then the same events with --clock and --utc.
    "$DISKMON" -r "$etl" -f csv --no-header | tr -d '\r' | cut -d, -f2 >"$TMP/rel" &&
        "$DISKMON" -r "$etl" -f csv --no-header --clock | tr -d '\r' | cut -d, -f2 >"$TMP/csv_local" &&
        "$DISKMON" -r "$etl" -f csv --no-header --utc | tr -d '\r' | cut -d, -f2 >"$TMP/csv_utc" &&
        "$DISKMON" -r "$etl" --no-header --clock | awk '{ print $2 }' >"$TMP/txt_local" &&
        "$DISKMON" -r "$etl" --no-header --utc | awk '{ print $2 }' >"$TMP/txt_utc" &&
        "$DISKMON" -r "$etl" -f json --utc | sed 's/.*"time_utc":"\([^"]*\)".*/\1/' >"$TMP/json_utc" ||
        { echo "FAIL clock/${trace}_run: diskmon failed"; fails=$((fails + 1)); continue; }
    python3 - "$etl" "$TMP" "$trace" <<'EOF' || fails=$((fails + 1))
import datetime as dt
import struct
import sys

etl, tmp, name = sys.argv[1], sys.argv[2], sys.argv[3]
raw = open(etl, "rb").read(4096)
# Buffer 0: a 0x48-byte WMI_BUFFER_HEADER, then the trace header record: a
# system header (0x20 bytes for the 64-bit kind, marker 0xC002xxxx) and the
# TRACE_LOGFILE_HEADER payload (docs/etw.md §4).
marker = struct.unpack_from("<I", raw, 0x48)[0]
assert marker >> 16 == 0xC002, hex(marker)
p = 0x48 + 0x20
pointer_size = struct.unpack_from("<I", raw, p + 0x2C)[0]
wide = 8 if pointer_size == 8 else 0
start_ft = struct.unpack_from("<Q", raw, p + 0x100 + wide)[0]
tz = p + 0x40 + wide
bias, = struct.unpack_from("<i", raw, tz)
std_date = struct.unpack_from("<8H", raw, tz + 0x44)
std_bias, = struct.unpack_from("<i", raw, tz + 0x54)
dst_date = struct.unpack_from("<8H", raw, tz + 0x98)
dst_bias, = struct.unpack_from("<i", raw, tz + 0xA8)
print(f"  {name}: Bias {bias}, StandardDate {std_date}, DaylightDate {dst_date}, "
      f"DaylightBias {dst_bias}")

def transition(d, year):
    """SYSTEMTIME rule -> naive local datetime in year (wYear 0: nth weekday)."""
    y, month, dow, nth, hour, minute, second, _ = d
    if y != 0:
        return dt.datetime(y, month, nth, hour, minute, second) if y == year else None
    # Python: Monday = 0; SYSTEMTIME: Sunday = 0.
    first = dt.date(year, month, 1)
    want = (dow - 1) % 7
    day = first + dt.timedelta(days=(want - first.weekday()) % 7 + 7 * (nth - 1))
    while day.month != month:
        day -= dt.timedelta(days=7)
    return dt.datetime(day.year, day.month, day.day, hour, minute, second)

def bias_at(utc):
    if std_date[1] == 0:
        return bias + std_bias
    year = (utc - dt.timedelta(minutes=bias + std_bias)).year
    start = transition(dst_date, year)
    end = transition(std_date, year)
    if start is None or end is None:
        return bias + std_bias
    start_utc = start + dt.timedelta(minutes=bias + std_bias)
    end_utc = end + dt.timedelta(minutes=bias + dst_bias)
    if start_utc < end_utc:
        inside = start_utc <= utc < end_utc
    else:
        inside = not (end_utc <= utc < start_utc)
    return bias + (dst_bias if inside else std_bias)

epoch_1601 = dt.datetime(1601, 1, 1)
rel = [l.strip() for l in open(f"{tmp}/rel")]
files = {k: [l.rstrip("\n") for l in open(f"{tmp}/{k}")]
         for k in ("csv_local", "csv_utc", "txt_local", "txt_utc", "json_utc")}
bad = 0
for i, r in enumerate(rel):
    whole, frac = r.split(".")
    ns = int(whole) * 10**9 + int(frac)
    wall_ns = start_ft * 100 + ns            # ns since 1601, exact
    us = (wall_ns + 500) // 1000             # rounded as the text rounds
    utc_us = epoch_1601 + dt.timedelta(microseconds=us)
    utc_ns = epoch_1601 + dt.timedelta(microseconds=wall_ns // 1000)
    local_us = utc_us - dt.timedelta(minutes=bias_at(utc_us))
    want = {
        "csv_local": local_us.strftime("%Y-%m-%d %H:%M:%S.%f"),
        "csv_utc": utc_us.strftime("%Y-%m-%d %H:%M:%S.%f"),
        "txt_local": local_us.strftime("%H:%M:%S.%f"),
        "txt_utc": utc_us.strftime("%H:%M:%S.%f"),
        "json_utc": utc_ns.strftime("%Y-%m-%dT%H:%M:%S.") + f"{wall_ns % 10**9:09d}Z",
    }
    for k, v in want.items():
        got = files[k][i] if i < len(files[k]) else None
        if got != v:
            if bad < 5:
                print(f"  {name} event {i + 1} {k}: got {got!r}, want {v!r}")
            bad += 1
for k in files:
    if len(files[k]) != len(rel):
        print(f"  {name} {k}: {len(files[k])} lines, want {len(rel)}")
        bad += 1
if bad or not rel:
    print(f"FAIL clock/{name}_matches_header: {bad} mismatches over {len(rel)} events")
    sys.exit(1)
print(f"PASS clock/{name}_matches_header ({len(rel)} events, 5 outputs each)")
EOF
done
[ "$fails" -eq 0 ]
