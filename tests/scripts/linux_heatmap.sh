#!/bin/bash
# linux_heatmap.sh DISKMON - --heatmap and --offset-map in Linux live
# capture, on a loop device:
#   - dd writes a known number of 4 KiB blocks with O_DIRECT (each its own
#     request); the live heat map, read while diskmon still runs, is valid
#     SVG (python3's xml.etree) and holds exactly that many requests, as
#     does the offset map; after SIGINT the last maps' cells are recounted
#     from the json rows of the same run (heatmap_check.py);
#   - the maps are read many times while being rewritten every 0.2 s:
#     every read parses (the rename is atomic);
#   - the offset map's rows run to the loop device's size as sysfs gives
#     it, checked against blockdev --getsize64 (heatmap_check.py size);
#   - a symbolic link planted at the target before the start is refused
#     with exit 2, as --metrics refuses it; one planted mid-run is not
#     followed (its target unchanged) and said once on stderr.
# Prints "PASS linux_heatmap/name" / "FAIL ..." lines; exit 0, 1 or 77.
set -u

DISKMON=${1:?usage: linux_heatmap.sh DISKMON}
HERE=$(cd "$(dirname "$0")" && pwd)
CHECK=$HERE/../oracles/heatmap_check.py

# shellcheck source=../lib/loop_common.sh
. "$HERE/../lib/loop_common.sh"
command -v python3 >/dev/null || skip "python3 is not installed"
make_loop 64M heatmap

fails=0
pass() { echo "PASS linux_heatmap/$1"; }
bad() { echo "FAIL linux_heatmap/$1: $2"; fails=$((fails + 1)); }
WRITES=300

# The requests a map holds (the sum of its cells), or "invalid: why".
map_total() {
    python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception as e:  # a half-written file would land here
    print("invalid: %s" % e)
    sys.exit(0)
print(sum(int(c.get("data-count")) for c in root.iter() if c.get("data-count")))
PY
}

# --- a planted link before the start: refused as --metrics refuses it --------
echo important >"$work/victim.txt"
ln -s victim.txt "$work/link.svg"
"$DISKMON" -d "$name" --heatmap "$work/link.svg" >"$work/out" 2>"$work/err"
rc=$?
"$DISKMON" -d "$name" --metrics "$work/link.svg" >"$work/out2" 2>"$work/err2"
rc2=$?
if [ "$rc" -eq 2 ] && [ "$rc2" -eq 2 ] && grep -q "is a symbolic link" "$work/err" &&
    [ "$(cat "$work/victim.txt")" = important ] && [ -L "$work/link.svg" ]; then
    pass symlink_refused_at_start
else
    bad symlink_refused_at_start "heatmap exit $rc, metrics exit $rc2: $(cat "$work/err")"
fi

# --- dd's writes, live ------------------------------------------------------------
# --metrics sets the interval (--interval needs --top or --metrics): 0.2 s.
"$DISKMON" -d "$name" --op write -f json -o "$work/rows.json" --heatmap "$work/h.svg" \
    --offset-map "$work/o.svg" --metrics "$work/m.prom" --interval 0.2 2>"$work/err" &
dm=$!
bg="$bg $dm"
wait_started "$dm" "$work/err" test -s "$work/h.svg"
first=$(map_total "$work/h.svg")
[ "$first" = 0 ] && pass empty_map_at_start || bad empty_map_at_start "first map: $first"

dd if=/dev/zero of="$loop" bs=4096 count=$WRITES oflag=direct 2>"$work/dd.err" ||
    fail "dd failed: $(cat "$work/dd.err")"
grep -q "^$WRITES+0 records out" "$work/dd.err" || fail "dd: $(cat "$work/dd.err")"
# Read the maps again and again while they are rewritten every 0.2 s;
# every read must parse, and the writes must show within 2 s.
invalid=0 seen=0 reads=0
for _ in $(seq 40); do
    t=$(map_total "$work/h.svg")
    reads=$((reads + 1))
    case $t in invalid*) invalid=$((invalid + 1)); echo "   $t" ;; "$WRITES") seen=1 ;; esac
    [ "$seen" = 1 ] && [ "$reads" -ge 20 ] && break
    sleep 0.05
done
[ "$invalid" -eq 0 ] && pass valid_svg_mid_run ||
    bad valid_svg_mid_run "$invalid of $reads reads did not parse"
[ "$seen" = 1 ] && pass "live_map_holds_${WRITES}_writes" ||
    bad "live_map_holds_${WRITES}_writes" "the map mid-run holds $(map_total "$work/h.svg")"
t=$(map_total "$work/o.svg")
[ "$t" = "$WRITES" ] && pass "live_offset_map_holds_${WRITES}_writes" ||
    bad "live_offset_map_holds_${WRITES}_writes" "the offset map mid-run holds $t"

# The disk's size from blockdev (BLKGETSIZE64), not from sysfs as diskmon reads it.
size=$(blockdev --getsize64 "$loop" 2>/dev/null)
if [ -n "$size" ]; then
    python3 "$CHECK" size "$work/o.svg" "$name=$size" linux_heatmap/offset_rows_to_disk_size ||
        fails=$((fails + 1))
else
    echo "SKIP linux_heatmap/offset_rows_to_disk_size: blockdev --getsize64 $loop failed"
fi

# --- a link planted mid-run: not followed ------------------------------------------
# Planted by rename over the map, as an attacker would: an rm then ln can
# lose to diskmon's own rewrite between the two ("File exists"). A rewrite
# already past its last look at the name can still rename over the link
# (diskmon's refusal is for what stands there when it looks): plant again
# then, at most three times.
for _ in 1 2 3; do
    ln -sfn victim.txt "$work/o.svg.link" && mv -T "$work/o.svg.link" "$work/o.svg"
    sleep 0.6
    [ -L "$work/o.svg" ] && break
done
interrupt "$dm"
if [ "$(cat "$work/victim.txt")" = important ] && [ -L "$work/o.svg" ] &&
    [ "$(grep -c "offset map $work/o.svg: it is a symbolic link" "$work/err")" -eq 1 ]; then
    pass symlink_mid_run_not_followed
else
    bad symlink_mid_run_not_followed "stderr: $(head -c 400 "$work/err")"
fi
[ "$rc" -eq 0 ] && pass exit_0 || bad exit_0 "exit $rc: $(head -c 300 "$work/err")"

# --- the last map, every cell recounted --------------------------------------------
n=$(wc -l <"$work/rows.json")
[ "$n" -eq "$WRITES" ] && pass "json_rows_are_${WRITES}" || bad "json_rows_are_${WRITES}" "$n rows"
python3 "$CHECK" latency "$work/h.svg" "$work/rows.json" linux_heatmap/final_latency ||
    fails=$((fails + 1))
[ "$(stat -c %a "$work/h.svg")" = 644 ] && pass mode_0644 ||
    bad mode_0644 "$(stat -c %a "$work/h.svg")"
[ -z "$(find "$work" -name '*.tmp')" ] && pass no_temporary_left ||
    bad no_temporary_left "$(find "$work" -name '*.tmp')"

[ "$fails" -eq 0 ]
