#!/bin/bash
# linux_inputs.sh DISKMON - a Linux live capture written as json, read back
# (docs/replay.md: capture now, look later).
#
# On a loop device, dd writes W blocks and reads R blocks with O_DIRECT
# (one request each); diskmon captures the device with -f json -o. Read
# back with -r, -s's Count per request and --top --by process's rows must
# give dd's own counts (its "N+0 records" lines) and bytes, under dd's
# name; the same capture through a pipe (-r -) gives the same lines as the
# file. Needs root (loop devices, tracefs/perf); otherwise prints
# "SKIP: why" and exits 77, except under CI=true, where that is a failure.
set -u

DISKMON=${1:?usage: linux_inputs.sh DISKMON}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"

make_loop 64M inputs

out=$work/cap.jsonl err=$work/cap.err
"$DISKMON" -d "$name" -f json -o "$out" 2>"$err" &
dm=$!
bg="$bg $dm"
wait_started "$dm" "$err" test -e "$out"
sleep 0.5
# dd's own counts: "N+0 records out/in" on its stderr.
dd if=/dev/zero of="$loop" bs=64k count=24 oflag=direct 2>"$work/dd_w" ||
    fail "dd write failed: $(cat "$work/dd_w")"
dd if="$loop" of=/dev/null bs=16k count=40 iflag=direct 2>"$work/dd_r" ||
    fail "dd read failed: $(cat "$work/dd_r")"
sleep 1
interrupt "$dm"
[ "$rc" = 0 ] || fail "capture exit code $rc: $(cat "$err")"
writes=$(sed -n 's/^\([0-9]*\)+0 records out$/\1/p' "$work/dd_w")
reads=$(sed -n 's/^\([0-9]*\)+0 records in$/\1/p' "$work/dd_r")
[ "$writes" = 24 ] && [ "$reads" = 40 ] || fail "dd counted $writes writes and $reads reads"

# -s of the capture read back, dd's rows only (udev may probe the device
# after dd closed it).
"$DISKMON" -r "$out" -c dd -s >/dev/null 2>"$work/s" || fail "replay -s: $(cat "$work/s")"
got_w=$(awk -v d="$name" '$1 == d && $2 == "Write" { print $3 " " $4 }' "$work/s")
got_r=$(awk -v d="$name" '$1 == d && $2 == "Read" { print $3 " " $4 }' "$work/s")
[ "$got_w" = "$writes $((writes * 65536))" ] ||
    fail "-s Write on $name: '$got_w', dd: $writes writes of 65536 bytes; $(cat "$work/s")"
[ "$got_r" = "$reads $((reads * 16384))" ] ||
    fail "-s Read on $name: '$got_r', dd: $reads reads of 16384 bytes; $(cat "$work/s")"
echo "ok: -s of the capture read back: $writes writes, $reads reads on $name, as dd counted"

# --top --by process, summed over its intervals: dd by name, dd's counts.
"$DISKMON" -r "$out" --top 1 --by process -f json >"$work/top" 2>"$work/top.err" ||
    fail "replay --top: $(cat "$work/top.err")"
python3 - "$work/top" "$reads" "$writes" <<'PY' || fail "--top rows: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
dd = [r for r in rows if r.get("process") == "dd"]
got = [sum(r[k] for r in dd) for k in ("reads", "writes", "read_bytes", "write_bytes")]
want = [int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[2]) * 16384, int(sys.argv[3]) * 65536]
print(f"--top --by process, dd summed: {got}, dd counted {want}")
sys.exit(0 if got == want and dd and all(r.get("pid") for r in dd) else 1)
PY
echo "ok: --top --by process of the capture names dd with its counts"

# The same capture through a pipe: the same lines as from the file.
"$DISKMON" -r "$out" -f json >"$work/again" 2>/dev/null || fail "replay of the file failed"
"$DISKMON" -r - -f json <"$out" >"$work/piped" 2>/dev/null || fail "replay through stdin failed"
cmp -s "$out" "$work/again" || fail "json -> -r -> json is not the same bytes"
cmp -s "$out" "$work/piped" || fail "-r - gives other lines than -r FILE"
echo "ok: the capture reads back byte for byte, from the file and through a pipe"
