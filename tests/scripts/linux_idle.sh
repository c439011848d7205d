#!/bin/bash
# linux_idle.sh DISKMON - diskmon on a quiet disk: no busy idling, and a
# closed output noticed without waiting for an event.
#
#   1. Wake-ups: `strace -c -f` counts the blocking calls (poll, epoll_wait,
#      futex, nanosleep and kin) of every thread of `diskmon -d LOOP -t 10`
#      on an idle loop device: at most 10 a second (the busy loop it
#      replaced made about 900).
#   2. Latency: 10 single O_DIRECT reads, 0.3 s apart, each timed from the
#      moment pread(2) returned to the moment its line arrived on diskmon's
#      standard output (python, CLOCK_MONOTONIC): printed as median and
#      max, and the max must stay under 250 ms (the old reader's poll
#      timeout plus its hold-back could reach about 200 ms).
#   3. Closed output: `diskmon --no-header -d LOOP | head -0` ends, and
#      with a reader killed while the disk is idle, diskmon is gone within
#      1 s, exits 0 and its tracefs instance is removed.
# On both transports where it matters (3); 1 and 2 on the default one.
# Needs root, a loop device, strace and python3: otherwise "SKIP: why" and
# exit 77 (a failure under CI=true).
set -u

DISKMON=${1:?usage: linux_idle.sh DISKMON}
MAX_WAKEUPS_PER_S=10
MAX_LATENCY_MS=250

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"
command -v strace >/dev/null || skip "strace is not installed (apt-get install strace)"
command -v python3 >/dev/null || skip "python3 is not installed"
make_loop 64M idle

T=/sys/kernel/tracing
[ -d "$T/instances" ] || T=/sys/kernel/debug/tracing

# --- 1. wake-ups while idle -------------------------------------------------
# LeakSanitizer cannot run under ptrace: off for this run of an ASan build.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    strace -c -f -o "$work/strace.txt" "$DISKMON" -d "$name" -t 10 >/dev/null 2>"$work/idle.err" ||
    fail "diskmon -t 10 under strace failed: $(cat "$work/idle.err")"
# strace -c: "% time seconds usecs/call calls [errors] syscall"
wakeups=$(awk '$NF ~ /^(poll|ppoll|epoll_wait|epoll_pwait|epoll_pwait2|futex|nanosleep|clock_nanosleep|select|pselect6)$/ { n += $4 }
               END { print n + 0 }' "$work/strace.txt")
per_s=$(awk -v n="$wakeups" 'BEGIN { printf "%.1f", n / 10 }')
echo "idle: $wakeups blocking calls in 10 s ($per_s per second)"
if grep -qa __tsan_init "$DISKMON"; then
    # Its runtime's own thread sleeps in nanosleep 10 times a second.
    echo "idle: not held to $MAX_WAKEUPS_PER_S per second: a ThreadSanitizer build"
else
    awk -v n="$wakeups" -v max="$MAX_WAKEUPS_PER_S" 'BEGIN { exit !(n <= max * 10) }' ||
        fail "idle: $per_s wake-ups per second, want at most $MAX_WAKEUPS_PER_S: $(cat "$work/strace.txt")"
fi

# --- 2. latency from completion to printed line -----------------------------
cat >"$work/latency.py" <<'EOF'
import mmap, os, select, subprocess, sys, time

diskmon, disk, dev = sys.argv[1:4]
p = subprocess.Popen([diskmon, "-d", disk, "-f", "csv"], stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
out = p.stdout
out.readline()                       # the header: the capture is on
time.sleep(0.5)
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
lat = []
for i in range(10):
    off = (i + 1) * 65536
    os.preadv(fd, [buf], off)
    done = time.monotonic()
    while True:
        if not select.select([out], [], [], 5)[0]:
            sys.exit("no line for the read at %d within 5 s" % off)
        f = out.readline().decode().split(",")
        # seq,time,duration,disk,request,sector,length,pid,tid,process,file,offset,bytes
        if len(f) > 11 and f[4] == "Read" and f[11] == str(off):
            lat.append((time.monotonic() - done) * 1000)
            break
    time.sleep(0.3)
p.terminate()
p.wait()
lat.sort()
print("%.1f %.1f" % (lat[len(lat) // 2], lat[-1]))
EOF
read -r median max < <(python3 "$work/latency.py" "$DISKMON" "$name" "$loop") ||
    fail "latency: the measurement failed"
[ -n "${max:-}" ] || fail "latency: no figures"
echo "latency from completion to line: median $median ms, max $max ms (10 reads)"
awk -v m="$max" -v lim="$MAX_LATENCY_MS" 'BEGIN { exit !(m < lim) }' ||
    fail "latency: max $max ms, want under $MAX_LATENCY_MS ms"

# --- 3. a closed output on an idle disk --------------------------------------
for backend in tracefs perf; do
    start=$(date +%s%N)
    timeout 10 bash -c "\"$DISKMON\" --backend $backend --no-header -d $name | head -0" ||
        fail "$backend: diskmon | head -0 did not end within 10 s"
    echo "$backend: | head -0 ended after $(( ($(date +%s%N) - start) / 1000000 )) ms"

    # A reader killed while nothing happens.
    mkfifo "$work/fifo"
    cat "$work/fifo" >/dev/null &
    reader=$!
    "$DISKMON" --backend "$backend" -d "$name" >"$work/fifo" 2>"$work/closed.err" &
    dm=$!
    bg="$bg $dm"
    for _ in $(seq 100); do
        [ "$backend" = perf ] && break
        [ -d "$T/instances/diskmon-$dm" ] && break
        sleep 0.05
    done
    sleep 0.5
    kill -0 "$dm" 2>/dev/null || fail "$backend: diskmon did not start: $(cat "$work/closed.err")"
    start=$(date +%s%N)
    kill "$reader"
    wait "$reader" 2>/dev/null
    gone=""
    for _ in $(seq 100); do
        kill -0 "$dm" 2>/dev/null || { gone=1; break; }
        sleep 0.01
    done
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    [ -n "$gone" ] || fail "$backend: diskmon still runs 1 s after its reader was killed"
    wait "$dm"
    rc=$?
    echo "$backend: gone $ms ms after its reader was killed (exit $rc)"
    [ "$rc" = 0 ] || fail "$backend: exit $rc after the reader went away: $(cat "$work/closed.err")"
    [ -d "$T/instances/diskmon-$dm" ] && fail "$backend: instance diskmon-$dm left behind"
    rm -f "$work/fifo"
done
echo "PASS"
