#!/bin/bash
# linux_partitions.sh DISKMON - each request names the partition it falls in.
#
# A file over /dev/shm gets a GPT of three partitions from sfdisk, then a
# loop device with `losetup -P`. While four diskmon runs capture the disk
# (-d loopN, -d loopNp2, --top --by partition, --metrics), dd writes with
# oflag=direct a known number of blocks to each partition (through device
# nodes of our own, made from sysfs, so no udev is needed), one block across
# the p1/p2 boundary and one outside every partition (both: the whole disk,
# partition ""). Then a fourth partition is appended while diskmon runs and
# written to, which diskmon sees only by reading the table again.
#
# The reference is sysfs and dd, not diskmon: each partition's
# /sys/class/block/loopNpK/start and size (512-byte sectors from the disk's
# start), checked against sfdisk's own dump, place each dd request by its
# disk sector in awk; dd's "records out" give the counts. Checked: every dd
# line's partition column is the one awk finds; the dd lines per partition
# equal dd's counts; -d loopNp2 shows p2's requests only, as many as dd
# wrote there; --top's write_bytes per partition, summed over the
# intervals, and --metrics' partition families equal dd's figures. Needs root, losetup and sfdisk: otherwise
# "SKIP: why", exit 77 (a failure under CI=true).
set -u

DISKMON=${1:?usage: linux_partitions.sh DISKMON}
here=$(dirname "$0")
# shellcheck source=../lib/loop_common.sh
. "$here/../lib/loop_common.sh"
[ "$(id -u)" = 0 ] || skip "needs root (loop devices, tracefs)"
command -v losetup >/dev/null || skip "losetup is not installed"
command -v sfdisk >/dev/null || skip "sfdisk is not installed (Debian package fdisk)"
[ -d /dev/shm ] || skip "no /dev/shm"

work=$(mktemp -d /dev/shm/diskmon_partitions.XXXXXX) || fail "mktemp"
trap loop_cleanup EXIT
trap 'exit 1' INT TERM
img=$work/disk.img
truncate -s 64M "$img" || fail "truncate $img"
# Three partitions (8, 16 and 8 MiB, 1 MiB aligned), written to the file
# before the loop device exists, so that losetup -P finds them.
printf 'label: gpt\nsize=8MiB\nsize=16MiB\nsize=8MiB\n' | sfdisk -q "$img" ||
    fail "sfdisk $img"
loop=$(losetup -f -P --show "$img") || skip "cannot create a loop device"
name=${loop#/dev/}

# sysk K FIELD: /sys/class/block/loopNpK/FIELD, once the kernel has it.
wait_part() { # K
    for _ in $(seq 100); do
        [ -e "/sys/class/block/${name}p$1/size" ] && return 0
        sleep 0.05
    done
    return 1
}
if ! wait_part 3; then
    # Where losetup -P made none, partx adds them one by one (BLKPG).
    command -v partx >/dev/null && partx -a "$loop" 2>/dev/null
    wait_part 3 || skip "the kernel made no partitions of $loop (losetup -P, partx -a)"
fi
sysk() { cat "/sys/class/block/${name}p$1/$2"; }

# Our own device node per partition, from its MAJ:MIN in sysfs.
node() { # K
    local mm
    mm=$(sysk "$1" dev) || fail "no dev for ${name}p$1"
    [ -b "$work/p$1" ] || mknod "$work/p$1" b "${mm%:*}" "${mm#*:}" || fail "mknod p$1"
}
for k in 1 2 3; do node "$k"; done

# sysfs against sfdisk's dump of the same table: start and size agree.
sfdisk -d "$loop" >"$work/sfdisk.dump" || fail "sfdisk -d $loop"
for k in 1 2 3; do
    want=$(sed -n "s|^$loop""p$k : start= *\([0-9]*\), size= *\([0-9]*\),.*|\1 \2|p" \
        "$work/sfdisk.dump")
    got="$(sysk "$k" start) $(sysk "$k" size)"
    [ "$want" = "$got" ] || fail "${name}p$k: sysfs start size '$got', sfdisk '$want'"
done

"$DISKMON" -d "$name" -f csv -o "$work/all.csv" 2>"$work/all.err" &
dm_all=$!
"$DISKMON" -d "${name}p2" -f csv -o "$work/p2.csv" 2>"$work/p2.err" &
dm_p2=$!
"$DISKMON" -d "$name" --top 1 --by partition -f csv -o "$work/top.csv" \
    2>"$work/top.err" &
dm_top=$!
"$DISKMON" -d "$name" --metrics "$work/diskmon.prom" 2>"$work/metrics.err" &
dm_metrics=$!
bg="$dm_all $dm_p2 $dm_top $dm_metrics"
sleep 1.5
for p in $bg; do
    kill -0 "$p" 2>/dev/null || fail "diskmon exited early: $(cat "$work"/*.err)"
done

# write TARGET BS COUNT [dd args]: dd's own count of records out.
declare -A blocks bytes
write() { # KEY TARGET BS COUNT [ARGS...]
    local key=$1 target=$2 bs=$3 count=$4 out
    shift 4
    out=$(dd if=/dev/zero of="$target" bs="$bs" count="$count" oflag=direct "$@" 2>&1) ||
        fail "dd $target: $out"
    local n
    n=$(printf '%s\n' "$out" | sed -n 's/^\([0-9]*\)+0 records out$/\1/p')
    [ -n "$n" ] || fail "dd $target: no records-out line: $out"
    blocks[$key]=$(( ${blocks[$key]:-0} + n ))
    bytes[$key]=$(( ${bytes[$key]:-0} + n * bs ))
}
write p1 "$work/p1" 4096 5
write p2 "$work/p2" 4096 7
write p3 "$work/p3" 8192 3
# 8 KiB from 2 KiB before p2's start: across the p1/p2 boundary.
p2_start=$(sysk 2 start)
write whole "$loop" 8192 1 oflag=direct,seek_bytes seek=$(( (p2_start - 4) * 512 ))
# Past p4's place (appended below) and before the backup GPT: no partition.
write whole "$loop" 4096 1 seek=15000

# A fourth partition after diskmon started: appended to the table, added
# to the kernel's alone (partx -a --nr 4, BLKPG; a whole re-read, BLKRRPART,
# was seen here to drop the other three), then written to once diskmon may
# read the table again (at most once a second).
command -v partx >/dev/null || skip "partx is not installed (util-linux)"
printf 'size=8MiB\n' | sfdisk -q --no-reread --no-tell-kernel --append "$loop" \
    >"$work/append.out" 2>&1 || fail "sfdisk --append: $(cat "$work/append.out")"
partx -a --nr 4 "$loop" >>"$work/append.out" 2>&1 ||
    fail "partx -a --nr 4 $loop: $(cat "$work/append.out")"
wait_part 4 || fail "${name}p4 did not appear after partx -a"
wait_part 1 || fail "${name}p1 is gone after partx -a"
node 4
sleep 1.2
write p4 "$work/p4" 4096 2
sleep 0.5
for p in $bg; do
    interrupt "$p"
    [ "$rc" = 0 ] || fail "diskmon exit $rc: $(cat "$work"/*.err)"
done
bg=""

# The table from sysfs, for awk: "name start size" per partition.
for k in 1 2 3 4; do echo "${name}p$k $(sysk "$k" start) $(sysk "$k" size)"; done \
    >"$work/table"

# Every dd line: the partition awk finds for [sector, sector + length) (a
# request inside one partition has its name, any other the whole disk's
# ""), against diskmon's; then the dd lines per partition.
awk -F, -v table="$work/table" '
BEGIN { while ((getline l < table) > 0) { split(l, t, " "); n++;
            nm[n] = t[1]; first[n] = t[2]; end[n] = t[2] + t[3] } }
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$col["process"] == "dd" {
    s = $col["sector"]; e = s + $col["length"]; want = ""
    for (i = 1; i <= n; i++) if (s >= first[i] && e <= end[i]) want = nm[i]
    got = $col["partition"]
    if (got != want) { printf "line %d: sector %s length %s: partition \"%s\", sysfs says \"%s\"\n", NR, s, $col["length"], got, want; bad++ }
    count[got == "" ? "whole" : got]++
}
END { for (k in count) print "count", k, count[k] > "/dev/stderr"; exit bad > 0 }
' "$work/all.csv" 2>"$work/counts" || fail "partition column wrong (above)"
cat "$work/counts"
for key in p1 p2 p3 p4 whole; do
    label=$key
    [ "$key" = whole ] || label=$name$key
    got=$(awk -v k="$label" '$2 == k { print $3 }' "$work/counts")
    [ "${got:-0}" = "${blocks[$key]}" ] ||
        fail "$label: ${got:-0} dd requests in diskmon -d $name, dd wrote ${blocks[$key]}"
    echo "ok: $label: ${blocks[$key]} dd requests, as dd counted"
done

# -d loopNp2: p2's requests only, as many as dd wrote there.
awk -F, -v want="${name}p2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["partition"] != want { print "line " NR " in -d " want ": " $0; bad++ }
    END { exit bad > 0 }' "$work/p2.csv" || fail "-d ${name}p2 showed other requests"
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["process"] == "dd" { n++ } END { print n + 0 }' "$work/p2.csv")
[ "$got" = "${blocks[p2]}" ] || fail "-d ${name}p2: $got dd requests, dd wrote ${blocks[p2]}"
echo "ok: -d ${name}p2: $got requests, all in ${name}p2"

# --top --by partition: write bytes per partition over all intervals.
for key in p1 p2 p3 p4; do
    got=$(awk -F, -v want="$name$key" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $col["partition"] == want { b += $col["write_bytes"] } END { print b + 0 }' \
        "$work/top.csv")
    [ "$got" = "${bytes[$key]}" ] ||
        fail "--top --by partition: $name$key wrote $got bytes, dd ${bytes[$key]}"
    echo "ok: --top --by partition: $name$key $got bytes, as dd wrote"
done
# --metrics: the partition families, written at exit, against dd's bytes
# and requests; promtool's lint where it is installed.
for key in p1 p2 p3 p4; do
    for fam in bytes requests; do
        want=${bytes[$key]}
        [ "$fam" = requests ] && want=${blocks[$key]}
        got=$(sed -n "s/^diskmon_partition_${fam}_total{partition=\"$name$key\",op=\"write\"} //p" \
            "$work/diskmon.prom")
        [ "$got" = "$want" ] ||
            fail "--metrics: diskmon_partition_${fam}_total of $name$key is '$got', dd $want"
    done
    echo "ok: --metrics: $name$key ${blocks[$key]} writes, ${bytes[$key]} bytes, as dd wrote"
done
if command -v promtool >/dev/null; then
    promtool check metrics <"$work/diskmon.prom" >"$work/promtool.out" 2>&1 ||
        fail "promtool check metrics: $(cat "$work/promtool.out")"
    echo "ok: promtool check metrics"
fi
exit 0
