/*
 * no_live.c - the live source of a build without a live backend (an OS
 * diskmon has none for, or -DDM_LIVE=OFF): none. Replay still works;
 * main.c says so when live capture is asked for. Filed beside the live
 * sources (etw/, linux/), as htop's unsupported/ platform.
 */
#include "diskmon.h"

const struct dm_source_ops *const dm_live_source = NULL;
