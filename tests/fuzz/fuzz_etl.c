/*
 * fuzz_etl.c - libFuzzer target: the .etl reader (src/etl/etl.h). Opens
 * the input with dm_etl_open_mem and reads every record, touching every
 * payload byte; every failure must say why. The reader's memory budget
 * (DM_ETL_BUDGET_BYTES) keeps any input within libFuzzer's RSS limit.
 * Built and run by tests/fuzz/run.sh; good seeds are the first buffers of
 * a sample trace and small generated traces (tests/fuzz/corpus/etl).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "diskmon.h"
#include "etl/etl.h"
#include "etl_cost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dm_etl *etl;
    struct dm_etl_record rec;
    char err[512];
    volatile uint8_t sink = 0;
    int rc;

    if (fuzz_etl_too_costly(data, size) ||
        dm_etl_open_mem(&etl, data, size, "fuzz.etl", err, sizeof err) != 0)
        return 0;
    (void)dm_etl_info(etl);
    while ((rc = dm_etl_next(etl, &rec, err, sizeof err)) == 1) {
        uint8_t x = 0;

        for (size_t i = 0; i < rec.payload_len; i++)
            x ^= rec.payload[i];
        sink ^= x;
        if (rec.pointer_size != 4 && rec.pointer_size != 8)
            abort();
    }
    if (rc < 0 && err[0] == '\0')
        abort(); /* every failure must say why */
    (void)dm_etl_bytes_done(etl);
    (void)dm_etl_skipped(etl);
    dm_etl_close(etl);
    (void)sink;
    return 0;
}
