#!/bin/bash
# linux_metrics.sh DISKMON - --metrics in Linux live capture, on a loop device.
#
#   - atomic replacement: while diskmon rewrites FILE (made big: 1000
#     process names with series of their own) every 0.1 s under a steady
#     load, a reader opens and reads FILE 10,000 times; every read must be
#     a whole file (first family first, last line last, final newline),
#     and the reads must have seen several versions. (A writer that
#     truncates FILE and writes it in place is caught by this.)
#   - promtool check metrics accepts a file written mid-run and the last
#     one, whose build_info names the live source (tracefs);
#   - two loop devices read by dd, --metrics-top 1: each disk's process
#     series sum to its disk totals and to the csv lines of the same run,
#     and each flag's count equals the csv lines with that flag
#     (metrics_sums.py); one (dd, disk) pair has series;
#   - a FILE in a read-only directory: one message on stderr, diskmon keeps
#     capturing through several intervals and, never having written it,
#     exits 1 on SIGINT.
# Prints "PASS linux_metrics/name" / "FAIL ..." lines; exit 0, 1, or 77
# (skip: not root, no loop devices, no promtool/python3; a failure under
# CI=true).
set -u

DISKMON=${1:?usage: linux_metrics.sh DISKMON}
HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=../lib/loop_common.sh
. "$HERE/../lib/loop_common.sh"
command -v promtool >/dev/null || skip "promtool is not installed (apt-get install prometheus)"
command -v python3 >/dev/null || skip "python3 is not installed"
make_loop 64M metrics

fails=0
pass() { echo "PASS linux_metrics/$1"; }
bad() { echo "FAIL linux_metrics/$1: $2"; fails=$((fails + 1)); }

# A steady load: 4 KiB direct reads over the device, until killed.
load() {
    while :; do
        dd if="$loop" of=/dev/null bs=4096 count=256 iflag=direct 2>/dev/null || break
    done
}

# --- atomic replacement ---------------------------------------------------------
mkdir "$work/prom"
prom=$work/prom/diskmon.prom
"$DISKMON" -d "$name" --metrics "$prom" --interval 0.1 --metrics-top 1000 \
    >"$work/out" 2>"$work/err" &
dm=$!
bg="$bg $dm"
wait_started "$dm" "$work/err" test -s "$prom"
# A big file, so that a writer that is not atomic would be caught in the
# act: 1000 process names (a thread renaming itself, PR_SET_NAME), each
# reading once, give 1000 named series, some 8000 lines.
python3 - "$loop" <<'PY' || fail "the renaming reader failed"
import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NAME = 15  # prctl(2)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
for i in range(1000):
    libc.prctl(PR_SET_NAME, b"dmn%05d" % i, 0, 0, 0)
    os.preadv(fd, [buf], (i % 4096) * 4096)
os.close(fd)
PY
sleep 0.5
load &
ld=$!
bg="$bg $ld"
out=$(python3 - "$prom" <<'PY'
import sys, time
path = sys.argv[1]
seen, torn = set(), 0
for i in range(10000):
    with open(path, "rb") as f:
        data = f.read()
    whole = (data.startswith(b"# HELP diskmon_requests_total ") and data.endswith(b"\n")
             and b"\ndiskmon_last_update_timestamp_seconds " in data
             and data.rstrip(b"\n").rsplit(b"\n", 1)[-1].startswith(
                 b"diskmon_last_update_timestamp_seconds "))
    if not whole:
        torn += 1
    seen.add(data[-80:])  # the timestamp line: one per write
print(torn, len(seen))
PY
)
torn=${out% *} versions=${out#* }
if [ "$torn" = 0 ] && [ "$versions" -ge 5 ]; then
    pass "atomic_replace_10000_reads"
else
    bad "atomic_replace_10000_reads" "partial files seen: $torn, versions seen: $versions"
fi
echo "# linux_metrics: 10000 reads saw $versions versions, $torn partial"
cp "$prom" "$work/mid.prom"
if msg=$(promtool check metrics <"$work/mid.prom" 2>&1); then
    pass promtool_mid_run
else
    bad promtool_mid_run "$(printf '%s' "$msg" | head -c 300)"
fi
kill "$ld" 2>/dev/null
wait "$ld" 2>/dev/null
interrupt "$dm"
# Exit 0, or 3 when the unthrottled load outran the capture and the loss
# was counted and said (a sanitizer build is several times slower).
if [ "$rc" = 0 ] || { [ "$rc" = 3 ] && grep -q 'events\? lost' "$work/err"; }; then
    pass exit_0_after_sigint
else
    bad exit_0_after_sigint "exit $rc: $(cat "$work/err")"
fi
[ -s "$work/out" ] && bad daemon_mode_no_lines "stdout: $(head -c 200 "$work/out")" ||
    pass daemon_mode_no_lines
if msg=$(promtool check metrics <"$prom" 2>&1); then
    pass promtool_last
else
    bad promtool_last "$(printf '%s' "$msg" | head -c 300)"
fi
grep -q "^diskmon_build_info{version=\"[^\"]*\",source=\"tracefs\"} 1$" "$prom" &&
    pass build_info_tracefs || bad build_info_tracefs "$(grep build_info "$prom")"
reads=$(sed -n "s/^diskmon_requests_total{disk=\"$name\",op=\"read\"} //p" "$prom")
[ "${reads:-0}" -gt 0 ] && pass reads_counted || bad reads_counted "no reads of $name"
named=$(grep -c "^diskmon_process_bytes_total{process=\"dmn[0-9]*\",disk=\"$name\",op=\"read\"}" "$prom")
[ "$named" -ge 990 ] && pass thousand_names_promoted ||
    bad thousand_names_promoted "$named of the 1000 names have series"
left=$(find "$work/prom" -name '*.tmp' | head -3)
[ -n "$left" ] && bad no_tmp_left "$left is left" || pass no_tmp_left

# --- two disks: each disk's process series add up --------------------------------
# dd reads 64 blocks of the first loop device and 32 of a second; with
# --metrics-top 1 one of the two (dd, disk) pairs has series, the other is
# in its disk's (other). metrics_sums.py adds them up per disk against the
# disk totals and the csv lines of the same run.
truncate -s 16M "$work/disk2.img"
if loop2=$(losetup -f --show "$work/disk2.img"); then
    trap 'losetup -d "$loop2"; loop_cleanup' EXIT
    name2=${loop2#/dev/}
    if command -v udevadm >/dev/null; then udevadm settle -t 5 2>/dev/null; fi
    "$DISKMON" -d "$name,$name2" --metrics "$work/two.prom" --metrics-top 1 \
        --interval 0.2 -f csv -o "$work/two.csv" 2>"$work/err" &
    dm=$!
    bg="$bg $dm"
    sleep 0.5
    dd if="$loop" of=/dev/null bs=4096 count=64 iflag=direct 2>/dev/null
    dd if="$loop2" of=/dev/null bs=4096 count=32 iflag=direct 2>/dev/null
    # Writes with flags to count: sync (O_DIRECT|O_SYNC), and the fsync's
    # empty preflush.
    dd if=/dev/zero of="$loop2" bs=4096 count=8 oflag=direct,sync conv=fsync 2>/dev/null
    sleep 0.5
    interrupt "$dm"
    if msg=$(python3 "$HERE/../oracles/metrics_sums.py" "$work/two.prom" "$work/two.csv" 2>&1) &&
        [ "$rc" = 0 ]; then
        pass two_disks_process_sums
    else
        bad two_disks_process_sums "exit $rc: $(printf '%s' "$msg" | head -c 400)"
    fi
    echo "# linux_metrics: $(printf '%s' "$msg" | tail -n 1)"
    dd_disks=$(grep -c "^diskmon_process_bytes_total{process=\"dd\",disk=\"\($name\|$name2\)\",op=\"read\"} [1-9]" "$work/two.prom")
    [ "$dd_disks" = 1 ] && pass two_disks_top_1_pair ||
        bad two_disks_top_1_pair "$dd_disks (dd, disk) pairs with series, want 1"
    if msg=$(promtool check metrics <"$work/two.prom" 2>&1); then
        pass two_disks_promtool
    else
        bad two_disks_promtool "$(printf '%s' "$msg" | head -c 300)"
    fi
    losetup -d "$loop2"
    trap loop_cleanup EXIT
else
    bad two_disks_process_sums "cannot create a second loop device"
fi

# --- a read-only directory: one message, the capture goes on ---------------------
mkdir "$work/ro"
if mount -t tmpfs -o ro,size=1M tmpfs "$work/ro" 2>/dev/null; then
    "$DISKMON" -d "$name" --metrics "$work/ro/diskmon.prom" --interval 0.1 -f csv \
        -o "$work/ro.csv" 2>"$work/err" &
    dm=$!
    bg="$bg $dm"
    sleep 0.5
    dd if="$loop" of=/dev/null bs=4096 count=16 iflag=direct 2>/dev/null
    sleep 1
    if kill -0 "$dm" 2>/dev/null; then
        interrupt "$dm"
        n=$(grep -c "cannot write the metrics file" "$work/err")
        rows=$(($(wc -l <"$work/ro.csv") - 1))
        # Exit 1: the run ended without one successful write (README "Exit codes").
        if [ "$rc" = 1 ] && [ "$n" = 1 ] && [ "$rows" -ge 16 ]; then
            pass readonly_dir_one_message
        else
            bad readonly_dir_one_message "exit $rc, $n messages, $rows rows: $(head -c 300 "$work/err")"
        fi
    else
        wait "$dm"
        bad readonly_dir_one_message "diskmon ended: $(head -c 300 "$work/err")"
    fi
    umount "$work/ro"
else
    echo "SKIP linux_metrics/readonly_dir_one_message: cannot mount a read-only tmpfs"
fi

[ "$fails" = 0 ] || exit 1
exit 0
