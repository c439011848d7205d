/*
 * nt_kernel_sysconfig.c - the volumes of a traced machine from the
 * kernel's SysConfig records: VolumeMapping (an NT device prefix and its
 * drive, so that file names read as C:\...), and LogDisk, so that each
 * request names the volume ("C:") it falls in.
 *
 * LogDisk: the NT Kernel Logger writes its configuration (EventTraceConfig,
 * HookId group 0x0B) when the session ends: LogDisk (EventType 12) is one
 * record per partition with a file system, giving its disk number, its
 * byte range on that disk and its drive letter. Because those come at the end of the
 * trace, replay takes them in its naming pass (dm_kdecode_rundown), before
 * any request is decoded; the forward pass meets the same records again
 * and adds nothing new.
 *
 * The payload (Microsoft Learn, "SystemConfig_LogDisk class"; the same
 * first fields in the V0 class): StartOffset u64 at 0 (bytes from the
 * disk's start), PartitionSize u64 at 8, DiskNumber u32 at 16, Size u32 at
 * 20, DriveType u32 at 24, DriveLetterString char16[4] at 28 ("C:"), then
 * padding, cluster counts and the file system name, which diskmon does not
 * use. A record shorter than 36 bytes is malformed; one without a drive
 * letter names nothing (its requests stay the whole disk's).
 *
 * PhyDisk (EventType 11, written with LogDisk at the session's end) is one
 * record per disk, giving its size for the offset map's rows (views/
 * offmap.h). The payload (Microsoft Learn, "SystemConfig_PhyDisk class"):
 * DiskNumber u32 at 0, BytesPerSector u32 at 4, SectorsPerTrack u32 at 8,
 * TracksPerCylinder u32 at 12, Cylinders u64 at 16, then SCSI numbers, the
 * manufacturer's name, the partition count and the write cache; 568
 * bytes in the win8 sample, whose PerfView baseline lists the same values
 * (512 x 63 x 255 x 16,578). The product is the size of the geometry the
 * disk reports (DISK_GEOMETRY; Microsoft Learn, "DISK_GEOMETRY
 * structure"), which counts whole cylinders only: a disk may be a little
 * larger (the win8 sample's last partition ends 3.3 MiB past the product).
 * So the size is the product, or the end of the disk's last LogDisk
 * partition where that lies further. Both are taken in the naming pass
 * only: the forward pass changes nothing another thread may read.
 */
#include <string.h>

#include "base/bytes.h"
#include "decode/nt_paths.h"
#include "decode/nt_kernel_state.h"

/* SysConfig {9b79ee91-b5fd-41c0-a243-4248e266e9d0} opcode 35 VolumeMapping:
 * NtPath and DosPath, two NUL-terminated UTF-16 strings. Opcode and GUID
 * from PerfView KernelTraceEventParser.cs (SysConfigTaskGuid,
 * "VolumeMapping"); the layout was checked on the win8 sample, where e.g.
 * DataLen 58 = "\Device\HarddiskVolume2\" (25 units with NUL) + "C:\" (4). */
#define SYSCONFIG_VOLUME_MAPPING 35

#define LOGDISK_START_OFFSET 0
#define LOGDISK_PARTITION_SIZE 8
#define LOGDISK_DISK_NUMBER 16
#define LOGDISK_DRIVE_LETTER 28
#define LOGDISK_DRIVE_LETTER_UNITS 4 /* Max(4) */
#define LOGDISK_MIN_BYTES (LOGDISK_DRIVE_LETTER + 2 * LOGDISK_DRIVE_LETTER_UNITS)

#define PHYDISK_DISK_NUMBER 0
#define PHYDISK_BYTES_PER_SECTOR 4
#define PHYDISK_SECTORS_PER_TRACK 8
#define PHYDISK_TRACKS_PER_CYLINDER 12
#define PHYDISK_CYLINDERS 16
#define PHYDISK_MIN_BYTES 24

/* The size entry of disk, a new one if there is room; NULL if not. */
static struct dm_kdisk_size *disk_size_of(struct dm_kdecoder *kd, uint32_t disk)
{
    struct dm_kdisk_size *d;

    for (int i = 0; i < kd->n_disk_sizes; i++)
        if (kd->disk_sizes[i].disk == disk)
            return &kd->disk_sizes[i];
    if (kd->n_disk_sizes == DM_KDISK_SIZES_MAX)
        return NULL;
    d = &kd->disk_sizes[kd->n_disk_sizes++];
    d->disk = disk;
    d->geometry = d->partitions_end = 0;
    return d;
}

/* a x b, or 0 when it does not fit in 64 bits (a size no disk has). */
static uint64_t times(uint64_t a, uint64_t b)
{
    return b != 0 && a > UINT64_MAX / b ? 0 : a * b;
}

static int on_phydisk(struct dm_kdecoder *kd, const struct dm_krecord *rec, enum pass pass)
{
    const uint8_t *b = rec->payload;
    struct dm_kdisk_size *d;

    if (rec->payload_len < PHYDISK_MIN_BYTES)
        return malformed(kd, pass);
    if (pass != PASS_RUNDOWN || (d = disk_size_of(kd, dm_le32(b + PHYDISK_DISK_NUMBER))) == NULL)
        return 0;
    d->geometry = times(times(times(dm_le32(b + PHYDISK_BYTES_PER_SECTOR),
                                    dm_le32(b + PHYDISK_SECTORS_PER_TRACK)),
                              dm_le32(b + PHYDISK_TRACKS_PER_CYLINDER)),
                        dm_le64(b + PHYDISK_CYLINDERS));
    return 0;
}

uint64_t dm_kdecoder_disk_size(const struct dm_kdecoder *kd, uint32_t disk, const char **from)
{
    for (int i = 0; i < kd->n_disk_sizes; i++) {
        const struct dm_kdisk_size *d = &kd->disk_sizes[i];

        if (d->disk != disk || d->geometry == 0)
            continue;
        if (from != NULL)
            *from = d->partitions_end > d->geometry
                        ? "the end of the last partition in the trace's LogDisk records"
                        : "the disk geometry in the trace's PhyDisk record";
        return d->partitions_end > d->geometry ? d->partitions_end : d->geometry;
    }
    return 0;
}

int dm_kdecoder__on_sysconfig_disk(struct dm_kdecoder *kd, struct names *nm,
                                   const struct dm_krecord *rec, enum pass pass)
{
    const uint8_t *b = rec->payload;
    char letter[3 * LOGDISK_DRIVE_LETTER_UNITS + 1];
    struct dm_kdisk_size *d;
    uint64_t end;
    size_t units;
    int terminated;

    (void)nm; /* SysConfig names volumes, not threads or files */
    if (rec->opcode == DM_SYSCONFIG_PHYDISK)
        return on_phydisk(kd, rec, pass);
    if (rec->opcode != DM_SYSCONFIG_LOGDISK)
        return 0;
    if (rec->payload_len < LOGDISK_MIN_BYTES)
        return malformed(kd, pass);
    end = dm_le64(b + LOGDISK_START_OFFSET) + dm_le64(b + LOGDISK_PARTITION_SIZE);
    if (pass == PASS_RUNDOWN && end >= dm_le64(b + LOGDISK_START_OFFSET) &&
        (d = disk_size_of(kd, dm_le32(b + LOGDISK_DISK_NUMBER))) != NULL &&
        end > d->partitions_end)
        d->partitions_end = end;
    units = dm_utf16_units(b + LOGDISK_DRIVE_LETTER, 2 * LOGDISK_DRIVE_LETTER_UNITS,
                           &terminated);
    if (units == 0)
        return 0;
    dm_utf16_to_utf8(b + LOGDISK_DRIVE_LETTER, units, letter);
    /* A full map (DM_PARTMAP_MAX extents, or no memory) keeps the first
     * volumes; their requests are named, the later ones' stay the whole
     * disk's. */
    (void)dm_partmap_add(&kd->disk_volumes, dm_le32(b + LOGDISK_DISK_NUMBER),
                         dm_le64(b + LOGDISK_START_OFFSET),
                         dm_le64(b + LOGDISK_PARTITION_SIZE), letter);
    return 0;
}

int dm_kdecoder_add_disk_volume(struct dm_kdecoder *kd, uint32_t disk, uint64_t first,
                                uint64_t bytes, const char *name)
{
    return dm_partmap_add(&kd->disk_volumes, disk, first, bytes, name);
}

/* SysConfig VolumeMapping: NtPath, DosPath (see SYSCONFIG_VOLUME_MAPPING). */
int dm_kdecoder__on_volume_mapping(struct dm_kdecoder *kd, struct names *nm,
                                   const struct dm_krecord *rec, enum pass pass)
{
    const uint8_t *b = rec->payload;
    size_t len = rec->payload_len, nt_units, dos_units;
    char nt[DM_VOLUME_NT_MAX * 3], dos[DM_VOLUME_DOS_MAX * 3];
    int terminated;

    (void)nm; /* SysConfig names volumes, not threads or files */
    if (rec->opcode != SYSCONFIG_VOLUME_MAPPING)
        return 0;
    nt_units = dm_utf16_units(b, len, &terminated);
    if (!terminated)
        return malformed(kd, pass);
    dos_units = dm_utf16_units(b + 2 * (nt_units + 1), len - 2 * (nt_units + 1),
                            &terminated);
    if (nt_units >= DM_VOLUME_NT_MAX || dos_units >= DM_VOLUME_DOS_MAX)
        return 0; /* longer than any real device prefix: ignore */
    dm_utf16_to_utf8(b, nt_units, nt);
    dm_utf16_to_utf8(b + 2 * (nt_units + 1), dos_units, dos);
    /* A full table keeps the first mappings. */
    (void)dm_volumes_add(&kd->volumes, nt, dos);
    return 0;
}
