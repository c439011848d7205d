#!/usr/bin/env bash
# tests/bench/inputs_bench.sh [--rows N] [--rounds R] [--build DIR] [--callgrind]
#
# -r's line formats (docs/replay.md): rows per second and memory of diskmon
# reading a public trace (MSR Cambridge, SYSTOR '17, Tencent CBS columns)
# and its own json lines, beside python3's csv module counting the same
# rows. Files of N rows (default 3,000,000) are generated first (python3,
# seeded: MSR-style issue times with response times, so rows are out of
# completion order as in the real traces). For each format, before
# anything is timed, diskmon's count (the sum of --metrics'
# diskmon_requests_total) must equal python's count of the file's rows.
#
# Timed, interleaved in R rounds (default 5), medians quoted, as rows per
# second of CPU time (user + system, GNU time: what one core does, which a
# shared machine's load changes far less than the wall time, also shown):
#   reader   diskmon -r FILE -c dm_bench_none: every row read, parsed, put
#            in time order and handed to the sink, whose filter then drops
#            it; the printer has nothing to do, so this is the reader's one
#            thread (the figure docs/benchmarks.md quotes per core);
#   metrics  diskmon -r FILE --metrics M: the same rows counted per disk
#            and request and their latency histograms (both threads);
#   python   python3 -c "import csv ..." counting the rows (json: the
#            lines, with json.loads each).
# Max RSS of every diskmon run (GNU time). --callgrind adds the reader's
# instructions per row (valgrind --tool=callgrind on 100,000 rows, the
# source thread's inclusive count of dm_lines_run), which a shared, noisy
# machine does not change.
#
# Run by hand (not by ctest: it needs a quiet machine); exit 1 when a count
# differs or a tool is missing.
set -u
cd "$(dirname "$0")/../.."
ROWS=3000000 ROUNDS=5 BUILD=build/default CALLGRIND=0
while [ $# -gt 0 ]; do
    case $1 in
        --rows) ROWS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --build) BUILD=$2; shift 2 ;;
        --callgrind) CALLGRIND=1; shift ;;
        *) echo "usage: $0 [--rows N] [--rounds R] [--build DIR] [--callgrind]"; exit 2 ;;
    esac
done
DISKMON=$BUILD/diskmon
[ -x "$DISKMON" ] || { echo "no $DISKMON: build first (cmake --preset default)"; exit 1; }
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)"; exit 1; }
work=$(mktemp -d "${DM_BENCH_DIR:-/dev/shm}/dm_inputs_bench.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

gen() { # FORMAT ROWS OUT
    python3 - "$1" "$2" "$3" <<'PY'
import random, sys
fmt, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(36)
t = 1485410000 * 10**9
with open(out, "w", buffering=1 << 20) as f:
    if fmt == "systor":
        f.write("Timestamp,Response,IOType,LUN,Offset,Size\n")
    for i in range(n):
        t += rng.randrange(0, 2_000_000)
        resp = rng.randrange(100, 30_000_000) // 100 * 100
        off = rng.randrange(0, 1 << 36) // 4096 * 4096
        size = rng.choice((4096, 8192, 16384, 65536))
        w = rng.random() < 0.4
        d = rng.randrange(4)
        if fmt == "msr":
            f.write("%d,usr,%d,%s,%d,%d,%d\n" % (t // 100 + 116444736000000000, d,
                    "Write" if w else "Read", off, size, resp // 100))
        elif fmt == "systor":
            f.write("%d.%06d,%d.%06d,%s,%d,%d,%d\n" % (t // 10**9, t % 10**9 // 1000, resp // 10**9,
                    resp % 10**9 // 1000, "W" if w else "R", d, off, size))
        elif fmt == "tencent":
            f.write("%d,%d,%d,%d,%d\n" % (t // 10**9, off // 512, size // 512, w, 1000 + d))
        else:  # diskmon's own json, as a Linux capture writes it
            f.write('{"seq":%d,"time":%d.%09d,"duration_ms":%d.%06d,"disk":"nvme0n%d",'
                    '"request":"%s","offset":%d,"bytes":%d,"sector":%d,"length":%d,"pid":%d,'
                    '"tid":%d,"process":"postgres","flags":"sync","partition":"nvme0n%dp2",'
                    '"cgroup":"/system.slice/postgresql.service"}\n' % (
                    i + 1, i // 1000, (i % 1000) * 10**6, resp // 10**6, resp % 10**6, d,
                    "Write" if w else "Read", off, size, off // 512, size // 512, 4000 + d,
                    4000 + d, d))
PY
}

python_count() { # FORMAT FILE
    if [ "$1" = json ]; then
        python3 -c "import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)))" "$2"
    else
        python3 -c "import csv,sys; r=csv.reader(open(sys.argv[1], newline='')); print(sum(1 for row in r if row and row[0] != 'Timestamp'))" "$2"
    fi
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

fails=0
printf '| format | rows | reader rows per CPU-s (wall) | reader max RSS | --metrics rows per CPU-s (wall) | --metrics max RSS | python3 rows per CPU-s (wall) | reader instr/row |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for fmt in msr systor tencent json; do
    rm -f "$work"/t.*
    f=$work/$fmt.in
    gen "$fmt" "$ROWS" "$f"
    want=$(python_count "$fmt" "$f")
    rm -f "$work/m.prom"
    "$DISKMON" -r "$f" --metrics "$work/m.prom" 2>/dev/null
    got=$(awk '/^diskmon_requests_total/ { s += $2 } END { print s + 0 }' "$work/m.prom")
    if [ "$got" != "$want" ]; then
        echo "FAIL inputs_bench/$fmt: diskmon counted $got rows, python $want"
        fails=$((fails + 1))
        continue
    fi
    : >"$work/t.reader"; : >"$work/t.metrics"; : >"$work/t.python"
    for _ in $(seq "$ROUNDS"); do
        /usr/bin/time -f "%e %M %U %S" -a -o "$work/t.reader" "$DISKMON" -r "$f" -c dm_bench_none >/dev/null 2>&1
        rm -f "$work/m.prom"
        /usr/bin/time -f "%e %M %U %S" -a -o "$work/t.metrics" "$DISKMON" -r "$f" --metrics "$work/m.prom" 2>/dev/null
        /usr/bin/time -f "%e %M %U %S" -a -o "$work/t.python" bash -c \
            "$(declare -f python_count); python_count $fmt '$f'" >/dev/null 2>&1
    done
    # Only the figures' lines: GNU time adds "Command exited with non-zero
    # status 3" for the reader, whose -c filter cannot tell a row without a
    # process name, and says so in its exit code (docs/options.md).
    r_s=$(awk '/^[0-9]/ { print $1 }' "$work/t.reader" | median)
    r_c=$(awk '/^[0-9]/ { print $3 + $4 }' "$work/t.reader" | median)
    r_m=$(awk '/^[0-9]/ { print $2 }' "$work/t.reader" | sort -n | tail -1)
    m_s=$(awk '/^[0-9]/ { print $1 }' "$work/t.metrics" | median)
    m_c=$(awk '/^[0-9]/ { print $3 + $4 }' "$work/t.metrics" | median)
    m_m=$(awk '/^[0-9]/ { print $2 }' "$work/t.metrics" | sort -n | tail -1)
    p_s=$(awk '/^[0-9]/ { print $1 }' "$work/t.python" | median)
    p_c=$(awk '/^[0-9]/ { print $3 + $4 }' "$work/t.python" | median)
    ipr="-"
    if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null; then
        head -n 100001 "$f" >"$work/small.in"
        valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$DISKMON" -r "$work/small.in" \
            -c dm_bench_none >/dev/null 2>&1
        n=$(python_count "$fmt" "$work/small.in")
        ipr=$(callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null |
              awk -v n="$n" '/dm_lines_run/ { gsub(",", "", $1); printf "%d", $1 / n; exit }')
    fi
    awk -v f="$fmt" -v n="$want" -v rs="$r_s" -v rc="$r_c" -v rm="$r_m" -v ms="$m_s" -v mc="$m_c" \
        -v mm="$m_m" -v ps="$p_s" -v pc="$p_c" -v i="$ipr" \
        'function r(t) { return t > 0 ? n / t / 1e6 : 0 }
         BEGIN { printf "| %s | %d | %.2fM (%.2fM) | %.1f MiB | %.2fM (%.2fM) | %.1f MiB | %.2fM (%.2fM) | %s |\n",
                 f, n, r(rc), r(rs), rm / 1024, r(mc), r(ms), mm / 1024, r(pc), r(ps), i }'
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
[ "$fails" -eq 0 ]
