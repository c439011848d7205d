# rq_classes.awk - the requests a disk completed, by class, from bpftrace's
# lines "C RWBS SECTOR NR_SECTOR" (block_rq_complete) and "S RWBS SECTOR
# NR_SECTOR" (block_io_start), in time order. Prints
# "read N write N flush N discard N".
#
# The class is the rwbs op letter (blk_fill_rwbs in kernel/trace/blktrace.c:
# R read, W write, D discard or secure erase, F flush; N and anything else
# are not counted). Two kinds of zero-length write completion are not data
# writes (block/blk-flush.c):
#  - a write that asked for a flush sequence (PREFLUSH or FUA, with data)
#    on a device without FUA completes twice: its data, then, after the
#    post-flush, once more with no data left. The second is the same
#    request, not another;
#  - an empty PREFLUSH write (how a file system asks for a flush,
#    blkdev_issue_flush) completes once with no data: a flush request.
$1 == "S" {
    # A flush sequence with data: a leading F (PREFLUSH) or an F after the
    # op letter (FUA).
    if ($4 > 0 && (substr($2, 1, 1) == "F" || index(substr($2, 2), "F") > 0))
        seq[$3]++
    next
}
$1 == "C" {
    op = substr($2, 1, 1)
    if (op == "R") n["read"]++
    else if (op == "D") n["discard"]++
    else if (op == "F") n["flush"]++
    else if (op == "W") {
        if ($4 > 0) n["write"]++
        else if (seq[$3] > 0) seq[$3]--
        else n["flush"]++
    }
}
END {
    printf "read %d write %d flush %d discard %d\n",
        n["read"], n["write"], n["flush"], n["discard"]
}
