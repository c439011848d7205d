#!/bin/bash
# linux_usage.sh DISKMON - Linux live command-line mistakes: exit 2 and one
# line that says what is wrong.
#
#   -d NAME of no disk, -d 0 (a Windows disk number), -d /dev/NAME of no
#   disk, -d a partition's MAJ:MIN: exit 2 and the disks present, as /sys/block lists
#   them; --backend with a bad value: exit 2; -c NAME longer than the 15
#   characters Linux keeps of a process name: exit 2, naming the 15 to use.
#   These need no root: -d and -c are
#   checked before tracefs or perf is touched. (`-d /dev/NAME` of a real disk
#   working like `-d NAME` is checked live in linux_tracefs.sh.)
set -u

DISKMON=${1:?usage: linux_usage.sh DISKMON}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The disks, independently of diskmon: /sys/block, sorted, space-separated.
disks=$(ls /sys/block | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')

check() { # WANT-IN-MESSAGE ARGS...
    local want=$1 err rc lines
    shift
    err=$(timeout 10 "$DISKMON" "$@" -t 0.1 2>&1 >/dev/null)
    rc=$?
    lines=$(printf '%s\n' "$err" | grep -c .)
    [ "$rc" = 2 ] || { fail "diskmon $*: exit $rc, want 2: $err"; return; }
    [ "$lines" = 1 ] || { fail "diskmon $*: $lines lines on stderr, want 1: $err"; return; }
    case $err in *"$want"*) ;; *) fail "diskmon $*: message lacks \"$want\": $err"; return ;; esac
    echo "ok: diskmon $*: exit 2: $err"
}

check "-d no_such_disk: no such block device; the disks here are: $disks" -d no_such_disk
check "-d 0: on Linux give a device name" -d 0
check "the disks here are: $disks" -d 0
check "-d /dev/no_such_disk: no such block device; the disks here are: $disks" \
    -d /dev/no_such_disk
part=$(ls /sys/class/block | while read -r b; do
    [ -e "/sys/class/block/$b/partition" ] && echo "$b" && break; done)
if [ -n "$part" ]; then
    # By name a partition is accepted (linux_partitions.sh); by number not.
    mm=$(cat "/sys/class/block/$part/dev")
    check "-d $mm: is a partition's number: give the partition by name" -d "$mm"
else
    echo "skipped: no partition on this machine for the -d PARTITION case"
fi
check "bad backend 'nope'" --backend nope
# -c longer than a Linux comm (TASK_COMM_LEN 16 with its NUL: 15 characters)
# could never match: refused, naming the 15 to use. 15 is accepted, and a
# trailing .exe (which -c ignores) does not count.
check "-c longprocessname-dd: Linux keeps only the first 15 characters of a process name and this one has 18, so nothing would match; use -c longprocessname" \
    -c longprocessname-dd
check "-c abcdefghijklmnop: Linux keeps only the first 15" -c dd,abcdefghijklmnop
for ok in abcdefghijklmno abcdefghijklmno.exe; do
    err=$(timeout 10 "$DISKMON" -c "$ok" -d /dev/no_such_disk -t 0.1 2>&1 >/dev/null)
    case $err in
    *"Linux keeps only"*) fail "diskmon -c $ok (15 characters) was refused: $err" ;;
    *) echo "ok: diskmon -c $ok: not refused" ;;
    esac
done

[ "$fails" = 0 ] || exit 1
echo "linux_usage: passed"
