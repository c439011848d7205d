/*
 * nt_kernel_file.c - the FileIo name records (nt_kernel.h): which file a
 * FILE_OBJECT address names, as a DOS path where a volume mapping
 * (nt_kernel_sysconfig.c) is known.
 */
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "decode/ktable.h"
#include "decode/nt_kernel.h"
#include "decode/nt_kernel_state.h"
#include "decode/nt_paths.h"

/* Opcodes of the FileIo class (docs/etw.md §2). */
#define FILEIO_NAME 0
#define FILEIO_FILECREATE 32
#define FILEIO_FILEDELETE 35
#define FILEIO_FILERUNDOWN 36

/*
 * FileIo_Name (Name 0, FileCreate 32, FileDelete 35, FileRundown 36):
 * FileObject 0 (ptr), then the NT path as NUL-terminated UTF-16 at P.
 * A FileObject is the address of a kernel FILE_OBJECT, which is reused
 * once the object is freed; Microsoft's FileIo_Name page matches it to
 * DiskIo's FileObject, and its FileIo class page says FileRundown
 * "enumerates all open files on the computer at the end of the trace
 * session" (they are still open then).
 *
 * Forward (what a live session sees, in time order): Name, FileCreate and
 * FileRundown name the object from then on; FileDelete ends the mapping:
 * the object is gone, and a later object at the same address is another
 * file. (PerfView, which works on whole files, keeps the deleted name in
 * force after FileDelete: its HistoryDictionary adds every FileIo_Name
 * record from its time onward.)
 *
 * Rundown (replay's first pass): FileDelete and FileRundown describe the
 * name an object had before them (PerfView's isRundown: opcodes 35, 36).
 * The first such record of an address names the first object that lived
 * there: every request on that address up to the record's time (until)
 * gets it, unless the forward table names it. Later objects at the same
 * address were created during the trace and are named forward by their
 * FileCreate; a request of theirs after the first record's time never gets
 * the first object's name. PerfView, too, applies a rundown name backwards
 * only when nothing named the address before (HistoryDictionary.Add,
 * isEndRundown), but from time 0 and without the end. We take the first
 * FileDelete/FileRundown even after a FileCreate of the same address: the
 * win8 sample reads a directory through its new file object 0.12 ms before
 * that object's FileCreate is logged (the create's own I/O).
 * [docs/etw.md §2; MS fileio-name, fileio; PerfView
 * KernelTraceEventParser.cs FileIONameTraceData callback, HistoryDictionary.cs]
 */
static int store_name(struct dm_kdecoder *kd, struct names *nm,
                      const struct dm_krecord *rec, uint64_t file_object,
                      size_t ps, enum pass pass);

int dm_kdecoder__on_fileio(struct dm_kdecoder *kd, struct names *nm,
                           const struct dm_krecord *rec, enum pass pass)
{
    const uint8_t *b = rec->payload;
    size_t len = rec->payload_len, ps = rec->pointer_size, s;
    uint64_t file_object;

    if (rec->opcode != FILEIO_FILEDELETE && rec->opcode != FILEIO_FILERUNDOWN &&
        rec->opcode != FILEIO_NAME && rec->opcode != FILEIO_FILECREATE)
        return 0;
    if (len < ps)
        return malformed(kd, pass);
    file_object = dm_le_ptr(b, (unsigned)ps);
    if (pass == PASS_FORWARD && rec->opcode == FILEIO_FILEDELETE) {
        s = dm_kt_find(&nm->files, file_object);
        if (s != DM_KT_NONE) {
            free(file_at(&nm->files, s)->name);
            dm_kt_remove(&nm->files, s);
        }
        return 0;
    }
    if (pass == PASS_RUNDOWN) {
        int first;

        /* What the forward table will hold from here (nt_kernel_need.c). */
        if (rec->opcode == FILEIO_NAME || rec->opcode == FILEIO_FILECREATE) {
            dm_kdecoder__need_named(kd, file_object, 1);
            return 0;
        }
        /* Settle the entries on probation the pass has left behind, before
         * a new entry's slot is taken (settling removes entries, which
         * moves slots). When they are settled does not matter to the names
         * (a request marks an entry on probation only within its time),
         * only to the list's length. */
        dm_kdecoder__need_at(kd, rec->timestamp);
        first = dm_kt_find(&nm->files, file_object) == DM_KT_NONE &&
                !dm_kdecoder__need_is_dead(kd, file_object);
        if (first)
            store_name(kd, nm, rec, file_object, ps, PASS_RUNDOWN);
        dm_kdecoder__need_named(kd, file_object, rec->opcode == FILEIO_FILERUNDOWN);
        return 0; /* only the first end-of-life record names: see above */
    }
    return store_name(kd, nm, rec, file_object, ps, PASS_FORWARD);
}

/* Store the name of rec (a FileIo_Name record of file_object) in nm's file
 * table. Returns 0. */
static int store_name(struct dm_kdecoder *kd, struct names *nm,
                      const struct dm_krecord *rec, uint64_t file_object,
                      size_t ps, enum pass pass)
{
    const uint8_t *b = rec->payload;
    size_t len = rec->payload_len, units, n, s;
    const uint8_t *name;
    struct file_slot *f;
    int terminated, cut, had_entry;
    uint8_t mapped = 0;
    char *copy;

    units = dm_utf16_units(b + ps, len - ps, &terminated);
    if (units == 0)
        return 0;
    name = b + ps;
    cut = 0;
    if (units > DM_NAME_UNITS_MAX) { /* cannot happen in a 64 KB record */
        name += 2 * (units - DM_NAME_UNITS_MAX);
        units = DM_NAME_UNITS_MAX;
        cut = 1;
    }
    n = dm_utf16_to_utf8(name, units, kd->scratch);
    cut |= dm_volumes_store_path(&kd->volumes, kd->path, DM_FILE_MAX, kd->scratch, n,
                                 &mapped);
    n = strlen(kd->path);
    copy = malloc(n + 1);
    s = dm_kt_claim(&nm->files, file_object, ++kd->clock, &had_entry);
    f = file_at(&nm->files, s);
    if (had_entry)
        free(f->name);
    if (copy == NULL) {
        /* Out of memory: the object goes unnamed, as when its entry is
         * replaced; its requests are still shown. */
        dm_kt_remove(&nm->files, s);
        return 0;
    }
    memcpy(copy, kd->path, n + 1);
    f->name = copy;
    f->name_len = (uint16_t)n;
    f->until = rec->timestamp;
    f->cut = (uint8_t)cut;
    f->mapped = mapped;
    f->volumes_generation = kd->volumes.generation;
    f->needed = 1;
    if (pass == PASS_RUNDOWN)
        dm_kdecoder__need_first_end(kd, file_object, rec->timestamp, f);
    return 0;
}
