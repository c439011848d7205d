/*
 * tally.h - requests and bytes per name (process image names, file paths)
 * for the report's top tables, in a table of fixed size: the first
 * DM_TALLY_NAMES distinct keys are counted exactly, the requests of
 * later new keys are summed apart (and the report says so), so memory
 * stays the same whatever the run's length.
 *
 * A key is a name (dm_tally_add: file paths), or an id with its name
 * (dm_tally_add_id: a process id and its image name), found by a hash of
 * the id alone: most requests then cost a multiplication and a compare of
 * a short name, not a hash of the whole name. A reused id with another
 * name is another key. dm_tally_top adds up the keys of one name, so the
 * tables are by name either way.
 */
#ifndef DM_TALLY_H
#define DM_TALLY_H

#include <stddef.h>
#include <stdint.h>

#define DM_TALLY_NAMES 4096u

struct dm_tally_entry {
    uint64_t requests;
    uint64_t bytes;
    uint32_t hash;
    uint32_t len;                /* of name */
    uint32_t id;                 /* dm_tally_add_id's id */
    int used;
    char *name;                  /* in the tally's name store */
};

struct dm_tally {
    struct dm_tally_entry *table; /* 2 * DM_TALLY_NAMES slots */
    char *store;                 /* the names, name_max bytes each */
    size_t name_max;
    uint32_t used;
    uint64_t other_requests;     /* names that found the table full */
    uint64_t other_bytes;
};

/* name_max: the longest name with its NUL (longer ones are cut). 0, or -1
 * when out of memory. */
int dm_tally_init(struct dm_tally *t, size_t name_max);
void dm_tally_free(struct dm_tally *t);

void dm_tally_add(struct dm_tally *t, const char *name, uint64_t bytes);
/* The key (id, name); a tally takes one kind of key, this or the above. */
void dm_tally_add_id(struct dm_tally *t, uint32_t id, const char *name, uint64_t bytes);

/* The n names with the most bytes (then requests, then name), the keys of
 * one name added up, into out (room for n; their names point into the
 * tally); returns how many there are. */
size_t dm_tally_top(const struct dm_tally *t, struct dm_tally_entry *out, size_t n);

#endif /* DM_TALLY_H */
