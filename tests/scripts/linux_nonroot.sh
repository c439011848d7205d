#!/bin/bash
# linux_nonroot.sh DISKMON - the advice diskmon gives a user who is not
# root, followed to the letter.
#
# As a throwaway user (made here, removed at exit) on a copy of the
# executable:
#   1. diskmon exits 1 with a message that gives a setcap command for that
#      copy, and says that CAP_PERFMON alone is not enough;
#   2. with CAP_PERFMON alone on the copy, it still fails (the message was
#      right to say so);
#   3. after running the setcap command from the message (as root), the
#      user's diskmon captures: O_DIRECT reads by root's dd on a loop device
#      are shown, with dd's pid, and SIGINT ends it with exit 0.
# Needs root, setcap (libcap2-bin), useradd and a loop device: otherwise
# "SKIP: why" and exit 77 (a failure under CI=true).
set -u

DISKMON=${1:?usage: linux_nonroot.sh DISKMON}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"
command -v setcap >/dev/null || skip "setcap is not installed (apt-get install libcap2-bin)"
command -v useradd >/dev/null || skip "useradd is not installed"
command -v runuser >/dev/null || skip "runuser is not installed (util-linux)"
make_loop 16M nonroot

user=dmtest$$
useradd -M -d /nonexistent -s /bin/sh "$user" || skip "cannot add a test user"
cleanup_user() {
    loop_cleanup          # kills diskmon (in $bg) first: userdel refuses a busy user
    userdel "$user" 2>/dev/null || echo "could not remove the test user $user"
}
trap cleanup_user EXIT
chmod 755 "$work"
exe=$work/diskmon
cp "$DISKMON" "$exe" && chmod 755 "$exe" || fail "cannot copy $DISKMON"

as_user() { runuser -u "$user" -- "$@"; }

# --- 1. the message ------------------------------------------------------------
as_user "$exe" -t 1 >/dev/null 2>"$work/err1"
rc=$?
[ "$rc" = 1 ] || fail "as $user: exit $rc, want 1: $(cat "$work/err1")"
advice=$(grep -o "setcap cap_perfmon,cap_dac_read_search+ep [^ ]*" "$work/err1") ||
    fail "the message gives no setcap command for both capabilities: $(cat "$work/err1")"
[ "${advice##* }" = "$exe" ] || fail "the setcap command names ${advice##* }, not $exe"
grep -q "CAP_PERFMON alone" "$work/err1" || fail "the message does not say CAP_PERFMON alone is not enough"
echo "message: ... $advice ..."

# --- 2. CAP_PERFMON alone is not enough -------------------------------------------
setcap cap_perfmon+ep "$exe" || skip "setcap refused (a file system without xattrs?)"
as_user "$exe" -t 1 >/dev/null 2>"$work/err2"
rc=$?
[ "$rc" = 1 ] || fail "with CAP_PERFMON alone: exit $rc, want 1 (the message says it is not enough)"
setcap -r "$exe"

# --- 3. the advice followed ----------------------------------------------------------
# shellcheck disable=SC2086
$advice || fail "the advised command failed: $advice"
# runuser forks and waits: diskmon is its child, found by the user's id.
runuser -u "$user" -- "$exe" -d "$name" -f csv --no-header >"$work/out.csv" 2>"$work/err3" &
dm=$!
bg="$bg $dm"
sleep 1.5
target=$(pgrep -u "$user" -x diskmon) ||
    fail "after $advice, the user's diskmon did not start: $(cat "$work/err3")"
bg="$target $bg"
dd if="$loop" of=/dev/null bs=4096 count=5 iflag=direct status=none &
ddpid=$!
wait "$ddpid"
sleep 0.5
kill -INT "$target"
for _ in $(seq 100); do kill -0 "$dm" 2>/dev/null || break; sleep 0.05; done
kill -0 "$dm" 2>/dev/null && fail "the user's diskmon did not stop on SIGINT"
wait "$dm"
rc=$?
# Such a diskmon reads through perf, which on this kind of VM now and then
# never delivers a completion the kernel counted: exit 3, said on stderr.
lost=0
if [ "$rc" = 3 ]; then
    lost=$(sed -n 's/^diskmon: \([0-9]*\) events\{0,1\} lost .*never delivered.*/\1/p' "$work/err3")
    [ -n "$lost" ] || fail "the user's diskmon exited 3: $(cat "$work/err3")"
elif [ "$rc" != 0 ]; then
    fail "the user's diskmon exited $rc: $(cat "$work/err3")"
fi
# CSV: seq,time,duration,disk,request,sector,length,pid,tid,process,...
reads=$(awk -F, -v pid="$ddpid" '$5 == "Read" && $8 == pid && $10 == "dd"' "$work/out.csv" | wc -l)
echo "after the advice: $reads of 5 reads by dd shown; stderr: $(tr '\n' ' ' <"$work/err3")"
[ "$reads" -le 5 ] && [ "$reads" -ge $((5 - lost)) ] && [ "$reads" -gt 0 ] ||
    fail "after the advice, $reads of dd's 5 reads were shown ($lost lost)"
echo "PASS"
