/*
 * nt_paths.h - the NT kernel's strings (FileIo names, SysConfig volume
 * mappings): UTF-16LE out of untrusted record bytes into UTF-8, and NT
 * device paths into DOS paths.
 *
 * A short table of NT-prefix -> DOS-prefix pairs ("\Device\HarddiskVolume2"
 * -> "C:") turns \Device\HarddiskVolume2\x into C:\x; the longest matching
 * prefix wins, compared without regard to ASCII case. A path too long for
 * its buffer keeps its end (the file name matters more than the volume),
 * cut at a UTF-8 character boundary. No allocation; single-threaded.
 */
#ifndef DM_NT_PATHS_H
#define DM_NT_PATHS_H

#include <stddef.h>
#include <stdint.h>

/* FileIo and SysConfig strings are UTF-16 inside a record whose size field
 * is 16 bits (docs/etw.md §4: Packet.Size, EVENT_HEADER size), so a name
 * has fewer than 32768 code units. Each unit needs at most 3 bytes of UTF-8
 * (a surrogate pair, 2 units, needs 4). */
#define DM_NAME_UNITS_MAX 32768u

/* Volume mappings: the samples carry 9; a machine rarely has more than 26
 * drive letters plus a few redirectors. */
#define DM_VOLUME_MAX 64
#define DM_VOLUME_NT_MAX 256  /* bytes of an NT prefix, UTF-8 */
#define DM_VOLUME_DOS_MAX 128

struct dm_volume {
    char nt[DM_VOLUME_NT_MAX];   /* without trailing backslash */
    char dos[DM_VOLUME_DOS_MAX]; /* without trailing backslash */
    size_t nt_len, dos_len;
};

struct dm_volumes {
    struct dm_volume v[DM_VOLUME_MAX];
    int n;
    /* Changes by dm_volumes_add so far: a path stored at the same
     * generation would be translated the same way again. */
    uint32_t generation;
};

/* Number of UTF-16 code units of the string at b[0..len): up to the NUL
 * unit or the end of the bytes. *terminated tells which. */
size_t dm_utf16_units(const uint8_t *b, size_t len, int *terminated);

/* UTF-16LE (units code units at b) to UTF-8 in dst, which has room for
 * 3 * units + 1 bytes. Unpaired surrogates become U+FFFD. Returns the
 * length without the NUL that it appends. */
size_t dm_utf16_to_utf8(const uint8_t *b, size_t units, char *dst);

/* Add or replace the mapping of nt_prefix to dos_prefix (a trailing
 * backslash on either is ignored; an empty DOS prefix is ignored). Returns
 * 0, DM_EUSAGE (empty or too long) or DM_ENOMEM (table full). */
int dm_volumes_add(struct dm_volumes *vols, const char *nt_prefix, const char *dos_prefix);

/* Copy path (len bytes) into dst[cap], translated to a DOS path when a
 * volume matches. *mapped says whether one did; returns 1 if cut. */
int dm_volumes_store_path(const struct dm_volumes *vols, char *dst, size_t cap,
                          const char *path, size_t len, uint8_t *mapped);

#endif /* DM_NT_PATHS_H */
