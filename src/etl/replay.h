/*
 * replay.h - how replay hands .etl records to the NT kernel decoder.
 *
 * The replay source (dm_replay_source, diskmon.h) is the user; the tests and
 * the callback benchmark, which feed the samples' records to the decoder
 * themselves, describe them the same way through dm_etl_krecord().
 */
#ifndef DM_REPLAY_H
#define DM_REPLAY_H

#include "decode/nt_kernel.h"
#include "etl/etl.h"

/*
 * The dm_krecord for an .etl record: GUID-named records (FULL_HEADER,
 * EVENT_HEADER) are classed by GUID, system headers by HookId group. The
 * payload pointer is rec's (valid until the reader's next record); a caller
 * that keeps records copies the payload and points kr->payload at the copy.
 */
void dm_etl_krecord(const struct dm_etl_record *rec, struct dm_krecord *kr);

#endif /* DM_REPLAY_H */
