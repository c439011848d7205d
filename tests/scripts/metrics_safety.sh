#!/usr/bin/env bash
# metrics_safety.sh DISKMON - --metrics, which runs as root, replaces only
# what it was asked to write:
#   - a symbolic link, a FIFO, a character device (mknod), a directory and
#     a socket given as --metrics are refused with exit 2 and one line
#     naming the path, and are left as they were (stat before and after;
#     the link's target keeps its bytes);
#   - a symbolic link planted at the old FILE.tmp name is not followed, and
#     strace shows every open(2) that creates a file carrying O_EXCL and
#     O_NOFOLLOW (so no name the product picks can be a planted link);
#   - the file is mode 0644 under umask 077 (node_exporter reads it as
#     another user), a new file and one that was 0600;
#   - -o X --metrics X, -r T --metrics T, -r T -o T and standard output
#     redirected to the metrics file are refused (exit 2, files untouched),
#     also through a hard link and a symbolic link, and for a name not
#     created yet;
#   - replay --metrics /nonexistent/x.prom: exit 1, one line, and no
#     "trying again" (a replay has no intervals);
#   - SIGTERM in the middle of a long replay leaves no temporary file;
#   - live (root, a loop device, tracefs): a -t 2 run whose metrics file
#     cannot be written exits 1; SIGTERM at ten moments of a run rewriting
#     the file every 50 ms leaves no temporary file; a file replaced by a
#     symbolic link mid-run is refused once (the link and its target stay
#     as they are) and the run goes on.
# The traces are made by tests/bench/gen_etl (built on demand beside
# DISKMON), so no sample trace is needed. Exit 0 pass, 1 fail, 77 skip;
# missing root or tools are skips, failures under CI=true.
set -u
DISKMON=$(realpath "${1:?usage: metrics_safety.sh DISKMON}")
BUILD=$(dirname "$DISKMON")
GEN=$BUILD/gen_etl
HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=metrics_safety
# shellcheck source=../lib/results.sh
. "$HERE/../lib/results.sh"
TMP=$(mktemp -d /tmp/metrics_safety.XXXXXX)
loop="" bg=""
cleanup() {
    for p in $bg; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "$loop" ] && losetup -d "$loop"
    rm -rf "$TMP"
}
trap cleanup EXIT
skipped=0
skip() { # name, why
    if [ "${CI:-}" = true ]; then fail "$1" "$2 (required under CI=true)"; return; fi
    echo "SKIP $SUITE/$1: $2"
    skipped=$((skipped + 1))
}

[ -x "$GEN" ] || cmake --build "$BUILD" --target gen_etl >"$TMP/build.log" 2>&1 || {
    skip gen_etl "cannot build gen_etl: $(tail -c 300 "$TMP/build.log")"
    exit 77
}
T=$TMP/t.etl
"$GEN" --ios 20000 "$T" >/dev/null || { fail generate "gen_etl failed"; exit 1; }
is_root=0
[ "$(id -u)" -eq 0 ] && is_root=1

# What a path is, not following a final link, and its content's checksum
# (a link's: its target's), to compare before and after a run.
state() {
    stat -c '%F %i %a %s %Y' "$1" 2>/dev/null
    if [ -L "$1" ]; then readlink "$1"; fi
    if [ -f "$1" ]; then cksum <"$1" 2>/dev/null; fi
}
# refused NAME PATH_TO_KEEP ARGS...: exit 2, one line on stderr naming the
# path it was given, PATH_TO_KEEP as it was.
refused() {
    local name=$1 keep=$2 before after rc lines
    shift 2
    before=$(state "$keep")
    "$DISKMON" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    after=$(state "$keep")
    lines=$(wc -l <"$TMP/err")
    if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [ "$before" = "$after" ]; then
        pass "$name"
    else
        fail "$name" "exit $rc (want 2), $lines lines: $(head -c 300 "$TMP/err"); before [$before] after [$after]"
    fi
}
no_tmp() { # name, folder
    local left
    left=$(find "$2" -name '*.tmp' 2>/dev/null | head -3)
    if [ -z "$left" ]; then pass "$1"; else fail "$1" "left: $left"; fi
}

# --- what --metrics refuses ---------------------------------------------------
D=$TMP/k
mkdir "$D"
echo important >"$D/victim.txt"
ln -s victim.txt "$D/link.prom"
refused symlink_refused "$D/link.prom" -r "$T" --metrics "$D/link.prom"
refused symlink_target_untouched "$D/victim.txt" -r "$T" --metrics "$D/link.prom"
grep -q "link.prom is a symbolic link" "$TMP/err" && pass symlink_named ||
    fail symlink_named "$(cat "$TMP/err")"
mkfifo "$D/fifo.prom"
refused fifo_refused "$D/fifo.prom" -r "$T" --metrics "$D/fifo.prom"
if [ "$is_root" -eq 1 ] && mknod "$D/null.prom" c 1 3 2>/dev/null; then
    refused chardev_refused "$D/null.prom" -r "$T" --metrics "$D/null.prom"
    grep -q "is a character device" "$TMP/err" && pass chardev_named ||
        fail chardev_named "$(cat "$TMP/err")"
else
    skip chardev_refused "mknod needs root"
fi
mkdir "$D/dir.prom"
refused directory_refused "$D/dir.prom" -r "$T" --metrics "$D/dir.prom"
if python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$D/sock.prom"; then
    refused socket_refused "$D/sock.prom" -r "$T" --metrics "$D/sock.prom"
else
    skip socket_refused "python3 cannot bind a Unix socket here"
fi
refused dev_stdout_refused /dev/stdout -o /dev/stdout -r "$T" --metrics /dev/stdout
no_tmp refusals_leave_no_tmp "$D"

# --- no name diskmon creates can be a planted link ---------------------------------
P=$TMP/plant
mkdir "$P"
echo important >"$P/victim.txt"
ln -s victim.txt "$P/m.prom.tmp"
"$DISKMON" -r "$T" --metrics "$P/m.prom" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(cat "$P/victim.txt")" = important ] && [ -f "$P/m.prom" ] &&
    [ ! -L "$P/m.prom" ] && [ "$(readlink "$P/m.prom.tmp")" = victim.txt ]; then
    pass old_tmp_name_link_not_followed
else
    fail old_tmp_name_link_not_followed "exit $rc; victim: $(head -c 40 "$P/victim.txt"); $(ls -l "$P")"
fi
if command -v strace >/dev/null; then
    rm -f "$P/m.prom"
    strace -f -e trace=openat,open,creat -o "$TMP/strace" "$DISKMON" -r "$T" --metrics "$P/m.prom" 2>/dev/null
    # Every create of the run, but the ThreadSanitizer runtime's own
    # (/tmp/tsan.rodata.PID in a TSan build: not the product's).
    creates=$(grep -E 'O_CREAT|creat\(' "$TMP/strace" | grep -v ' = -1 ENOENT' |
        grep -v '"/tmp/tsan\.' || true)
    bad=$(printf '%s\n' "$creates" | grep -v '^$' | grep -vE 'O_EXCL' ; printf '%s\n' "$creates" | grep -v '^$' | grep -v 'O_NOFOLLOW')
    n=$(printf '%s\n' "$creates" | grep -c 'm\.prom\.[A-Za-z0-9]\{12\}\.tmp')
    if [ -z "$bad" ] && [ "$n" -ge 1 ]; then
        pass creates_with_excl_nofollow
    else
        fail creates_with_excl_nofollow "$n temporary opens; without O_EXCL|O_NOFOLLOW: $(printf '%s' "$bad" | head -c 300)"
    fi
else
    skip creates_with_excl_nofollow "strace is not installed (apt-get install strace)"
fi
rm -f "$P/m.prom.tmp" # the planted link, not diskmon's
no_tmp plant_leaves_no_tmp "$P"

# --- mode 0644 whatever the umask -----------------------------------------------------
M=$TMP/mode
mkdir "$M"
(umask 077 && "$DISKMON" -r "$T" --metrics "$M/new.prom" 2>/dev/null)
check mode_0644_new_under_umask_077 test "$(stat -c %a "$M/new.prom" 2>/dev/null)" = 644
(umask 077 && echo old >"$M/old.prom" && chmod 600 "$M/old.prom" &&
    "$DISKMON" -r "$T" --metrics "$M/old.prom" 2>/dev/null)
check mode_0644_replacing_0600 test "$(stat -c %a "$M/old.prom" 2>/dev/null)" = 644

# --- -r, -o and --metrics: three different files ---------------------------------------
S=$TMP/same
mkdir "$S"
cp "$T" "$S/t.etl"
ln "$S/t.etl" "$S/hard.etl"
ln -s t.etl "$S/soft.etl"
refused o_and_metrics_new_name "$S" -r "$T" -o "$S/x.txt" --metrics "$S/x.txt"
[ -e "$S/x.txt" ] && fail o_and_metrics_new_name_not_created "x.txt was created" ||
    pass o_and_metrics_new_name_not_created
refused o_and_metrics_spelled_apart "$S" -r "$T" -o "$S/x.txt" --metrics "$S/../same/./x.txt"
ln -s x.txt "$S/dangling"
refused o_through_dangling_link_to_metrics "$S" -r "$T" -o "$S/dangling" --metrics "$S/x.txt"
rm "$S/dangling"
echo lines >"$S/x.txt"
ln "$S/x.txt" "$S/x-hard.txt"
ln -s x.txt "$S/x-soft.txt"
refused o_and_metrics_existing "$S/x.txt" -r "$T" -o "$S/x.txt" --metrics "$S/x.txt"
refused o_and_metrics_hard_link "$S/x.txt" -r "$T" -o "$S/x-hard.txt" --metrics "$S/x.txt"
refused o_symlink_to_metrics "$S/x.txt" -r "$T" -o "$S/x-soft.txt" --metrics "$S/x.txt"
refused r_and_metrics "$S/t.etl" -r "$S/t.etl" --metrics "$S/t.etl"
refused r_and_metrics_hard_link "$S/t.etl" -r "$S/t.etl" --metrics "$S/hard.etl"
refused r_and_metrics_symlink "$S/t.etl" -r "$S/soft.etl" --metrics "$S/t.etl"
refused r_and_o "$S/t.etl" -r "$S/t.etl" -o "$S/t.etl"
refused r_and_o_hard_link "$S/t.etl" -r "$S/t.etl" -o "$S/hard.etl"
refused r_and_o_symlink "$S/t.etl" -r "$S/t.etl" -o "$S/soft.etl"
before=$(state "$S/x.txt")
"$DISKMON" -r "$T" --metrics "$S/x.txt" >>"$S/x.txt" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(state "$S/x.txt")" = "$before" ] && pass stdout_is_metrics_refused ||
    fail stdout_is_metrics_refused "exit $rc: $(cat "$TMP/err")"
# -o keeps its meaning: /dev/null and an existing regular file are fine.
"$DISKMON" -r "$T" -o /dev/null --metrics "$S/m.prom" 2>"$TMP/err"
check o_dev_null_allowed test $? -eq 0
"$DISKMON" -r "$T" -o "$S/x.txt" --metrics "$S/m.prom" 2>"$TMP/err"
rc=$?
check o_existing_file_overwritten test "$rc" -eq 0 -a "$(head -c 5 "$S/x.txt")" != lines
no_tmp same_leaves_no_tmp "$S"

# --- replay: a file that cannot be written --------------------------------------------
"$DISKMON" -r "$T" --metrics /nonexistent/x.prom >/dev/null 2>"$TMP/err"
rc=$?
lines=$(wc -l <"$TMP/err")
if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && grep -q '/nonexistent/x.prom' "$TMP/err" &&
    ! grep -q 'trying again' "$TMP/err"; then
    pass replay_unwritable_exit_1_one_line
else
    fail replay_unwritable_exit_1_one_line "exit $rc, $lines lines: $(cat "$TMP/err")"
fi

# --- SIGTERM in the middle of a long replay ----------------------------------------------
L=$TMP/long
mkdir "$L"
"$GEN" --ios 3000000 "$L/long.etl" >/dev/null || fail generate_long "gen_etl failed"
"$DISKMON" -r "$L/long.etl" --metrics "$L/m.prom" -o /dev/null 2>"$TMP/err" &
dm=$!
# SIGTERM only once diskmon catches it (SigCgt in /proc/PID/status, bit
# 15 - 1): before that, on a loaded machine or an ASan build, the default
# action would end it with 143, which says nothing about its cleanup.
for _ in $(seq 200); do
    cgt=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$dm/status" 2>/dev/null)
    [ -n "$cgt" ] && [ $(( 0x$cgt >> 14 & 1 )) -eq 1 ] && break
    sleep 0.05
done
sleep 0.2
if kill -0 "$dm" 2>/dev/null; then
    kill -TERM "$dm"
    wait "$dm"
    rc=$?
    # Stopped in order: the metrics of what was read are written, no
    # temporary file is left.
    [ -s "$L/m.prom" ] && [ "$rc" -eq 0 ] && pass replay_sigterm_writes_file ||
        fail replay_sigterm_writes_file "exit $rc: $(head -c 300 "$TMP/err")"
else
    wait "$dm"
    skip replay_sigterm_writes_file "the replay ended within 0.5 s, before SIGTERM"
fi
no_tmp replay_sigterm_no_tmp "$L"

# --- live -------------------------------------------------------------------------------------
live_skip() {
    for c in live_unwritable_exit_1 live_sigterm_no_tmp live_link_planted_refused_once; do
        skip "$c" "$1"
    done
}
TR=/sys/kernel/tracing
[ -d "$TR/instances" ] || TR=/sys/kernel/debug/tracing
if [ "$is_root" -ne 1 ]; then
    live_skip "needs root (live capture, loop devices)"
elif ! command -v losetup >/dev/null || [ ! -d /dev/shm ]; then
    live_skip "losetup or /dev/shm is missing"
elif [ ! -d "$TR/instances" ]; then
    live_skip "no tracefs (mount -t tracefs nodev /sys/kernel/tracing)"
elif ! truncate -s 16M "$TMP/disk.img" || ! loop=$(losetup -f --show "$TMP/disk.img"); then
    loop=""
    live_skip "cannot create a loop device"
else
    name=${loop#/dev/}
    command -v udevadm >/dev/null && udevadm settle -t 5 2>/dev/null
    "$DISKMON" -d "$name" -t 2 --metrics /nonexistent/x.prom -o /dev/null 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 1 ] && grep -q 'trying again' "$TMP/err" && pass live_unwritable_exit_1 ||
        fail live_unwritable_exit_1 "exit $rc: $(head -c 300 "$TMP/err")"

    V=$TMP/live
    mkdir "$V"
    load() { while :; do dd if="$loop" of=/dev/null bs=4096 count=64 iflag=direct 2>/dev/null || break; done; }
    load &
    ld=$!
    bg="$bg $ld"
    bad_runs=""
    for i in $(seq 10); do
        "$DISKMON" -d "$name" --metrics "$V/m$i.prom" --interval 0.05 -o /dev/null 2>"$TMP/err$i" &
        dm=$!
        for _ in $(seq 100); do [ -s "$V/m$i.prom" ] && break; sleep 0.05; done
        sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
        kill -TERM "$dm"
        wait "$dm"
        rc=$?
        [ "$rc" -eq 0 ] && [ -s "$V/m$i.prom" ] || bad_runs="$bad_runs run$i:exit$rc"
    done
    [ -z "$bad_runs" ] && pass live_sigterm_exit_0 || fail live_sigterm_exit_0 "$bad_runs $(head -c 200 "$TMP/err1")"
    no_tmp live_sigterm_no_tmp "$V"

    # The file becomes a symbolic link while diskmon runs.
    echo important >"$V/victim.txt"
    "$DISKMON" -d "$name" --metrics "$V/w.prom" --interval 0.05 -o /dev/null 2>"$TMP/err" &
    dm=$!
    bg="$bg $dm"
    for _ in $(seq 100); do [ -s "$V/w.prom" ] && break; sleep 0.05; done
    ln -sf victim.txt "$V/w.prom.new" && mv -T "$V/w.prom.new" "$V/w.prom"
    sleep 0.5
    kill -TERM "$dm"
    wait "$dm"
    rc=$?
    n=$(grep -c 'w.prom: it is a symbolic link: not replacing it' "$TMP/err")
    if [ "$rc" -eq 0 ] && [ "$n" -eq 1 ] && [ "$(cat "$V/victim.txt")" = important ] &&
        [ "$(readlink "$V/w.prom")" = victim.txt ]; then
        pass live_link_planted_refused_once
    else
        fail live_link_planted_refused_once "exit $rc, said $n times, victim [$(head -c 40 "$V/victim.txt")]: $(head -c 300 "$TMP/err")"
    fi
    no_tmp live_link_no_tmp "$V"
    kill "$ld" 2>/dev/null
fi

[ "$fails" -eq 0 ] || exit 1
exit 0
