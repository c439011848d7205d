#!/bin/bash
# linux_pagecache.sh DISKMON - the Cache-W column of --top --by process,
# live on Linux: writes through the page cache under the process that made
# them, the block writes under the flusher that sent them later.
#
# A tarball of 300 MB (30 files of 10 MiB, a repeated pattern) is made once
# under /var/tmp and unpacked by `tar -x` onto ext4 over a loop device, fed
# 1 MiB at a time so that tar runs several intervals and ends inside one (its
# last bytes reach diskmon through its parent's count, which the kernel adds
# the reaped child's to). While tar runs, this script polls its own
# /proc/PID/io write_bytes (every 20 ms) for the reference. Then syncfs has
# the kernel's flusher threads write it all out to the loop device.
# Asserted on `--top 1 -f csv --by process -d LOOP`:
#   1. the header has cache_write_bytes beside write_bytes;
#   2. tar's rows sum to the polled write_bytes of tar, within 10 %;
#   3. this shell's rows (tar's parent) carry less than 10 % of it: the
#      count the kernel adds at the reap is not counted twice;
#   4. tar issued no block writes to speak of (< 10 %), and the kworker
#      rows (the flusher) issued block writes of at least half of it on the
#      loop device;
#   5. replay shows no such column (it is about this machine, not the trace's).
# Needs root (loop devices, mount, tracefs/perf) and a kernel with task I/O
# accounting (/proc/self/io); otherwise prints "SKIP: why" and exits 77,
# except under CI=true, where that is a failure.
set -u

DISKMON=${1:?usage: linux_pagecache.sh DISKMON}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"

[ -r /proc/self/io ] || skip "no /proc/self/io: the kernel has no task I/O accounting"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed (e2fsprogs)"

FILES=30 FILE_MIB=10
make_loop 512M pagecache
tarball_dir="" mnt=""
pagecache_cleanup() {
    [ -n "$mnt" ] && mountpoint -q "$mnt" && umount "$mnt"
    [ -n "$tarball_dir" ] && rm -rf "$tarball_dir"
    loop_cleanup
}
trap pagecache_cleanup EXIT

# Inode tables and journal zeroed now, not by ext4lazyinit during the run.
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loop" >"$work/mkfs.out" 2>&1 || fail "mkfs.ext4: $(cat "$work/mkfs.out")"
mnt=$work/mnt
mkdir "$mnt" || fail "cannot make $mnt"
mount "$loop" "$mnt" || fail "cannot mount $loop"

# The tarball, on a disk file system (not the tmpfs of /dev/shm).
tarball_dir=$(mktemp -d /var/tmp/diskmon_pagecache.XXXXXX) || fail "mktemp under /var/tmp"
mkdir "$tarball_dir/src"
python3 - "$tarball_dir/src" "$FILES" "$FILE_MIB" <<'PY' || fail "cannot write the files"
import os, sys
d, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    block = bytes([(i * 7 + j) % 251 for j in range(4096)])
    with open(os.path.join(d, "f%02d" % i), "wb") as f:
        f.write(block * (256 * mib))
PY
tar -cf "$tarball_dir/t.tar" -C "$tarball_dir/src" . || fail "tar -c failed"
rm -rf "$tarball_dir/src"
data_bytes=$((FILES * FILE_MIB * 1048576))

out=$work/top.csv err=$work/top.err
"$DISKMON" --top 1 --by process -f csv -d "$name" -o "$out" 2>"$err" &
dm=$!
bg="$bg $dm"
wait_started "$dm" "$err" test -e "$out"
grep -q "no Cache-W column" "$err" && fail "diskmon has no Cache-W column here: $(cat "$err")"
sleep 1.2

# tar -x fed 1 MiB every 15 ms: about 5 s for 300 MB.
python3 - "$tarball_dir/t.tar" <<'PY' | tar -x -C "$mnt" &
import sys, time
with open(sys.argv[1], "rb") as f:
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        time.sleep(0.015)
PY
tar_pid=$!
tar_parent=$(awk '{print $4}' "/proc/$tar_pid/stat" 2>/dev/null)
first="" last=""
while kill -0 "$tar_pid" 2>/dev/null; do
    v=$(awk '/^write_bytes:/ {print $2}' "/proc/$tar_pid/io" 2>/dev/null)
    if [ -n "$v" ]; then
        [ -n "$first" ] || first=$v
        last=$v
    fi
    sleep 0.02
done
wait "$tar_pid" || fail "tar -x failed"
[ -n "$first" ] || fail "could not read /proc/$tar_pid/io while tar ran"
expected=$((last - first))
echo "tar: pid $tar_pid, parent $tar_parent (this shell: $$), /proc/$tar_pid/io write_bytes" \
     "$first -> $last: $expected bytes (the files hold $data_bytes)"
[ "$expected" -ge $((data_bytes / 2)) ] ||
    fail "tar's polled write_bytes grew by $expected, under half of the $data_bytes written"

# syncfs: the flusher threads write the dirty pages to the loop device.
sync -f "$mnt" || fail "sync -f $mnt failed"
sleep 2.5
interrupt "$dm"
[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "diskmon exited $rc: $(cat "$err")"

python3 - "$out" "$tar_pid" "$$" "$expected" <<'PY' || fail "the csv does not match (above)"
import csv, sys
path, tar_pid, shell_pid, expected = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = list(csv.DictReader(open(path, newline="")))
head = open(path).readline().strip().split(",")
ok = True
def check(cond, what):
    global ok
    print(("ok: " if cond else "FAIL: ") + what)
    ok = ok and cond
check(head[head.index("write_bytes") + 1] == "cache_write_bytes",
      "cache_write_bytes sits beside write_bytes in the header: %s" % ",".join(head))
# Per interval, for a failure's reader: tar's and its parent's cache writes.
for r in rows:
    if r["pid"] in (tar_pid, shell_pid) and int(r["cache_write_bytes"]) > 0:
        print("  %s-%s pid %s %s: %s cache write bytes"
              % (r["interval_start"], r["interval_end"], r["pid"], r["process"],
                 r["cache_write_bytes"]))
tar_cache = sum(int(r["cache_write_bytes"]) for r in rows if r["pid"] == tar_pid)
tar_block = sum(int(r["write_bytes"]) for r in rows if r["pid"] == tar_pid)
shell_cache = sum(int(r["cache_write_bytes"]) for r in rows if r["pid"] == shell_pid)
kworker_block = sum(int(r["write_bytes"]) for r in rows
                    if r["pid"] != tar_pid and r["process"].startswith("kworker/"))
writers = sorted({r["process"] for r in rows if r["pid"] != tar_pid and int(r["write_bytes"]) > 0})
check(abs(tar_cache - expected) <= expected // 10,
      "tar's rows: %d cache write bytes, /proc/%s/io polled: %d (%+.2f %%)"
      % (tar_cache, tar_pid, expected, 100.0 * (tar_cache - expected) / expected))
check(shell_cache < expected // 10,
      "tar's parent (pid %s): %d cache write bytes, under 10 %% of tar's" % (shell_pid, shell_cache))
check(tar_block < expected // 10, "tar's own block writes: %d bytes" % tar_block)
check(kworker_block >= expected // 2,
      "block writes by the flusher's kworker rows: %d bytes (all block writers but tar: %s)"
      % (kworker_block, ", ".join(writers)))
sys.exit(0 if ok else 1)
PY

# 5. Replay: no column, whatever the trace.
etl=""
for f in "${DM_SHARED_ETL:-$(dirname "$0")/../../../shared/etl}"/*.etl; do
    [ -f "$f" ] && etl=$f && break
done
if [ -n "$etl" ]; then
    head=$("$DISKMON" -r "$etl" --top 1 --by process -f csv 2>/dev/null | head -1)
    case $head in
        *cache_write_bytes*) fail "replay shows cache_write_bytes: $head" ;;
        interval_start,*) echo "ok: replay has no cache_write_bytes: $head" ;;
        *) fail "replay of $etl gave no csv header: $head" ;;
    esac
else
    echo "note: no sample trace next to the checkout; the replay check is left out"
fi
echo "PASS"
