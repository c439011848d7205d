#!/usr/bin/env bash
# tests/bench/run.sh [--short] [--build DIR] [--ios N] [--rounds R]
#
# diskmon's benchmark: one table, every row measured in the same run as its
# peers, the peers interleaved in rounds (noise spreads over all of them),
# medians quoted. Rows:
#   1. the live callback path, ns per record (bench_callback on the sample
#      traces: decode + filter + enqueue; "DiskIo records only" is the
#      figure the live path's goal is for), and with the reorder stage in
#      front, per DiskIo record and per record over all records (the median
#      of 301 rounds);
#   2. text, csv and json lines/s of diskmon -r on the generated trace to
#      /dev/null, beside perf script lines/s on a perf.data holding the same
#      number of block events (2 per I/O: block_io_start and
#      block_rq_complete of fio's O_DIRECT reads on a loop device; needs
#      root, fio and perf, else the row is skipped with the reason);
#   3. replay MB/s (bytes of the file) and records (events)/s of the
#      generated trace, plain and MS-XCA compressed (text output to
#      /dev/null);
#   4. max RSS of each run of rows 2 and 3 (GNU time).
# The trace comes from tests/bench/gen_etl.c (default 1M I/Os, about 2M
# DiskIo records). Before timing anything its replay is checked against the
# generator's own counts, so a fast wrong answer is never quoted.
#
# Not run by CI in full: it needs a quiet machine. --short (tests/run.sh)
# uses small traces and checks only that the results are right: diskmon's
# per-disk counts and bytes equal the generator's, every request comes out
# with the generator's time, duration, process, thread and file, the line
# counts of the three formats, that the callback and perf paths run, and
# that diskmon live, beside the perf record that makes perf script's input,
# shows every byte fio read or says it lost some (exit 3).
# It prints PASS/FAIL/SKIP lines and exits 1 if anything failed.
#
# Options: --build DIR  build tree to use (default build/bench, configured
#                       Release if it does not exist yet)
#          --ios N      I/Os in the generated trace (default 1000000;
#                       --short: 20000)
#          --rounds R   rounds (default 5)
# Environment: DM_BENCH_DIR, scratch folder (default /dev/shm, else TMPDIR).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD

SHORT=0 BUILD="" IOS="" ROUNDS=5
while [ $# -gt 0 ]; do
    case $1 in
    --short) SHORT=1 ;;
    --build) BUILD=${2:?--build needs a folder}; shift ;;
    --ios) IOS=${2:?--ios needs a number}; shift ;;
    --rounds) ROUNDS=${2:?--rounds needs a number}; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$BUILD" ] || BUILD=$ROOT/build/bench
if [ -z "$IOS" ]; then
    if [ "$SHORT" = 1 ]; then IOS=20000; else IOS=1000000; fi
fi
case $IOS$ROUNDS in *[!0-9]*) echo "run.sh: --ios and --rounds take numbers" >&2; exit 2 ;; esac

failed=0
result() { # PASS|FAIL|SKIP name [reason]
    local r=$1 n=$2; shift 2
    if [ $# -gt 0 ]; then echo "$r bench/$n: $*"; else echo "$r bench/$n"; fi
    [ "$r" = FAIL ] && failed=1
    return 0
}

scratch=${DM_BENCH_DIR:-}
if [ -z "$scratch" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=/dev/shm; else scratch=${TMPDIR:-/tmp}; fi
fi
work=$(mktemp -d "$scratch/diskmon_bench.XXXXXX") || { echo "FAIL bench/setup: mktemp in $scratch"; exit 1; }
loop=""
cleanup() {
    [ -n "$loop" ] && losetup -d "$loop"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- build ------------------------------------------------------------------
# An existing tree keeps its settings; configuring again makes sure it knows
# the gen_etl target.
build_type=""
[ -f "$BUILD/CMakeCache.txt" ] || build_type=-DCMAKE_BUILD_TYPE=Release
cmake -S "$ROOT" -B "$BUILD" $build_type >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; result FAIL build "cmake configure of $BUILD failed"; exit 1; }
if ! cmake --build "$BUILD" --target diskmon gen_etl bench_callback -j "$(nproc 2>/dev/null || echo 2)" \
        >"$work/build.log" 2>&1; then
    tail -30 "$work/build.log"
    result FAIL build "cmake --build $BUILD failed"
    exit 1
fi
DISKMON=$BUILD/diskmon GEN=$BUILD/gen_etl CALLBACK=$BUILD/bench_callback

# --- the traces, checked against the generator ------------------------------
# gen KIND [--compressed]: $work/KIND.etl, .counts (disk request count bytes),
# .expect (one CSV line per request) and .info (the generator's first line).
gen() {
    local kind=$1; shift
    "$GEN" --ios "$IOS" --cpus 8 --seed 11 "$@" --expect "$work/$kind.expect" \
        "$work/$kind.etl" >"$work/$kind.gen" 2>"$work/$kind.gen.err" || return 1
    head -1 "$work/$kind.gen" >"$work/$kind.info"
    tail -n +2 "$work/$kind.gen" | sort >"$work/$kind.counts"
}

# check KIND: diskmon's -s table and its csv against the generator's.
check() {
    local kind=$1 etl=$work/$1.etl
    if "$DISKMON" -r "$etl" -s -o /dev/null 2>"$work/$kind.summary"; then
        awk '$2 == "Read" || $2 == "Write" || $2 == "Flush" { print $1, $2, $3, $4 }' \
            "$work/$kind.summary" | sort >"$work/$kind.got"
        if cmp -s "$work/$kind.got" "$work/$kind.counts"; then
            result PASS "counts-$kind"
        else
            result FAIL "counts-$kind" "diskmon -s differs from the generator's counts:" \
                "$(diff "$work/$kind.counts" "$work/$kind.got" | head -5 | tr '\n' ' ')"
        fi
    else
        result FAIL "counts-$kind" "diskmon -r -s failed: $(head -3 "$work/$kind.summary")"
    fi
    # csv: time,duration,request,disk,offset,bytes,pid,tid,process,file
    # (columns 2,3,5,4,12,13,8,9,10,11; CRLF line ends, RFC 4180).
    "$DISKMON" -r "$etl" -f csv --no-header 2>/dev/null | tr -d '\r' |
        awk -F, -v OFS=, '{ print $2, $3, $5, $4, $12, $13, $8, $9, $10, $11 }' >"$work/$kind.csvgot"
    if cmp -s "$work/$kind.csvgot" "$work/$kind.expect"; then
        result PASS "requests-$kind" "$(wc -l <"$work/$kind.expect") requests with their time, process, thread and file"
    else
        result FAIL "requests-$kind" "first difference (generator, then diskmon):" \
            "$(diff "$work/$kind.expect" "$work/$kind.csvgot" | head -4 | tr '\n' ' ')"
    fi
}

gen plain || { result FAIL gen "gen_etl failed: $(cat "$work/plain.gen.err")"; exit 1; }
gen compressed --compressed || { result FAIL gen "gen_etl --compressed failed: $(cat "$work/compressed.gen.err")"; exit 1; }
result PASS gen "$(sed 's/^# gen_etl: //' "$work/plain.info"); compressed $(stat -c %s "$work/compressed.etl") bytes"
check plain
check compressed
# 1 MiB buffers, which replay reads (and inflates) a 96 KiB window at a time.
for kind in plain-1mib compressed-1mib; do
    opt=""
    [ "$kind" = compressed-1mib ] && opt=--compressed
    # shellcheck disable=SC2086
    if gen "$kind" $opt --buffer-size 1048576; then
        check "$kind"
    else
        result FAIL "gen-$kind" "gen_etl failed: $(cat "$work/$kind.gen.err")"
    fi
done

# Line counts of the three formats: text and csv have a header line.
for fmt in text csv json; do
    n=$("$DISKMON" -r "$work/plain.etl" -f "$fmt" 2>/dev/null | wc -l)
    want=$IOS
    [ "$fmt" = json ] || want=$((IOS + 1))
    if [ "$n" = "$want" ]; then result PASS "lines-$fmt"
    else result FAIL "lines-$fmt" "$n lines, want $want"; fi
done

# --- perf script's input ------------------------------------------------------
# A perf.data with the block events of IOS fio reads on a loop device over
# /dev/shm: block_io_start and block_rq_complete, filtered to the loop device
# (dev is the kernel's dev_t, major << 20 | minor), so 2 x IOS events.
perf_data=""
perf_why=""
make_perf_data() {
    local mm dev
    [ "$(id -u)" = 0 ] || { perf_why="needs root (loop device, perf record -a)"; return; }
    for t in fio perf losetup; do
        command -v "$t" >/dev/null || { perf_why="$t is not installed"; return; }
    done
    [ -d /dev/shm ] || { perf_why="no /dev/shm"; return; }
    truncate -s 256M "$work/disk.img" || { perf_why="cannot create $work/disk.img"; return; }
    loop=$(losetup -f --show "$work/disk.img") || { loop=""; perf_why="cannot create a loop device"; return; }
    command -v udevadm >/dev/null && udevadm settle -t 5 2>/dev/null
    mm=$(lsblk -dno MAJ:MIN "$loop" | tr -d ' ')
    dev=$(( (${mm%:*} << 20) | ${mm#*:} ))
    # diskmon live beside perf record, on the same reads: what is asserted
    # here is diskmon's account of them, not how many perf happened to keep.
    "$DISKMON" -d "${loop#/dev/}" -f csv --no-header -o "$work/live.csv" 2>"$work/live.err" &
    live_pid=$!
    # -o FILE is created once the capture is open.
    for _ in $(seq 100); do [ -e "$work/live.csv" ] && break; sleep 0.05; done
    sleep 0.2
    if ! perf record -q -a -o "$work/perf.data" \
            -e block:block_io_start --filter "dev == $dev" \
            -e block:block_rq_complete --filter "dev == $dev" -- \
            fio --name=bench --filename="$loop" --rw=randread --bs=4k --ioengine=libaio \
                --iodepth=32 --direct=1 --size=256M --io_size=$((IOS * 4096)) \
                --output=/dev/null >"$work/perf-record.log" 2>&1; then
        perf_why="perf record failed: $(tail -2 "$work/perf-record.log" | tr '\n' ' ')"
        kill -INT "$live_pid"; wait "$live_pid"
        return
    fi
    sleep 0.5
    kill -INT "$live_pid"
    wait "$live_pid"
    live_rc=$?
    losetup -d "$loop"
    loop=""
    perf_lines=$(perf script -i "$work/perf.data" 2>/dev/null | wc -l)
    perf_data=$work/perf.data
}
make_perf_data
if [ -n "$perf_data" ]; then
    # perf record may miss events under load (its own losses): its count is
    # only reported; row 2 divides whatever perf script printed by its time.
    result PASS perf-data "$perf_lines perf script lines for $IOS fio reads (perf's own count)"
    # diskmon's account must be honest: every byte fio read shown and exit
    # 0, or fewer bytes and exit 3 (events lost, said on stderr).
    live_bytes=$(awk -F, '$5 == "Read" { b += $13 } END { printf "%.0f", b }' "$work/live.csv")
    want_bytes=$((IOS * 4096))
    if { [ "$live_rc" = 0 ] && [ "$live_bytes" = "$want_bytes" ]; } ||
        { [ "$live_rc" = 3 ] && [ "$live_bytes" -lt "$want_bytes" ]; }; then
        result PASS live-beside-perf "diskmon showed $live_bytes of $want_bytes bytes read, exit $live_rc"
    else
        result FAIL live-beside-perf "diskmon showed $live_bytes of $want_bytes bytes read, exit $live_rc: $(head -3 "$work/live.err")"
    fi
else
    result SKIP perf-data "$perf_why"
fi

# --- the callback path ------------------------------------------------------
etl_dir=${DM_SHARED_ETL:-$ROOT/../shared/etl}
callback_ok=0
if [ -f "$etl_dir/perfview-net452-x64-win8.etl" ] && [ -f "$etl_dir/filtrace-diskio-win11.etl" ]; then
    if "$CALLBACK" "$etl_dir" 1 >"$work/callback.out" 2>&1 &&
        [ "$(grep -c 'DiskIo records only: .*; decode+filter+enqueue [0-9.]* ns/record' "$work/callback.out")" = 2 ]; then
        result PASS callback
        callback_ok=1
    else
        result FAIL callback "bench_callback: $(head -3 "$work/callback.out" | tr '\n' ' ')"
    fi
else
    result SKIP callback "the sample traces are not in $etl_dir"
fi

if [ "$SHORT" = 1 ]; then
    exit "$failed"
fi
if [ "$failed" != 0 ]; then
    echo "run.sh: the results above are wrong; not timing them"
    exit 1
fi

# --- timing -----------------------------------------------------------------
if [ ! -x /usr/bin/time ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null 2>&1
fi
if ! /usr/bin/time -f %M true >/dev/null 2>&1; then
    echo "run.sh: GNU time is needed for max RSS (apt-get install time)"
    exit 1
fi

# timed NAME CMD...: run CMD with stdout to /dev/null; append its wall time
# (ns) to $work/NAME.ns and its max RSS (KiB) to $work/NAME.rss.
timed() {
    local name=$1 t0 t1; shift
    t0=$(date +%s%N)
    if ! /usr/bin/time -f %M -o "$work/rss.tmp" "$@" >/dev/null 2>"$work/err.tmp"; then
        echo "run.sh: $* failed: $(head -3 "$work/err.tmp")"
        exit 1
    fi
    t1=$(date +%s%N)
    echo $((t1 - t0)) >>"$work/$name.ns"
    tail -1 "$work/rss.tmp" >>"$work/$name.rss"
}

median() { # FILE
    sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2];
        else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The live path's figure (row 1's goal): reorder+decode+filter+enqueue per
# DiskIo record, a median over bench_callback's own 301 rounds, run once
# (a median of a few rounds swung 2x).
if [ "$callback_ok" = 1 ]; then
    "$CALLBACK" "$etl_dir" 301 >"$work/callback301.out" 2>&1
fi

for r in $(seq "$ROUNDS"); do
    echo "round $r/$ROUNDS" >&2
    if [ "$callback_ok" = 1 ]; then
        "$CALLBACK" "$etl_dir" 5 >"$work/callback.out" 2>&1
        # "NAME: DiskIo records only: ...; decode+filter+enqueue X ns/record"
        # and the same with "all records" (not the reorder line).
        for what in diskio all; do
            if [ $what = diskio ]; then pat='DiskIo records only'; else pat='all records'; fi
            sed -n "s/^\([^:]*\): $pat: .*; decode+filter+enqueue \([0-9.]*\) ns\/record\$/\1 \2/p" \
                "$work/callback.out" | while read -r s v; do echo "$v" >>"$work/cb.$s.$what"; done
        done
    fi
    timed text "$DISKMON" -r "$work/plain.etl" -o /dev/null
    timed csv "$DISKMON" -r "$work/plain.etl" -f csv -o /dev/null
    timed json "$DISKMON" -r "$work/plain.etl" -f json -o /dev/null
    [ -n "$perf_data" ] && timed perf perf script -i "$perf_data"
    timed compressed "$DISKMON" -r "$work/compressed.etl" -o /dev/null
done

# --- the table ----------------------------------------------------------------
records=$(awk '{ print $5 }' "$work/plain.info")
plain_bytes=$(stat -c %s "$work/plain.etl")
comp_bytes=$(stat -c %s "$work/compressed.etl")
cores=$(nproc 2>/dev/null || echo "?")
rate() { awk -v n="$1" -v ns="$2" 'BEGIN { printf "%.2fM", (ns > 0 ? n * 1000 / ns : 0) }'; } # millions/s
mbs() { awk -v b="$1" -v ns="$2" 'BEGIN { printf "%.0f", (ns > 0 ? b * 1000 / ns : 0) }'; }   # MB/s
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
secs() { awk -v ns="$1" 'BEGIN { printf "%.3f s", ns / 1e9 }'; }

echo
echo "diskmon benchmark: $cores cores ($(uname -sm), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'))"
echo "$ROUNDS rounds, peers interleaved, medians; trace: $IOS I/Os, $records records," \
     "$plain_bytes bytes plain, $comp_bytes bytes compressed; build: $BUILD"
echo
# The last column: the goals set for each path, to read the row against.
echo "| # | path | median | max RSS | goal |"
echo "|---|---|---|---|---|"
if [ "$callback_ok" = 1 ]; then
    # "NAME: DiskIo records only: ...; reorder+decode+filter+enqueue X ns/record (p10 A, p90 B, N rounds)"
    # and the same with "all records": the goals set for the reorder stage.
    for what in 'DiskIo records only|per DiskIo record|<= 30 ns/record' 'all records|per record, all records|<= 15 ns/record'; do
        IFS='|' read -r pat label goal <<<"$what"
        sed -n "s/^\([^:]*\): $pat: .*; reorder+decode+filter+enqueue \([0-9.]*\) ns\/record (\(.*\))\$/\1|\2|\3/p" \
            "$work/callback301.out" | while IFS='|' read -r s v spread; do
            echo "| 1 | live path $label, reorder+decode+filter+enqueue ($s; $spread) | $v ns/record | - | $goal |"
        done
    done
    for f in "$work"/cb.*.diskio; do
        s=${f#"$work/cb."}; s=${s%.diskio}
        echo "| 1 | callback, decode+filter+enqueue, DiskIo records only ($s) | $(median "$f") ns/record | - | |"
        echo "| 1 | callback, decode+filter+enqueue, all records ($s) | $(median "$work/cb.$s.all") ns/record | - | |"
    done
else
    echo "| 1 | callback | skipped: the sample traces are not in $etl_dir | - | |"
fi
for fmt in text csv json; do
    ns=$(median "$work/$fmt.ns")
    echo "| 2 | $fmt to /dev/null ($IOS lines, $(secs "$ns")) | $(rate "$IOS" "$ns") lines/s | $(mib "$(median "$work/$fmt.rss")") | RSS < 8 MiB |"
done
if [ -n "$perf_data" ]; then
    pns=$(median "$work/perf.ns")
    tns=$(median "$work/text.ns")
    echo "| 2 | perf script ($perf_lines lines, $(secs "$pns")) | $(rate "$perf_lines" "$pns") lines/s | $(mib "$(median "$work/perf.rss")") | |"
    echo "| 2 | text lines/s over perf script lines/s | $(awk -v a="$IOS" -v ta="$tns" -v b="$perf_lines" -v tb="$pns" \
        'BEGIN { printf "%.1fx", (a / ta) / (b / tb) }') | - | >= 10x |"
else
    echo "| 2 | perf script | skipped: $perf_why | - | |"
fi
ns=$(median "$work/text.ns")
echo "| 3 | replay plain, text to /dev/null (the text run above) | $(mbs "$plain_bytes" "$ns") MB/s, $(rate "$records" "$ns") records/s | $(mib "$(median "$work/text.rss")") | >= 1000 MB/s, >= 18M records/s, RSS <= 8 MiB |"
ns=$(median "$work/compressed.ns")
echo "| 3 | replay compressed, text to /dev/null ($(secs "$ns")) | $(mbs "$comp_bytes" "$ns") MB/s of file ($(mbs "$plain_bytes" "$ns") MB/s of plain-equivalent), $(rate "$records" "$ns") records/s | $(mib "$(median "$work/compressed.rss")") | |"
