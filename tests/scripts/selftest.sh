#!/bin/bash
# selftest.sh DISKMON - `diskmon --self-test [DIR]` on Linux, as root.
#
# On the real disk's file system (/var/tmp) and on ext4 over a loop device
# (in /dev/shm), every check must PASS, exit 0; and what the self-test says
# must be true by other means: the file's first sector from filefrag -v
# (plus the partition's start from sysfs), the disk from sysfs, the pid
# from the shell that started it. Then the cases that must FAIL cleanly,
# exit 1, leaving no file and no tracefs instance: one event dropped on
# purpose (DM_SELFTEST_DROP=write), a tmpfs (no block I/O at all), SIGINT
# in the middle, and a user who is not root (the first check fails with
# the advice of a normal run). Needs root: otherwise "SKIP: why", exit 77
# (under CI=true a failure, as in the other live tests).
set -u

DISKMON=${1:?usage: selftest.sh DISKMON}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"
command -v filefrag >/dev/null || skip "filefrag is not installed (e2fsprogs)"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed (e2fsprogs)"
make_loop 64M selftest
out=$work/out

# no_leftovers PID DIR: the file and the tracefs instance are gone.
no_leftovers() {
    local left
    left=$(find "$2" -maxdepth 1 -name "diskmon-selftest.$1.*" 2>/dev/null)
    [ -z "$left" ] || fail "the self-test's file was left behind: $left"
    for t in /sys/kernel/tracing /sys/kernel/debug/tracing; do
        [ -d "$t/instances/diskmon-$1" ] && fail "tracefs instance $t/instances/diskmon-$1 left behind"
    done
    return 0
}

# run_selftest DIR [ENV...]: run in the background; while the file exists
# take its extents with filefrag -v (as the self-test reads them, after
# its fsync); then wait. Sets $rc, $pid and $frag (filefrag's output).
run_selftest() {
    local dir=$1 f=""
    shift
    env "$@" "$DISKMON" --self-test "$dir" >"$out" 2>"$out.err" &
    pid=$!
    frag=""
    for _ in $(seq 500); do
        f=$(find "$dir" -maxdepth 1 -name "diskmon-selftest.$pid.*" 2>/dev/null | head -n 1)
        # After the self-test's fsync the extent is no longer delayed.
        if [ -n "$f" ] && frag=$(filefrag -v "$f" 2>/dev/null) &&
            printf '%s\n' "$frag" | grep -q '^ *0:' &&
            ! printf '%s\n' "$frag" | grep -q 'unknown\|delalloc'; then
            break
        fi
        frag=""
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    wait "$pid"
    rc=$?
}

# expect_all_pass DIR DISK: exit 0, only PASS lines, the figures true.
expect_all_pass() {
    local dir=$1 disk=$2 bs phys mm start=0 sector want
    [ "$rc" = 0 ] || fail "--self-test $dir: exit $rc, want 0: $(cat "$out" "$out.err")"
    grep -q '^FAIL' "$out" && fail "--self-test $dir printed a FAIL: $(cat "$out")"
    [ "$(grep -c '^PASS' "$out")" -ge 12 ] || fail "--self-test $dir: fewer than 12 checks: $(cat "$out")"
    grep -q '^diskmon .* --self-test: [0-9]* passed, 0 failed' "$out" ||
        fail "no summary line: $(tail -n 2 "$out")"
    [ -n "$frag" ] || fail "could not take the file's extents with filefrag while it existed"
    # filefrag -v: "Filesystem type is: ef53", "... (16 blocks of 4096 bytes)",
    # then " 0: 0.. 7: 34816.. 34823: 8: last,eof".
    bs=$(printf '%s\n' "$frag" | sed -n 's/.*blocks of \([0-9]*\) bytes.*/\1/p')
    phys=$(printf '%s\n' "$frag" | awk '$1 == "0:" { sub(/\.\./, "", $4); print $4; exit }')
    if [ -z "$bs" ] || [ -z "$phys" ]; then fail "cannot read filefrag -v: $frag"; fi
    mm=$(stat -c '%Hd:%Ld' "$dir")
    [ -f "/sys/dev/block/$mm/partition" ] && start=$(cat "/sys/dev/block/$mm/start")
    sector=$((phys * bs / 512 + start))
    want="PASS write 1: 8192 bytes at sector $sector of $disk, seen once"
    grep -qx "$want" "$out" || fail "want '$want' (filefrag: block $phys of $bs bytes, partition start $start): $(cat "$out")"
    # write 2 is 2 blocks further (8192 bytes) when the file is one extent.
    if [ "$(printf '%s\n' "$frag" | grep -c '^ *[0-9]*:')" = 1 ]; then
        grep -q "^PASS read 2: 24576 bytes at sector $((sector + 16)) of $disk, seen once" "$out" ||
            fail "read 2 not at sector $((sector + 16)): $(cat "$out")"
    fi
    grep -q "^PASS pid and process: $pid diskmon on all" "$out" ||
        fail "pid and process line does not name pid $pid: $(grep 'pid and process' "$out")"
    grep -q '^PASS temp file: '"$dir"'/diskmon-selftest\.'"$pid"'\.' "$out" ||
        fail "temp file line does not name a file in $dir: $(grep 'temp file' "$out")"
    grep -q "^  backend: tracefs" "$out" || fail "no info lines from the source: $(head -n 8 "$out")"
    grep -q "^  kernel: Linux $(uname -r)\$" "$out" || fail "the kernel line is not uname -r"
    no_leftovers "$pid" "$dir"
}

# The real disk: /var/tmp (the self-test's default folder) on its file system.
mm=$(stat -c '%Hd:%Ld' /var/tmp)
if [ "${mm%%:*}" = 0 ] || [ ! -e "/sys/dev/block/$mm" ]; then
    echo "note: /var/tmp is on no block device here ($(stat -f -c %T /var/tmp)); real-disk case skipped"
elif [ -e "/sys/dev/block/$mm/dm" ] || [ -e "/sys/dev/block/$mm/md" ]; then
    echo "note: /var/tmp is on a stacked device ($mm); real-disk case skipped (sectors are remapped)"
else
    real=$(basename "$(readlink -f "/sys/dev/block/$mm")")
    [ -f "/sys/dev/block/$mm/partition" ] && real=$(basename "$(dirname "$(readlink -f "/sys/dev/block/$mm")")")
    run_selftest /var/tmp
    expect_all_pass /var/tmp "$real"
    echo "ok: real disk ($real, /var/tmp): $(tail -n 1 "$out")"
fi

# ext4 on the loop device.
mkfs.ext4 -q -F "$loop" >"$work/mkfs.log" 2>&1 || fail "mkfs.ext4 $loop: $(cat "$work/mkfs.log")"
mkdir "$work/mnt"
mount "$loop" "$work/mnt" || fail "cannot mount $loop"
trap 'umount "$work/mnt" 2>/dev/null; loop_cleanup' EXIT
run_selftest "$work/mnt"
expect_all_pass "$work/mnt" "$name"
echo "ok: ext4 on $name: $(tail -n 1 "$out")"

# One event dropped on purpose: that request must FAIL, exit 1.
run_selftest "$work/mnt" DM_SELFTEST_DROP=write
[ "$rc" = 1 ] || fail "DM_SELFTEST_DROP=write: exit $rc, want 1: $(cat "$out")"
grep -q '^FAIL write 1: not seen' "$out" || fail "DM_SELFTEST_DROP=write: no 'FAIL write 1: not seen': $(cat "$out")"
grep -q ' 1 failed$' "$out" || fail "DM_SELFTEST_DROP=write: summary is not '1 failed': $(tail -n 1 "$out")"
no_leftovers "$pid" "$work/mnt"
echo "ok: one dropped event is a FAIL"

# tmpfs: no block I/O can happen; the first step fails, naming why.
"$DISKMON" --self-test /dev/shm >"$out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "--self-test /dev/shm: exit $rc, want 1: $(cat "$out")"
[ "$(head -n 1 "$out" | cut -c1-40)" = "FAIL temp file: /dev/shm is on a tmpfs, " ] ||
    fail "--self-test /dev/shm: first line: $(head -n 1 "$out")"
[ "$(grep -c '^PASS\|^FAIL' "$out")" = 1 ] || fail "--self-test /dev/shm went on after the first step: $(cat "$out")"
find /dev/shm -maxdepth 1 -name 'diskmon-selftest.*' | grep -q . && fail "a file was left in /dev/shm"
echo "ok: tmpfs fails at its first step"

# SIGINT while the self-test runs: exit 1, nothing left.
"$DISKMON" --self-test "$work/mnt" >"$out" 2>&1 &
pid=$!
for _ in $(seq 300); do
    find "$work/mnt" -maxdepth 1 -name "diskmon-selftest.$pid.*" | grep -q . && break
    sleep 0.01
done
interrupt "$pid"
[ "$rc" = 1 ] || fail "--self-test after SIGINT: exit $rc, want 1: $(cat "$out")"
grep -q '^FAIL' "$out" || fail "--self-test after SIGINT printed no FAIL: $(cat "$out")"
no_leftovers "$pid" "$work/mnt"
echo "ok: SIGINT ends it in order: $(grep '^FAIL' "$out" | head -n 1)"

# Not root: the first check is the live source's, with the usual advice.
if command -v setpriv >/dev/null; then
    # /var/tmp: a folder any user may write (the scratch folder is root's).
    setpriv --reuid=65534 --regid=65534 --clear-groups "$DISKMON" --self-test /var/tmp >"$out" 2>&1
    rc=$?
    [ "$rc" = 1 ] || fail "not root: exit $rc, want 1: $(cat "$out")"
    head -n 1 "$out" | grep -q '^FAIL live source: .*Run diskmon as root' ||
        fail "not root: first line: $(head -n 1 "$out")"
    echo "ok: not root: $(head -n 1 "$out" | cut -c1-80)..."
fi

# Options a self-test has no use for are refused (exit 2).
"$DISKMON" --self-test -n 3 >"$out" 2>&1
rc=$?
if [ "$rc" != 2 ] || ! grep -q -- '--self-test takes no other options' "$out"; then
    fail "--self-test -n 3: exit $rc: $(cat "$out")"
fi
echo "PASS: diskmon --self-test"
