#!/bin/bash
# linux_every_request.sh DISKMON - every request the disk completes is shown.
#
# A journaling file system (ext4, and xfs where mkfs.xfs exists) on a loop
# device over /dev/shm; 20 files each written with `dd bs=4k count=4
# conv=fsync`, then sync. bpftrace prints every block_rq_complete and
# block_io_start of that disk in the same run; the independent count
# (tests/oracles/rq_classes.awk) classes the completions by rwbs. diskmon's
# lines for the disk, class by class (read, write, flush, discard), must
# equal it between two marker reads, with 0 lost and exit 0, on both
# backends. The same run checks the request flags: the lines diskmon marks
# preflush and fua, counted in its csv, equal tests/oracles/rq_flags.awk's
# count from the rwbs of each counted request's start (the flags diskmon
# shows are its start's: docs/output.md, "Request flags"). A loop device has no
# FUA, so each fsync's PREFLUSH/FUA journal commit reaches it as flush
# requests of the block layer's own, which never pass block_io_start
# (docs/linux.md §7). Needs root and bpftrace: otherwise "SKIP: why", exit
# 77 (a failure under CI=true, as in the other linux_* tests).
set -u

DISKMON=${1:?usage: linux_every_request.sh DISKMON}
here=$(dirname "$0")
# shellcheck source=../lib/loop_common.sh
. "$here/../lib/loop_common.sh"
command -v bpftrace >/dev/null || skip "bpftrace is not installed"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed"
# mkfs.xfs wants 300 MB at least; a sparse file costs only what is written.
make_loop 512M every
mnt=$work/mnt
mkdir "$mnt" || fail "mkdir $mnt"
every_cleanup() {
    mountpoint -q "$mnt" && umount "$mnt"
    loop_cleanup
}
trap every_cleanup EXIT
kdev=$(( (16#$(stat -c %t "$loop") << 20) | 16#$(stat -c %T "$loop") ))

# The marker: one direct 4 KiB read of the disk's last block, which neither
# file system's small workload reads (sector in 512-byte units).
MARK_SECTOR=$(( (512 * 1024 * 1024 / 4096 - 1) * 8 ))
marker() {
    dd if="$loop" of=/dev/null bs=4096 count=1 skip=$((MARK_SECTOR / 8)) iflag=direct \
        status=none || fail "marker read"
}

# run FS BACKEND: one capture of the fsync workload on a fresh FS.
run() {
    local fs=$1 backend=$2 tag="$1.$2"
    if [ "$fs" = xfs ]; then
        mkfs.xfs -q -f "$loop" || fail "mkfs.xfs"
    else
        # No lazy init: its background writes would race the edges.
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loop" ||
            fail "mkfs.ext4"
    fi
    mount "$loop" "$mnt" || fail "mount $fs"
    # Let the mount's own writes and flushes pass before either counts.
    sync
    sleep 1
    # The oracle's input: every completion and start of this disk.
    cat >"$work/$tag.bt" <<BT
tracepoint:block:block_rq_complete /args->dev == $kdev/ {
  printf("C %s %llu %u %llu\n", args->rwbs, args->sector, args->nr_sector, nsecs); }
tracepoint:block:block_io_start /args->dev == $kdev/ {
  printf("S %s %llu %u %llu\n", args->rwbs, args->sector, args->nr_sector, nsecs); }
BEGIN { printf("READY\n"); }
BT
    # bpftrace sets RLIMIT_MEMLOCK itself; a refused raise is harmless.
    bpftrace "$work/$tag.bt" >"$work/$tag.bpf" 2>"$work/$tag.bpf.err" &
    local bp=$!
    bg="$bg $bp"
    for _ in $(seq 200); do
        grep -q READY "$work/$tag.bpf" && break
        kill -0 "$bp" 2>/dev/null || skip "bpftrace did not start: $(head -c 300 "$work/$tag.bpf.err")"
        sleep 0.05
    done
    grep -q READY "$work/$tag.bpf" || fail "bpftrace not ready within 10 s"
    "$DISKMON" -d "$name" -f csv -o "$work/$tag.csv" -s --backend "$backend" \
        2>"$work/$tag.err" &
    local dm=$!
    bg="$bg $dm"
    wait_started "$dm" "$work/$tag.err" test -s "$work/$tag.csv"
    # The counted window: what completes between two marker reads, which
    # both streams see (a journal commit on the file system's own timer can
    # come while only one of the two is capturing).
    marker
    for i in $(seq 20); do
        dd if=/dev/zero of="$mnt/f$i" bs=4k count=4 conv=fsync status=none ||
            fail "dd"
    done
    sync
    marker
    sleep 1
    interrupt "$dm"
    [ "$rc" = 0 ] || fail "$tag: diskmon exit code $rc: $(cat "$work/$tag.err")"
    grep -q "lost 0 (" "$work/$tag.err" || fail "$tag: lost is not 0: $(cat "$work/$tag.err")"
    kill -INT "$bp"
    wait "$bp"
    umount "$mnt" || fail "umount"
    grep -q '^Lost' "$work/$tag.bpf" && fail "$tag: bpftrace lost events"
    local want got
    # bpftrace's lines in time order (each CPU's buffer is printed on its
    # own), the completions outside the marker window left out and the
    # markers with them; starts are kept (the oracle pairs a flush
    # sequence's second completion with its start).
    grep -E '^[CS] ' "$work/$tag.bpf" | sort -s -k5,5n |
        awk -v m="$MARK_SECTOR" '$1 == "C" && substr($2, 1, 1) == "R" && $3 == m && $4 == 8 {
                 marks++; next }
             $1 == "S" || marks == 1' >"$work/$tag.win"
    want=$(awk -f "$here/../oracles/rq_classes.awk" "$work/$tag.win")
    # csv: seq,time,duration,disk,request,sector,length,...: in time order.
    got=$(tr -d '\r' <"$work/$tag.csv" | awk -F, -v m="$MARK_SECTOR" 'NR > 1 {
        if ($5 == "Read" && $6 == m && $7 == 8) { marks++; next }
        if (marks == 1) n[tolower($5)]++ }
        END { if (marks != 2) printf "markers seen: %d; ", marks
              printf "read %d write %d flush %d discard %d\n",
              n["read"], n["write"], n["flush"], n["discard"] }')
    echo "$tag: bpftrace: $want; diskmon: $got"
    [ "$want" = "$got" ] || fail "$tag: diskmon's requests differ from block_rq_complete's"
    case $want in "read 0 write 0 flush 0 "*) fail "$tag: no requests seen";; esac
    case $want in *"flush 0 "*) fail "$tag: the workload made no flush";; esac
    # The flags: csv's flags column comes before priority, partition and
    # cgroup (the last three), words joined with '|'.
    want=$(awk -f "$here/../oracles/rq_flags.awk" "$work/$tag.win")
    got=$(tr -d '\r' <"$work/$tag.csv" | awk -F, -v m="$MARK_SECTOR" 'NR > 1 {
        if ($5 == "Read" && $6 == m && $7 == 8) { marks++; next }
        if (marks != 1) next
        f = "|" $(NF-3) "|"
        if (index(f, "|preflush|")) p++
        if (index(f, "|fua|")) u++ }
        END { printf "preflush %d fua %d\n", p, u }')
    echo "$tag: flags: bpftrace: $want; diskmon: $got"
    [ "$want" = "$got" ] || fail "$tag: diskmon's preflush/fua requests differ from the starts' rwbs"
    case $want in "preflush 0 "*|*"fua 0") fail "$tag: the workload made no preflush or no fua request";; esac
}

for backend in tracefs perf; do
    run ext4 "$backend"
    if command -v mkfs.xfs >/dev/null; then
        run xfs "$backend"
    else
        echo "xfs: mkfs.xfs is not installed, ext4 only"
    fi
done
echo "PASS"
