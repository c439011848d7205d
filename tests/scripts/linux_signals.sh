#!/bin/bash
# linux_signals.sh DISKMON - every signal that would end diskmon cleans up.
#
# For each signal whose default action ends a process and that a program
# may catch (signal(7): SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
# SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGPIPE, SIGIO, SIGPWR,
# SIGSTKFLT and a real-time signal), on the tracefs transport: diskmon,
# capturing from an idle loop device, gets the signal from another process,
# stops within 2 s, exits 0, and its tracefs instance diskmon-PID is gone.
# Then the exception: a SIGPIPE its parent ignored stays ignored (kill -PIPE
# does not stop it; SIGINT still does, cleanly).
# Needs root and a loop device: otherwise "SKIP: why" and exit 77 (a
# failure under CI=true).
set -u

DISKMON=${1:?usage: linux_signals.sh DISKMON}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"
make_loop 16M signals

T=/sys/kernel/tracing
[ -d "$T/instances" ] || T=/sys/kernel/debug/tracing

# start [PREFIX...]: diskmon in the background (optionally through a
# wrapper), once its instance exists; sets $dm.
start() {
    "$@" "$DISKMON" --backend tracefs -d "$name" -o "$work/out.txt" 2>"$work/err.txt" &
    dm=$!
    bg="$bg $dm"
    wait_started "$dm" "$work/err.txt" test -d "$T/instances/diskmon-$dm"
}

# gone_within TENTHS: 0 when $dm ended in time.
gone_within() {
    for _ in $(seq "$1"); do
        kill -0 "$dm" 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}

checked=0
for sig in INT TERM HUP QUIT USR1 USR2 ALRM VTALRM PROF XCPU XFSZ PIPE IO PWR STKFLT RTMIN+5; do
    kill -l "$sig" >/dev/null 2>&1 || { echo "$sig: not on this system"; continue; }
    start
    kill -s "$sig" "$dm"
    gone_within 20 || fail "SIG$sig: diskmon still runs 2 s later"
    wait "$dm"
    rc=$?
    [ "$rc" = 0 ] || fail "SIG$sig: exit $rc, want 0 (an orderly stop): $(cat "$work/err.txt")"
    [ -d "$T/instances/diskmon-$dm" ] && fail "SIG$sig: instance diskmon-$dm left behind"
    checked=$((checked + 1))
done
echo "$checked signals: each stopped diskmon in order, no instance left"

# A SIGPIPE ignored by the parent stays ignored (bash's trap '' is SIG_IGN,
# which exec keeps).
start bash -c 'trap "" PIPE; exec "$@"' sh
kill -s PIPE "$dm"
sleep 0.5
kill -0 "$dm" 2>/dev/null || fail "an inherited SIG_IGN of SIGPIPE was not kept: diskmon stopped"
kill -s INT "$dm"
gone_within 20 || fail "SIGINT after an ignored SIGPIPE: diskmon still runs"
wait "$dm"
rc=$?
[ "$rc" = 0 ] || fail "SIGINT after an ignored SIGPIPE: exit $rc"
[ -d "$T/instances/diskmon-$dm" ] && fail "ignored SIGPIPE: instance diskmon-$dm left behind"
echo "an ignored SIGPIPE stays ignored"
echo "PASS"
