#!/usr/bin/env bash
# heatmap.sh - --heatmap and --offset-map on replay, against diskmon's own
# -f json rows of the same input and filters (tests/oracles/heatmap_check.py
# places every row in the cell whose edges hold it: every count equal, the
# cells' sum equal to the rows): the shared x64 and Windows 11 traces
# (skipped with the reason where absent), with and without filters
# (--op read -m 1 on x64, --op write on Windows 11), and a synthetic trace from gen_etl --stretch that
# spans 31 minutes with latencies from microseconds to seconds, whose grid
# must stay within its 300 columns (the step doubled, said in the title).
# Bad input: a directory, a FIFO, a planted symbolic link, a step of 0 or
# negative, a map given twice: exit 2, one line, nothing written.
# Usage: heatmap.sh PATH/TO/diskmon BUILD_DIR. Exit 0 pass, 1 fail, 77 skip.
set -u
DISKMON=${1:?usage: heatmap.sh DISKMON BUILD_DIR}
BUILD=${2:?usage: heatmap.sh DISKMON BUILD_DIR}
DISKMON=$(cd "$(dirname "$DISKMON")" && pwd)/$(basename "$DISKMON")
HERE=$(cd "$(dirname "$0")" && pwd)
ETL=${DM_SHARED_ETL:-$HERE/../../../shared/etl}
CHECK=$HERE/../oracles/heatmap_check.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SUITE=heatmap
# shellcheck source=../lib/results.sh
. "$HERE/../lib/results.sh"

# Both maps and the json rows of one run; every cell recounted.
recount() { # name, diskmon args...
    local name=$1; shift
    rm -f "$TMP/lat.svg" "$TMP/off.svg"
    if ! "$DISKMON" "$@" -f json --heatmap "$TMP/lat.svg" --offset-map "$TMP/off.svg" \
        >"$TMP/rows.json" 2>"$TMP/err"; then
        fail "$name" "diskmon failed: $(head -c 300 "$TMP/err")"
        return
    fi
    python3 "$CHECK" latency "$TMP/lat.svg" "$TMP/rows.json" "$SUITE/${name}_latency" ||
        fails=$((fails + 1))
    python3 "$CHECK" offset "$TMP/off.svg" "$TMP/rows.json" "$SUITE/${name}_offset" ||
        fails=$((fails + 1))
}

# The disks' sizes, from outside diskmon (heatmap_check.py size): for the
# win8 sample, PerfView's baseline lists the PhyDisk geometry and the
# LogDisk partitions (the size: the geometry's product, or the last
# partition's end where it lies further, as a partition lies on its
# disk); for the Windows 11 sample nothing independent lists its PhyDisk
# fields, so the check is a bound: each disk at least as large as the end
# of its furthest request in the reference decoder's csv.
size_spec() { # trace -> SPEC
    python3 - "$ETL/reference/$1" <<'PY'
import csv, re, sys
path = sys.argv[1]
num = lambda s: int(s.replace(",", ""))
sizes = {}
if path.endswith(".txt"):
    t = open(path).read()
    for m in re.finditer(r"SystemConfig/PhyDisk [^\n]*?DiskNumber=([\d,]+); BytesPerSector=([\d,]+); "
                         r"SectorsPerTrack=([\d,]+); TracksPerCylinder=([\d,]+); Cylinders=([\d,]+);", t):
        d, b, s, tr, c = map(num, m.groups())
        sizes[d] = "%d=%d" % (d, b * s * tr * c)
        for n in re.finditer(r"SystemConfig/LogDisk [^\n]*?StartOffset=([\d,]+); PartitionSize=([\d,]+); "
                             r"DiskNumber=([\d,]+);", t):
            st, ps, dd = map(num, n.groups())
            if dd == d:
                sizes[d] = "%d=%d" % (d, max(int(sizes[d].split("=")[1]), st + ps))
else:
    ends = {}
    for r in csv.DictReader(open(path)):
        if r["ByteOffset"]:
            d = int(r["DiskNumber"])
            ends[d] = max(ends.get(d, 0), int(r["ByteOffset"]) + int(r["TransferSize"]))
    sizes = {d: "%d>=%d" % (d, e) for d, e in ends.items()}
print(",".join(v for _, v in sorted(sizes.items())))
PY
}

for t in perfview-net452-x64-win8 filtrace-diskio-win11; do
    if [ -f "$ETL/$t.etl" ]; then
        recount "$t" -r "$ETL/$t.etl"
        case $t in
            *x64*) ref=$t.baseline.txt ;;
            *) ref=$t.diskio.csv ;;
        esac
        if [ -f "$ETL/reference/$ref" ]; then
            spec=$(size_spec "$ref")
            echo "   disk sizes from $ref: $spec"
            python3 "$CHECK" size "$TMP/off.svg" "$spec" "$SUITE/${t}_disk_size" ||
                fails=$((fails + 1))
        else
            echo "SKIP $SUITE/${t}_disk_size: $ETL/reference/$ref is absent"
        fi
        case $t in
            *x64*) recount "${t}_reads_over_1ms" -r "$ETL/$t.etl" --op read -m 1 ;;
            *) recount "${t}_writes" -r "$ETL/$t.etl" --op write ;;
        esac
    else
        echo "SKIP $SUITE/$t: $ETL/$t.etl is absent (the shared sample traces)"
    fi
done

# --- a synthetic trace of 31 minutes --------------------------------------------
GEN=$BUILD/gen_etl
[ -x "$GEN" ] || cmake --build "$BUILD" --target gen_etl >"$TMP/build.log" 2>&1
if [ -x "$GEN" ] && "$GEN" --ios 100000 --stretch 8000 "$TMP/long.etl" >/dev/null; then
    recount synthetic_31min -r "$TMP/long.etl"
    # gen_etl writes no SysConfig records: no size, the largest offset seen
    python3 "$CHECK" size "$TMP/off.svg" none "$SUITE/synthetic_no_disk_size" ||
        fails=$((fails + 1))
    # The grid's bound: at most 300 columns of one step, the last one
    # reaching past the last request; the title says the step doubled.
    python3 - "$TMP/lat.svg" "$TMP/rows.json" <<'PY' && pass grid_bound_31min || fail grid_bound_31min "see above"
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
t = sorted({(c.get("data-t0"), c.get("data-t1")) for c in root.iter() if c.get("data-count")},
           key=lambda p: float(p[0]))
steps = {round((float(b) - float(a)) * 1000) for a, b in t}
last = max(float(json.loads(l, parse_float=str)["time"]) for l in open(sys.argv[2]))
span_ms = float(last) * 1000
step = steps.pop() if len(steps) == 1 else None
title = "".join(root.itertext())
ok = (step is not None and span_ms / step <= 300 and span_ms / step >= 150 and
      "the step doubled" in title and len(t) <= 300)
print("   step %s ms, %d columns drawn, span %.0f s" % (step, len(t), span_ms / 1000))
sys.exit(0 if ok else 1)
PY
else
    fail synthetic_31min "gen_etl could not be built or run"
fi

# --- bad input: exit 2, one line, nothing written ------------------------------
T=$TMP/long.etl
D=$TMP/bad
mkdir -p "$D/dir.svg"
mkfifo "$D/fifo.svg"
echo important >"$D/victim.txt"
ln -s victim.txt "$D/link.svg"
# The folder's own entries and its mtime (a file made and removed there moves
# it), never "..": that is $TMP, whose mtime moves when $TMP/out is first made.
folder_state() { (cd "$D" && ls -lA --time-style=+%s | md5sum; stat -c %Y .; md5sum victim.txt); }
refused() { # name, want-in-message, args...
    local name=$1 want=$2 before after rc; shift 2
    before=$(folder_state)
    (cd "$D" && timeout 20 "$DISKMON" "$@" >"$TMP/out" 2>"$TMP/err"); rc=$?
    after=$(folder_state)
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q -- "$want" "$TMP/err" &&
        [ ! -s "$TMP/out" ] && [ "$before" = "$after" ] && [ ! -e "$D/m.svg" ]; then
        pass "$name"
    else
        fail "$name" "exit $rc, stderr: $(head -c 300 "$TMP/err"); folder changed: $([ "$before" = "$after" ] && echo no || echo yes)"
    fi
}
refused directory "is a directory" -r "$T" --heatmap dir.svg
refused fifo "is a FIFO" -r "$T" --heatmap fifo.svg
refused offset_fifo "is a FIFO" -r "$T" --offset-map fifo.svg
refused symlink "is a symbolic link" -r "$T" --heatmap link.svg
refused step_zero "bad step '0'" -r "$T" --heatmap m.svg --heatmap-step 0
refused step_negative "bad step '-5'" -r "$T" --heatmap m.svg --heatmap-step -5
refused step_fraction "bad step '1.5'" -r "$T" --heatmap m.svg --heatmap-step 1.5
refused twice "given twice" -r "$T" --heatmap m.svg --heatmap n.svg
refused step_alone "add one of them" -r "$T" --heatmap-step 10
refused same_as_trace "another option" -r "$T" --heatmap "$T"
refused heatmap_is_offset_map "another option" -r "$T" --heatmap m.svg --offset-map m.svg

[ "$fails" -eq 0 ]
