# loop_common.sh - sourced by the Linux live tests: result helpers and a
# scratch loop device over a file in /dev/shm that is always removed.
#
# After make_loop SIZE TAG: $work (scratch folder), $loop (/dev/loopN) and
# $name (loopN) are set. Background pids added to $bg are killed at exit.
# wait_started waits for a diskmon started in the background to capture.

skip() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL: required under CI=true: $*"
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}

fail() {
    echo "FAIL: $*"
    exit 1
}

work="" loop="" name="" bg=""

loop_cleanup() {
    for p in $bg; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "$loop" ] && losetup -d "$loop"
    [ -n "$work" ] && rm -rf "$work"
}

make_loop() { # SIZE TAG
    [ "$(id -u)" = 0 ] || skip "needs root (loop devices, perf events)"
    command -v losetup >/dev/null || skip "losetup is not installed"
    [ -d /dev/shm ] || skip "no /dev/shm"
    work=$(mktemp -d "/dev/shm/diskmon_$2.XXXXXX") || fail "mktemp"
    trap loop_cleanup EXIT
    trap 'exit 1' INT TERM
    # A sparse file: reads of holes cost no memory.
    truncate -s "$1" "$work/disk.img" || fail "cannot create $work/disk.img"
    loop=$(losetup -f --show "$work/disk.img") || skip "cannot create a loop device"
    name=${loop#/dev/}
    # Let udev's probe of the new device pass before capturing.
    if command -v udevadm >/dev/null; then udevadm settle -t 5 2>/dev/null; fi
}

# interrupt PID: SIGINT, wait up to 10 s for it to exit (else fail), and put
# its exit code in $rc.
interrupt() {
    kill -INT "$1"
    for _ in $(seq 200); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$1" 2>/dev/null && fail "diskmon did not stop within 10 s of SIGINT"
    wait "$1"
    rc=$?
}

# wait_started PID ERR CHECK...: wait up to 10 s for the diskmon started in
# the background as PID (its stderr going to the file ERR) to be capturing,
# which the command CHECK says, tried every 50 ms: `test -s OUT` for its
# first output file (diskmon creates -o only once its source is open), or a
# test of the tracefs instance it makes. Where diskmon exited first: SKIP
# with its own words when live capture was refused (every refusal carries
# the privilege hint naming CAP_PERFMON, or says tracefs is not mounted:
# src/linux/tracefs.c), else FAIL with its exit code and stderr. After 10 s
# without CHECK: FAIL with its stderr too.
wait_started() {
    local pid=$1 err=$2 code
    shift 2
    for _ in $(seq 200); do
        "$@" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$pid" 2>/dev/null &&
        fail "diskmon not capturing within 10 s ('$*' not true): $(cat "$err")"
    wait "$pid"
    code=$?
    grep -qE 'CAP_PERFMON|tracefs is not mounted' "$err" &&
        skip "live capture refused: $(head -c 300 "$err")"
    fail "diskmon exited at start (exit $code): $(cat "$err")"
}
