/*
 * replay_naming.h - replay's naming pass (replay.c's first pass) on two
 * threads: one reads and merges the trace, the other feeds the records it
 * picked to dm_kdecode_rundown, in the same order.
 */
#ifndef DM_REPLAY_NAMING_H
#define DM_REPLAY_NAMING_H

#include "decode/nt_kernel.h"
#include "etl/etl.h"

/* The decoder's class of an .etl record (replay.c keeps a cache of them). */
typedef enum dm_kclass dm_replay_classify(void *ctx, const struct dm_etl_record *rec);

/*
 * Feed every record the naming selection picks (the classes and opcodes
 * dm_kdecode_rundown takes), in the reader's merge order, to
 * dm_kdecode_rundown(kd). etl has its selection set and is at its start;
 * it is read on a thread of its own while the calling thread decodes, so
 * etl (and classify with its ctx, which runs on the reading thread) must
 * not be used elsewhere until this returns; the calling thread alone
 * touches kd. Where no thread can be started the pass runs on the calling
 * thread alone, with the same result. Returns the reader's last result: 0
 * at the end of the trace, DM_ESTOPPED when dm_etl_on_buffer's function
 * asked to stop, another negative dm_err (the message is dropped: the
 * decoding pass meets the same damage and reports it).
 */
int dm_replay_naming(struct dm_etl *etl, struct dm_kdecoder *kd,
                     dm_replay_classify *classify, void *ctx);

#endif /* DM_REPLAY_NAMING_H */
