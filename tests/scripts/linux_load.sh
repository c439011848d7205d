#!/bin/bash
# linux_load.sh DISKMON - diskmon under a full-speed fio load.
#
# fio does random 4 KiB O_DIRECT reads (libaio, iodepth 32) for 5 s on a
# loop device over /dev/shm while diskmon watches that device through its
# default transport, the tracefs instance (DM_LOAD_BACKEND=perf for the
# other), with text output to /dev/null and -s. The reads stay in the
# device's first DM_LOAD_SPAN bytes (8 MiB: 2,048 blocks), so two reads of
# one sector are often in flight at once and one sector is read again
# within milliseconds: the case where a completion paired out of time order
# takes another request's start. Checks: diskmon kept up
# (nothing dropped for a full ring, no malformed record), and every read
# fio reports is either shown by diskmon or counted as lost: printed + lost
# == fio's I/O count (printed in 4 KiB reads: the block layer may merge two
# adjacent reads into one request), with exit 3 when anything was lost and
# the reason on stderr. On the tracefs backend nothing may be lost at all
# (its ring drops nothing at this load; a loss there is diskmon's own).
#
# DM_LOAD_PICTURES=1 runs diskmon with --heatmap, --offset-map and --report
# as well (drawing must lose nothing more at full speed): the
# same checks, and each map's cells add up to the reads diskmon counted.
#
# DM_LOAD_ORACLE=bpftrace adds an independent count of what the kernel's
# tracepoint path delivered: bpftrace sums block_rq_complete's nr_sector
# for the device from before fio starts until after diskmon stops, and
# the run prints "bpftrace: K x 4 KiB completed" (linux_load_perf.sh
# compares it with fio's and diskmon's counts).
#
# Needs root and fio (and bpftrace with the oracle): otherwise "SKIP: why"
# and exit 77, except under CI=true, where that is a failure.
set -u

DISKMON=${1:?usage: linux_load.sh DISKMON}
RUNTIME=${DM_LOAD_SECONDS:-5}
BACKEND=${DM_LOAD_BACKEND:-tracefs}
SPAN=${DM_LOAD_SPAN:-8M}
ORACLE=${DM_LOAD_ORACLE:-}
PICTURES=${DM_LOAD_PICTURES:-}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"
command -v fio >/dev/null || skip "fio is not installed (apt-get install fio)"
[ -z "$ORACLE" ] || command -v bpftrace >/dev/null || skip "bpftrace is not installed"
make_loop 512M load

pictures=()
[ -z "$PICTURES" ] ||
    pictures=(--heatmap "$work/h.svg" --offset-map "$work/o.svg" --report "$work/r.html")
"$DISKMON" -d "$name" -s --backend "$BACKEND" "${pictures[@]}" >/dev/null 2>"$work/err" &
dm=$!
bg="$bg $dm"
# Capturing once its tracefs instance or perf event fds exist (both are
# enabled before open() returns); give the threads a moment more.
capturing() {
    local fd
    [ -d "/sys/kernel/tracing/instances/diskmon-$dm" ] && return 0
    for fd in /proc/"$dm"/fd/*; do
        case $(readlink "$fd" 2>/dev/null) in *perf_event*) return 0 ;; esac
    done
    return 1
}
wait_started "$dm" "$work/err" capturing
sleep 0.3

bp=""
if [ -n "$ORACLE" ]; then
    # The kernel's dev_t in the tracepoint: major << 20 | minor.
    kdev=$(( (16#$(stat -c %t "$loop") << 20) | 16#$(stat -c %T "$loop") ))
    cat >"$work/oracle.bt" <<BT
tracepoint:block:block_rq_complete /args->dev == $kdev/ { @sectors = sum(args->nr_sector); }
BEGIN { printf("READY\n"); }
BT
    # bpftrace sets RLIMIT_MEMLOCK itself; a refused raise is harmless.
    bpftrace "$work/oracle.bt" >"$work/oracle.out" 2>"$work/oracle.err" &
    bp=$!
    bg="$bg $bp"
    for _ in $(seq 400); do
        grep -q READY "$work/oracle.out" && break
        kill -0 "$bp" 2>/dev/null || skip "bpftrace did not start: $(head -c 300 "$work/oracle.err")"
        sleep 0.05
    done
    grep -q READY "$work/oracle.out" || fail "bpftrace not ready within 20 s"
fi

fio --name=load --filename="$loop" --rw=randread --bs=4k --ioengine=libaio \
    --iodepth=32 --direct=1 --size="$SPAN" --runtime="$RUNTIME" --time_based \
    --output-format=json >"$work/fio.json" 2>"$work/fio.err" ||
    fail "fio failed: $(cat "$work/fio.err")"
# The last completions reach diskmon within its 100 ms poll.
sleep 0.5
interrupt "$dm"
dm=""
if [ -n "$bp" ]; then
    kill -INT "$bp"
    wait "$bp"
    # The sum is printed as the map at exit: "@sectors: N".
    sectors=$(sed -n 's/^@sectors: \([0-9]*\)$/\1/p' "$work/oracle.out")
    [ -n "$sectors" ] || fail "no count from bpftrace: $(head -c 300 "$work/oracle.err")"
    # 512-byte sectors, 8 to a 4 KiB read.
    echo "bpftrace: $((sectors / 8)) x 4 KiB completed"
fi

# fio's JSON: the first "total_ios" after the job's "read" object.
fio_ios=$(awk '/"read" : \{/ { r = 1 } r && /"total_ios"/ { gsub(/[^0-9]/, "", $3); print $3; exit }' \
    "$work/fio.json")
fio_iops=$(awk '/"read" : \{/ { r = 1 } r && /"iops"/ { gsub(/[^0-9.]/, "", $3); print $3; exit }' \
    "$work/fio.json")
[ -n "$fio_ios" ] && [ "$fio_ios" -gt 0 ] || fail "no read count in fio's output"

# diskmon's -s table: "loop0    Read    COUNT BYTES ...", then
# "N events in S s; lost L (ring full R, source S); malformed records skipped M".
lines=$(awk -v d="$name" '$1 == d && $2 == "Read" { print $3 }' "$work/err")
bytes=$(awk -v d="$name" '$1 == d && $2 == "Read" { print $4 }' "$work/err")
[ -n "$lines" ] || fail "no Read line for $name in diskmon's summary: $(cat "$work/err")"
# fio's reads are 4 KiB each; the block layer may merge two adjacent ones
# into one request (one line of 8 KiB), so count diskmon's reads in 4 KiB
# units.
count=$((bytes / 4096))
[ $((bytes % 4096)) = 0 ] || fail "diskmon's Read bytes $bytes are not whole 4 KiB reads"
ring_full=$(sed -n 's/.*(ring full \([0-9]*\), source \([0-9]*\)).*/\1/p' "$work/err")
source_lost=$(sed -n 's/.*(ring full \([0-9]*\), source \([0-9]*\)).*/\2/p' "$work/err")
malformed=$(sed -n 's/.*malformed records skipped \([0-9]*\).*/\1/p' "$work/err")
# The one loss line, printed only when something went missing, with the
# source's account folded in: "diskmon: N events lost (R dropped because
# the output could not keep up, S lost before diskmon saw them; block
# tracepoints via B: ...)", each part only when it is not zero.
why=$(grep -E 'lost before diskmon saw (it|them); block tracepoints via' "$work/err")

echo "fio: $fio_ios reads ($fio_iops IOPS); diskmon ($BACKEND): $lines lines, $count x 4 KiB, exit $rc," \
     "ring full $ring_full, source lost $source_lost, malformed $malformed"
# diskmon's own line, which starts "diskmon: ".
[ -n "$why" ] && echo "$why"

[ "$ring_full" = 0 ] || fail "diskmon's printer could not keep up: $ring_full dropped"
[ "$malformed" = 0 ] || fail "$malformed malformed records"
[ $((count + source_lost)) = "$fio_ios" ] ||
    fail "diskmon showed $count and counted $source_lost lost, fio did $fio_ios reads"
[ "$BACKEND" != tracefs ] || [ "$source_lost" = 0 ] ||
    fail "$source_lost lost on the tracefs backend: $why"
if [ -n "$PICTURES" ]; then
    # Every read in one cell of each map: the cells' data-count add up to
    # the -s table's count (requests, not 4 KiB units).
    for map in h.svg o.svg; do
        cells=$(grep -o 'data-count="[0-9]*"' "$work/$map" | tr -dc '0-9\n' |
            awk '{ n += $1 } END { print n + 0 }')
        [ "$cells" = "$lines" ] || fail "$map's cells add up to $cells, the -s table says $lines"
    done
    grep -q '</html>' "$work/r.html" || fail "the report is not whole"
    echo "pictures: both maps' cells add up to $lines, the report written"
fi
if [ "$source_lost" = 0 ]; then
    [ "$rc" = 0 ] || fail "exit code $rc with nothing lost: $(cat "$work/err")"
    [ -z "$why" ] || fail "a loss line with nothing lost: $why"
    echo "ok: every one of fio's $fio_ios reads seen exactly once, nothing lost"
else
    [ "$rc" = 3 ] || fail "exit code $rc, want 3 after $source_lost lost"
    [ -n "$why" ] || fail "$source_lost lost and no line saying where from"
    echo "ok: $count reads seen and $source_lost counted as lost, adding up to fio's" \
         "$fio_ios (exit 3)"
fi
echo "linux_load: 1 passed, 0 failed"
exit 0
