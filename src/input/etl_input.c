/*
 * etl_input.c - .etl traces as an input format: recognised by the trace
 * header record right after the first buffer's header (etl/etl.h,
 * dm_etl_sniff) and read by the replay source (etl/replay.c), which reads
 * the file twice and so needs a file, not a stream.
 */
#include "etl/etl.h"
#include "input/input.h"

static int etl_sniff(const char *head, size_t len)
{
    return dm_etl_sniff(head, len);
}

const struct dm_input_format dm_etl_input = {
    .name = "etl",
    .what = "Windows event traces (.etl)",
    .sniff = etl_sniff,
    .source = &dm_replay_source,
};
