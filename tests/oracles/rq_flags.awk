# rq_flags.awk - how many of the requests a disk completed carried PREFLUSH
# and FUA, from bpftrace's lines "C RWBS SECTOR NR_SECTOR" (block_rq_complete)
# and "S RWBS SECTOR NR_SECTOR" (block_io_start), in time order. Prints
# "preflush N fua N".
#
# The requests counted are rq_classes.awk's (the same lines in, the same
# rule for the second, empty completion of a flush sequence). A request's
# flags are those of its start, what the submitter asked for (docs/output.md,
# "Request flags"): the oldest start at the completion's sector not yet
# taken. A flush request of the block layer's own (op F) never passes
# block_io_start; its rwbs is the same at block_rq_issue and at completion
# ("FF": REQ_OP_FLUSH | REQ_PREFLUSH, block/blk-flush.c), so its own is
# used. The letters (blk_fill_rwbs in kernel/trace/blktrace.c): a leading F
# before the op letter is PREFLUSH, an F after the op letter is FUA.
function preflush(rwbs) {
    return substr(rwbs, 1, 1) == "F" && length(rwbs) > 1 &&
        index("WDFRN", substr(rwbs, 2, 1)) > 0
}
function fua(rwbs,   rest) {
    rest = preflush(rwbs) ? substr(rwbs, 3) : substr(rwbs, 2)
    return index(rest, "F") > 0
}
function count(rwbs) {
    if (preflush(rwbs)) n_preflush++
    if (fua(rwbs)) n_fua++
}
# The oldest start at sector s not yet taken, or "" when there is none.
function take(s,   h, r) {
    h = head[s] + 0
    if (h >= tail[s] + 0) return ""
    r = starts[s, h]
    delete starts[s, h]
    head[s] = h + 1
    return r
}
$1 == "S" {
    t = tail[$3] + 0
    starts[$3, t] = $2
    tail[$3] = t + 1
    if ($4 > 0 && (preflush($2) || fua($2)))
        seq[$3]++
    next
}
$1 == "C" {
    op = substr($2, 1, 1)
    if (op == "F") { count($2); next }
    if (op == "W" && $4 == 0 && seq[$3] > 0) { seq[$3]--; next }
    if (op != "R" && op != "W" && op != "D") next
    count(take($3))
}
END { printf "preflush %d fua %d\n", n_preflush, n_fua }
