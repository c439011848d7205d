#!/bin/bash
# capture_pages.sh OUTDIR SUBBUF_KB TAG [GAPS] - how tests/data/ftrace_* were
# made.
#
# Not a test: run by hand, as root, on a kernel with block_io_start (6.5+).
# Makes a private tracefs instance, records block_io_start and
# block_rq_complete (trace_clock mono, sub-buffers of SUBBUF_KB KiB) while
# dd writes 40 x 4 KiB with O_DIRECT to a file on / and sync runs, stops
# tracing, saves the instance's `trace` text (the kernel's own rendering,
# the oracle), then reads each CPU's trace_pipe_raw whole sub-buffers into
# OUTDIR/ftrace_TAG_cpuN.raw. With GAPS=1 the writes come in three bursts
# 0.3 s apart, so the pages hold time extends (deltas over 2^27 ns). The
# formats and header files go along, so the
# tests decode the pages exactly as diskmon would on that kernel.
set -eu
out=${1:?usage: capture_pages.sh OUTDIR SUBBUF_KB TAG}
kb=${2:?}
tag=${3:?}
gaps=${4:-0}
t=/sys/kernel/tracing
i=$t/instances/diskmon-capture-$$
mkdir "$i"
trap 'echo 0 > "$i/tracing_on"; rmdir "$i"; rm -f /root/.diskmon_capture' EXIT
echo mono >"$i/trace_clock"
echo 0 >"$i/options/overwrite"
echo "$kb" >"$i/buffer_subbuf_size_kb"
echo 1 >"$i/events/block/block_io_start/enable"
echo 1 >"$i/events/block/block_rq_complete/enable"
if [ "$gaps" = 1 ]; then
    for burst in 0 1 2; do
        dd if=/dev/zero of=/root/.diskmon_capture bs=4k count=8 seek=$((burst * 8)) \
            oflag=direct conv=notrunc status=none
        sleep 0.3
    done
else
    dd if=/dev/zero of=/root/.diskmon_capture bs=4k count=40 oflag=direct status=none
fi
sync /root/.diskmon_capture
sleep 0.2
echo 0 >"$i/tracing_on"
cat "$i/trace" >"$out/ftrace_${tag}.trace"
for c in "$i"/per_cpu/cpu*; do
    n=${c##*/cpu}
    dd if="$c/trace_pipe_raw" of="$out/ftrace_${tag}_cpu$n.raw" bs="$((kb * 1024))" \
        iflag=nonblock status=none 2>/dev/null || true
done
cp $t/events/header_page "$out/ftrace_header_page"
cp $t/events/header_event "$out/ftrace_header_event"
for e in block_io_start block_rq_complete; do
    cp "$t/events/block/$e/format" "$out/ftrace_format_$e"
done
