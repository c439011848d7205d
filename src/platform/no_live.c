/*
 * no_live.c - the live source of an OS diskmon has no backend for: none.
 * Replay still works; main.c says so when live capture is asked for.
 */
#include "diskmon.h"

const struct dm_source_ops *const dm_live_source = NULL;
