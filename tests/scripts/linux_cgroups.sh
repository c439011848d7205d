#!/bin/bash
# linux_cgroups.sh DISKMON - each Linux request names its issuer's cgroup v2
# path, on a loop device.
#
# A new cgroup (dmtest-cgroups-PID) is made under the cgroup2 mount found in
# /proc/self/mounts; a shell moves itself into it and execs dd, which writes
# N blocks of 4 KiB with O_DIRECT to the loop device (one request each; fed
# slowly through a pipe, so that dd lives through the capture). Four
# diskmon runs watch the device at once:
#   - csv: every line of dd's pid carries the path /proc/<dd pid>/cgroup
#     showed while dd ran (the 0:: line, read here), and there are N of them;
#   - --cgroup PATH: exactly N lines, all dd's (N from dd's own count);
#   - --top --by cgroup -f csv: that path's write_bytes add up to dd's bytes;
#   - --metrics: promtool check metrics passes, and
#     diskmon_cgroup_bytes_total{cgroup=PATH,op="write"} is dd's bytes.
# The cgroup is removed at exit (its processes moved back to the root
# first). Prints "PASS linux_cgroups/name" / "FAIL ..." lines; exit 0, 1,
# or 77 (skip: not root, no loop devices, no cgroup2 mount, no promtool; a
# failure under CI=true).
set -u

DISKMON=${1:?usage: linux_cgroups.sh DISKMON}
HERE=$(cd "$(dirname "$0")" && pwd)
N=64
BS=4096

# shellcheck source=../lib/loop_common.sh
. "$HERE/../lib/loop_common.sh"
command -v promtool >/dev/null || skip "promtool is not installed (apt-get install prometheus)"
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$mnt" ] || skip "no cgroup2 file system in /proc/self/mounts (a v1-only machine)"
make_loop 64M cgroups

cg_dir="$mnt/dmtest-cgroups-$$"
cgroups_cleanup() {
    if [ -d "$cg_dir" ]; then
        # A cgroup with processes cannot be removed: move them back first.
        while read -r p; do
            echo "$p" >"$mnt/cgroup.procs" 2>/dev/null
        done <"$cg_dir/cgroup.procs"
        rmdir "$cg_dir" 2>/dev/null || echo "# linux_cgroups: could not remove $cg_dir"
    fi
    loop_cleanup
}
trap cgroups_cleanup EXIT
mkdir "$cg_dir" || skip "cannot make a cgroup in $mnt"

fails=0
pass() { echo "PASS linux_cgroups/$1"; }
bad() { echo "FAIL linux_cgroups/$1: $2"; fails=$((fails + 1)); }

# start NAME ARGS...: diskmon in the background; its pid in $dm_NAME.
start() {
    local tag=$1
    shift
    "$DISKMON" -d "$name" "$@" 2>"$work/$tag.err" &
    eval "dm_$tag=$!"
    bg="$bg $!"
}

rel=${cg_dir#"$mnt"}
start all -f csv -o "$work/all.csv"
start sel -f csv -o "$work/sel.csv" --cgroup "$rel"
start top -f csv -o "$work/top.csv" --top 0.5 --by cgroup
start prom --metrics "$work/m.prom" --interval 0.5
# Each capturing once it wrote its file.
wait_started "$dm_all" "$work/all.err" test -s "$work/all.csv"
wait_started "$dm_sel" "$work/sel.err" test -s "$work/sel.csv"
wait_started "$dm_top" "$work/top.err" test -s "$work/top.csv"
wait_started "$dm_prom" "$work/prom.err" test -s "$work/m.prom"

# dd in the new cgroup: the shell writes its own pid (which exec keeps)
# into cgroup.procs, then becomes dd. The feeder outside the cgroup gives
# one block every 10 ms.
(for _ in $(seq $N); do head -c $BS /dev/zero; sleep 0.01; done) |
    sh -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2" && exec dd of="$3" bs="$4" \
           count="$5" iflag=fullblock oflag=direct 2>"$6"' sh \
        "$cg_dir" "$work/dd.pid" "$loop" $BS $N "$work/dd.err" &
feeder=$!
for _ in $(seq 100); do
    [ -s "$work/dd.pid" ] && break
    sleep 0.02
done
dd_pid=$(cat "$work/dd.pid" 2>/dev/null)
[ -n "$dd_pid" ] || fail "dd did not start in $cg_dir"
sleep 0.1
want=$(sed -n 's/^0:://p' "/proc/$dd_pid/cgroup")
wait "$feeder"
grep -q "^$N+0 records out" "$work/dd.err" || fail "dd: $(cat "$work/dd.err")"
echo "# linux_cgroups: dd pid $dd_pid in cgroup $want (/proc/$dd_pid/cgroup)"
[ "$want" = "$rel" ] || echo "# linux_cgroups: /proc shows $want for $cg_dir (a cgroup namespace)"
sleep 1.2 # the last --top interval and --metrics write pass

for tag in all sel top prom; do
    eval "interrupt \$dm_$tag"
    [ "$rc" = 0 ] || bad "exit_$tag" "exit $rc: $(cat "$work/$tag.err")"
done

# csv lines end in CR LF (RFC 4180); the header names the columns.
sed -i 's/\r$//' "$work/all.csv" "$work/sel.csv" "$work/top.csv"
col() { head -n 1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
pidc=$(col "$work/all.csv" pid) cgc=$(col "$work/all.csv" cgroup)
[ -n "$pidc" ] && [ -n "$cgc" ] || fail "csv header without pid or cgroup: $(head -n 1 "$work/all.csv")"
stats() { # CSV: "lines-of-dd lines-of-dd-with-want total-lines"
    awk -F, -v p="$pidc" -v c="$cgc" -v pid="$dd_pid" -v want="$want" '
        NR > 1 { n++; if ($p == pid) { d++; if ($c == want) w++ } }
        END { printf "%d %d %d\n", d, w, n }' "$1"
}
read -r d w _ < <(stats "$work/all.csv")
if [ "$d" = $N ] && [ "$w" = $N ]; then
    pass every_dd_line_names_its_cgroup
else
    bad every_dd_line_names_its_cgroup "$d dd lines (want $N), $w with cgroup $want"
fi
read -r d w n < <(stats "$work/sel.csv")
if [ "$n" = $N ] && [ "$d" = $N ] && [ "$w" = $N ]; then
    pass cgroup_filter_selects_dd
else
    bad cgroup_filter_selects_dd "--cgroup $rel: $n lines, $d of dd (want $N)"
fi
got=$(awk -F, -v c="$(col "$work/top.csv" cgroup)" -v b="$(col "$work/top.csv" write_bytes)" \
      -v want="$want" 'NR > 1 && $c == want { s += $b } END { print s + 0 }' "$work/top.csv")
if [ "$got" = $((N * BS)) ]; then
    pass top_by_cgroup_bytes
else
    bad top_by_cgroup_bytes "write_bytes of $want: $got, dd wrote $((N * BS)): $(cat "$work/top.csv")"
fi
if msg=$(promtool check metrics <"$work/m.prom" 2>&1); then
    pass promtool_check
else
    bad promtool_check "$(printf '%s' "$msg" | head -c 300)"
fi
got=$(grep -F "diskmon_cgroup_bytes_total{cgroup=\"$want\",op=\"write\"} " "$work/m.prom" |
      awk '{ print $2 }')
if [ "$got" = $((N * BS)) ]; then
    pass metrics_cgroup_bytes
else
    bad metrics_cgroup_bytes "diskmon_cgroup_bytes_total of $want: '$got', dd wrote $((N * BS))"
fi
[ "$fails" = 0 ] || exit 1
