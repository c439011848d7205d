# bench_common.sh - what the Linux live benchmarks (tests/bench/linux_bench.sh,
# linux_cost.sh) share: the checks, the loop device, fio, and the peers run
# in the background. Sourced, not run. The caller sets $work (a scratch
# folder of its own) before bench_loop, and its cleanup detaches $loop and
# stops $bgpid.

# bench_need: root, fio, perf and losetup, or one line saying what is
# missing and exit 1 (these scripts are run by hand, not by ctest).
bench_need() {
    [ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
    for t in fio perf losetup; do
        command -v "$t" >/dev/null || { echo "needs $t"; exit 1; }
    done
}

# bench_loop: a new 512 MiB loop device over $work/disk.img (in /dev/shm,
# so the device is bound by the CPU, not a disk) in $loop.
bench_loop() {
    truncate -s 512M "$work/disk.img" || exit 1
    loop=$(losetup -f --show "$work/disk.img") || { loop=""; exit 1; }
    command -v udevadm >/dev/null && udevadm settle -t 5 2>/dev/null
}

# bench_fio NAME SECONDS: fio's 4 KiB O_DIRECT random reads (libaio,
# iodepth 32) on $loop for SECONDS; prints "IOPS TOTAL_IOS" from its json.
bench_fio() {
    fio --name="$1" --filename="$loop" --rw=randread --bs=4k --ioengine=libaio \
        --iodepth=32 --direct=1 --runtime="$2" --time_based \
        --output-format=json >"$work/fio.json" 2>/dev/null || return 1
    awk '/"read" : \{/ { r = 1 }
        r && /"total_ios"/ { gsub(/[^0-9]/, "", $3); n = $3 }
        r && /"iops"/ && !i { gsub(/[^0-9.]/, "", $3); i = $3 }
        n != "" && i != "" { printf "%.0f %s\n", i, n; exit }' "$work/fio.json"
}

# start_bg CMD...: run CMD in the background ($bgpid), give it a second to
# set up; fails when it has already ended.
start_bg() {
    "$@" &
    bgpid=$!
    sleep 1
    kill -0 "$bgpid" 2>/dev/null
}

# stop_bg: SIGINT to $bgpid (diskmon, perf and bpftrace all end cleanly on
# it) and its exit code.
stop_bg() {
    kill -INT "$bgpid"
    wait "$bgpid"
    local rc=$?
    bgpid=""
    return $rc
}

# median [EMPTY]: the median of the numbers on stdin, one a line (the mean
# of the middle two for an even count); EMPTY (default 0) when none.
median() {
    sort -n | awk -v e="${1:-0}" '{ v[NR] = $1 } END { if (NR == 0) print e; else if (NR % 2) print v[(NR + 1) / 2];
        else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The bpftrace peer: what biosnoop does, on tracepoints (the kprobe-based
# libbpf-tools cannot load here; docs/linux.md §1): start time, pid and
# comm kept per dev+sector, one printf per completed request. bpftrace
# 0.17's syntax (args->field). have_bpftrace is 1 when it is installed.
have_bpftrace=0
command -v bpftrace >/dev/null && have_bpftrace=1
bench_biosnoop() {
    cat >"$work/biosnoop.bt" <<'BT'
tracepoint:block:block_io_start
{
    @start[args->dev, args->sector] = nsecs;
    @pid[args->dev, args->sector] = pid;
    @comm[args->dev, args->sector] = comm;
}
tracepoint:block:block_rq_complete
/@start[args->dev, args->sector]/
{
    $k0 = args->dev;
    $k1 = args->sector;
    printf("%d %s %d %d %d %d\n", @pid[$k0, $k1], @comm[$k0, $k1], $k0, $k1,
           args->nr_sector, (nsecs - @start[$k0, $k1]) / 1000);
    delete(@start[$k0, $k1]);
    delete(@pid[$k0, $k1]);
    delete(@comm[$k0, $k1]);
}
BT
}

# start_bpftrace: the script of bench_biosnoop in the background ($bgpid),
# its output to /dev/null; returns once it has attached (it compiles for a
# few seconds first), or prints why and exits 1.
start_bpftrace() {
    bpftrace "$work/biosnoop.bt" >/dev/null 2>"$work/bt.err" &
    bgpid=$!
    for _ in $(seq 30); do
        grep -q 'Attaching' "$work/bt.err" && break
        kill -0 "$bgpid" 2>/dev/null || break
        sleep 0.5
    done
    sleep 1
    kill -0 "$bgpid" 2>/dev/null || { echo "bpftrace failed: $(cat "$work/bt.err")"; exit 1; }
}
