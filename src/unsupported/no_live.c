/*
 * no_live.c - the live source of a build without a live backend (an OS
 * diskmon has none for, or -DDM_LIVE=OFF): none. Replay still works;
 * main.c says so when live capture is asked for. Filed beside the live
 * sources (etw/, linux/), as htop's unsupported/ platform. With no live
 * source there is nothing for --self-test (selftest/selftest.h) to test.
 */
#include "diskmon.h"
#include "output/text.h"
#include "selftest/selftest.h"

const struct dm_source_ops *const dm_live_source = NULL;

int dm_selftest(const struct dm_options *opt, const struct dm_source_ops *ops, FILE *out)
{
    (void)opt;
    (void)ops;
    dm_writef(out, "FAIL live source: this build has no live capture, and --self-test "
                   "needs one (replay a trace with -r FILE.etl)\n");
    return 1;
}
