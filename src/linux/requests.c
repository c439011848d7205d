/*
 * requests.c - block samples into completed requests (rules in requests.h
 * and pairing.h), and the end-of-run loss report.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "linux/requests.h"
#include "linux/tracefs.h"

#define NS_PER_SEC 1000000000ull
#define SECTOR_BYTES 512u          /* tracepoint sectors: always 512 bytes */
#define PAIR_SLOTS 16384u          /* at most 1 MiB: 12288 open requests */
/* A start still open this long before the end of the capture had its
 * completion lost: the reader reads every CPU at least every 100 ms, and
 * the pairing table already waits 2 s for a late start (pairing.c). */
#define OPEN_GRACE_NS (2 * NS_PER_SEC)
/*
 * A completion without its start may be a request that was in flight when
 * the capture began, but only so long: SCSI disks (SD_TIMEOUT in
 * drivers/scsi/sd.h) and NVMe (nvme_core's io_timeout parameter) time a
 * command out after 30 s by default, and the pairing gives up on a start
 * at that age too (DEFAULT_START_TTL_NS, pairing.c). A start-less
 * completion more than this after the capture began lost its start: it is
 * counted as lost (one whose device timed it out and retried it is the
 * rare exception, on a device that is failing anyway).
 */
#define BEFORE_CAPTURE_MAX_NS (30 * NS_PER_SEC)

int dm_requests_init(struct dm_requests *r, int legacy, int queue, uint64_t t0)
{
    memset(r, 0, sizeof *r);
    r->legacy = legacy;
    r->queue = queue;
    r->t0 = t0;
    if (dm_pairing_init(&r->pairs, PAIR_SLOTS) != 0 || dm_cgroups_init(&r->cgroups) != 0 ||
        dm_task_cgroups_init(&r->tasks) != 0) {
        dm_requests_free(r);
        return DM_ENOMEM;
    }
    dm_requests_set_t0(r, t0);
    return 0;
}

void dm_requests_set_t0(struct dm_requests *r, uint64_t t0)
{
    r->t0 = t0;
    /* Until then a completion without a start may belong to a request
     * issued before the capture: not a loss. */
    r->pairs.grace_until_ns = t0 + BEFORE_CAPTURE_MAX_NS;
}

void dm_requests_free(struct dm_requests *r)
{
    dm_pairing_free(&r->pairs);
    dm_cgroups_free(&r->cgroups);
    dm_task_cgroups_free(&r->tasks);
}

/* The device's counters; a shared overflow slot past DM_REQ_MAX_DEVS. */
static struct dm_req_dev *dev_of(struct dm_requests *r, uint32_t dev)
{
    for (int i = 0; i < r->n_devs; i++)
        if (r->devs[i].dev == dev)
            return &r->devs[i];
    if (r->n_devs == DM_REQ_MAX_DEVS)
        return &r->devs[DM_REQ_MAX_DEVS - 1];
    r->devs[r->n_devs].dev = dev;
    return &r->devs[r->n_devs++];
}

static void make_event(struct dm_requests *r, const struct dm_pair_entry *start,
                       uint64_t done_ns, uint64_t sector, uint32_t nr_sector,
                       struct dm_event *ev)
{
    uint64_t bytes = (uint64_t)nr_sector * SECTOR_BYTES;
    size_t n = 0;

    ev->time_ns = done_ns > r->t0 ? done_ns - r->t0 : 0;
    ev->duration_ns = done_ns > start->time_ns ? done_ns - start->time_ns : 0;
    ev->flags = DM_EV_HAS_PID | DM_EV_HAS_TID;
    ev->queue_ns = 0;
    if (r->queue && start->issue_ns != 0) {
        ev->queue_ns = start->issue_ns > start->time_ns ? start->issue_ns - start->time_ns
                                                        : 0;
        ev->flags |= DM_EV_HAS_QUEUE;
    }
    /* Flush keys are normalised to UINT64_MAX in legacy mode: no offset. */
    ev->byte_offset = sector == UINT64_MAX ? 0 : sector * SECTOR_BYTES;
    /* A discard can exceed 4 GiB; the field is 32-bit. */
    ev->transfer_size = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
    ev->disk = start->dev;
    ev->disk_name = "";
    ev->irp = 0;
    ev->irp_flags = 0;
    ev->file = "";
    ev->partition = "";
    /* Where the issuer was at the start (start_cgroup). */
    ev->cgroup = dm_cgroup_name(&r->cgroups, start->cgroup);
    ev->pid = start->pid;
    ev->tid = start->tid;
    ev->request = start->request;
    /* The flags are the start's: what the submitter asked for. The
     * completion's rwbs can only have lost some (on a device without FUA
     * the flush machinery sends a PREFLUSH|FUA write on as a plain write
     * between two flush requests: docs/linux.md §7), and a flush request
     * starts at block_rq_issue with its own rwbs. */
    ev->req_flags = start->rq_flags;
    ev->priority = 0;
    dm_event_no_lens(ev);
    if (start->has_comm) {
        while (n < sizeof start->comm && start->comm[n] != '\0')
            n++;
        memcpy(r->process, start->comm, n);
    }
    r->process[n] = '\0';
    ev->process = r->process;
    if (n > 0)
        ev->flags |= DM_EV_HAS_PROCESS;
}

/* The comm of a process for tracepoints without a comm field (old kernels):
 * /proc/PID/comm. Only on that path: one read per start. */
static void proc_comm(uint32_t pid, char *comm, size_t cap)
{
    char path[32], buf[64];
    size_t n;

    snprintf(path, sizeof path, "/proc/%u/comm", (unsigned)pid);
    memset(comm, 0, cap);
    if (dm_read_text(path, buf, sizeof buf) < 0)
        return;
    n = strcspn(buf, "\n");
    /* comm is NUL-padded to cap, like the tracepoint field. */
    memcpy(comm, buf, n < cap ? n : cap);
}

/* The cgroup of a process the tracking has not seen (it was running
 * before the capture, or its fork came from a thread): read from /proc
 * once, then followed. 0 when it is gone already. */
static uint16_t followed(struct dm_requests *r, uint32_t pid, const char *comm)
{
    uint16_t name;

    if (dm_task_lookup(&r->tasks, pid, &name) && name != 0)
        return name;
    name = dm_cgroup_index_of(&r->cgroups, pid, comm);
    if (name != 0)
        dm_task_move(&r->tasks, pid, name);
    return name;
}

/* The issuer's cgroup when the request started (enum dm_cgroup_source). */
static uint16_t start_cgroup(struct dm_requests *r, const struct dm_blk_sample *smp,
                             const char *comm)
{
    switch (r->cg_source) {
    case DM_CGROUPS_NONE:
        return 0;
    case DM_CGROUPS_SAMPLE:
        return smp->cgroup;
    case DM_CGROUPS_TRACK:
        return followed(r, smp->pid, comm);
    default:
        return dm_cgroup_index_of(&r->cgroups, smp->pid, comm);
    }
}

static void start_entry(struct dm_requests *r, const struct dm_blk_sample *smp,
                        uint64_t sector, struct dm_pair_entry *e)
{
    memset(e, 0, sizeof *e);
    e->dev = smp->dev;
    e->sector = sector;
    e->time_ns = smp->time_ns;
    e->pid = smp->pid;
    e->tid = smp->tid;
    e->nr_sector = smp->nr_sector;
    e->request = smp->request;
    e->rq_flags = smp->rq_flags;
    e->has_comm = 1;
    if (smp->has_comm)
        memcpy(e->comm, smp->comm, sizeof e->comm);
    else
        proc_comm(smp->pid, e->comm, sizeof e->comm);
    e->cgroup = start_cgroup(r, smp, e->comm);
}

/* A start: stored, or matched with a completion seen first. */
static int add_start(struct dm_requests *r, const struct dm_pair_entry *e,
                     struct dm_event *ev)
{
    struct dm_pair_entry other;
    int rc = dm_pairing_start(&r->pairs, e, &other);
    struct dm_req_dev *d;

    if (rc != DM_PAIR_STORED && rc != DM_PAIR_MATCHED)
        return 0;
    d = dev_of(r, e->dev);
    d->starts++;
    if (rc != DM_PAIR_MATCHED)
        return 0;
    d->matched++;
    make_event(r, e, other.time_ns, e->sector, other.nr_sector, ev);
    return 1;
}

int dm_requests_feed(struct dm_requests *r, const struct dm_blk_sample *smp,
                     struct dm_event *ev)
{
    struct dm_pair_entry e, other;
    /* A flush-op request is the flush machinery's own (block/blk-flush.c):
     * it is issued at sector 0 and completes at sector -1 (seen on 6.18),
     * so flush-op keys are made equal. */
    uint64_t sector = smp->op == 'F' ? UINT64_MAX : smp->sector;

    switch (smp->kind) {
    case DM_BLK_IO_START:
    case DM_BLK_RQ_INSERT:
        if (smp->request == DM_BLK_REQ_OTHER)
            return 0;
        start_entry(r, smp, sector, &e);
        return add_start(r, &e, ev);
    case DM_BLK_RQ_ISSUE:
        if (smp->request == DM_BLK_REQ_OTHER)
            return 0;
        if (!r->legacy && smp->op != 'F') {
            /* --queue: the dispatch time of a request block_io_start saw. */
            if (r->queue)
                dm_pairing_issue(&r->pairs, smp->dev, sector, smp->time_ns);
            return 0;
        }
        /* Modern mode: a flush request never passes block_io_start, so its
         * dispatch is its start (docs/linux.md §7). Legacy: every request
         * starts here, unless it was inserted earlier (--queue) or this is
         * a requeue. */
        if (r->legacy && dm_pairing_issue(&r->pairs, smp->dev, sector, smp->time_ns))
            return 0;
        /* --queue: the flush request dispatched for an empty flush also
         * gives that flush (waiting at sector 0) its dispatch time. */
        if (!r->legacy && r->queue)
            dm_pairing_issue(&r->pairs, smp->dev, smp->sector, smp->time_ns);
        start_entry(r, smp, sector, &e);
        /* A flush request's time in the queue is not known (no insert). */
        e.issue_ns = r->legacy ? smp->time_ns : 0;
        return add_start(r, &e, ev);
    case DM_BLK_RQ_COMPLETE:
        if (smp->request == DM_BLK_REQ_OTHER)
            return 0;
        memset(&e, 0, sizeof e);
        e.dev = smp->dev;
        e.sector = sector;
        e.time_ns = smp->time_ns;
        e.nr_sector = smp->nr_sector;
        /* An empty non-flush completion may have no start of its own: the
         * second completion of a write with a flush sequence, or (legacy)
         * the never-issued request behind an empty flush. */
        e.quiet = smp->nr_sector == 0 && smp->op != 'F';
        /* After the starts are off, a completion without its start is of
         * a request that started after the capture: not parked. */
        if (dm_pairing_done(&r->pairs, &e,
                            r->starts_off_ns == 0 || smp->time_ns < r->starts_off_ns,
                            &other) != DM_PAIR_MATCHED)
            return 0;
        dev_of(r, smp->dev)->matched++;
        make_event(r, &other, smp->time_ns, sector, smp->nr_sector, ev);
        return 1;
    case DM_BLK_RQ_MERGE:
        if (dm_pairing_merge(&r->pairs, smp->dev, sector, smp->time_ns))
            dev_of(r, smp->dev)->merged++;
        return 0;
    case DM_BLK_TASK_FORK: {
        /* The parent's comm is not carried: the /proc cache keys it by
         * an empty one. */
        static const char no_comm[DM_CGROUP_COMM];

        dm_task_fork(&r->tasks, smp->child_pid, followed(r, smp->pid, no_comm));
        return 0;
    }
    case DM_BLK_TASK_MOVE:
        dm_task_move(&r->tasks, smp->pid, smp->cgroup);
        return 0;
    case DM_BLK_BIO_FRONTMERGE:
        /* The bio [sector, sector + nr) joined the front of the request
         * that began at sector + nr. */
        dm_pairing_move(&r->pairs, smp->dev, smp->sector + smp->nr_sector,
                        smp->sector, smp->time_ns);
        return 0;
    default:
        return 0;
    }
}

void dm_requests_expire(struct dm_requests *r, uint64_t now_ns)
{
    dm_pairing_expire(&r->pairs, now_ns);
}

void dm_requests_starts_off(struct dm_requests *r, uint64_t now_ns)
{
    r->starts_off_ns = now_ns;
}

/* A start still open at now_ns that the end takes for a request in flight
 * (less than the grace old), not for one whose completion never came. */
static int open_young(const struct dm_pair_entry *e, uint64_t now_ns)
{
    return e->state == DM_PAIR_START && e->time_ns + OPEN_GRACE_NS > now_ns;
}

int dm_requests_open_young(const struct dm_requests *r, uint64_t now_ns)
{
    for (uint32_t i = 0; i <= r->pairs.mask; i++)
        if (open_young(&r->pairs.slots[i], now_ns))
            return 1;
    return 0;
}

void dm_requests_finish(struct dm_requests *r, uint64_t end_ns)
{
    for (uint32_t i = 0; i <= r->pairs.mask; i++) {
        const struct dm_pair_entry *e = &r->pairs.slots[i];

        if (open_young(e, end_ns))
            dev_of(r, e->dev)->open_young++;
    }
    dm_pairing_finish(&r->pairs);
}

/* Append ", N what" to line when n is not zero (what: "one|many"). */
static void part(char *line, size_t cap, int *parts, uint64_t n, const char *what)
{
    size_t len = strlen(line);
    const char *bar = strchr(what, '|');
    int one_len = (int)(bar - what);

    if (n == 0 || len >= cap)
        return;
    if (n == 1)
        snprintf(line + len, cap - len, "%s1 %.*s", *parts ? ", " : "", one_len, what);
    else
        snprintf(line + len, cap - len, "%s%" PRIu64 " %s", *parts ? ", " : "", n, bar + 1);
    (*parts)++;
}

uint64_t dm_requests_report(const struct dm_requests *r, const struct dm_blk_losses *l,
                            struct dm_blk_names *names, char *why, size_t whylen,
                            struct dm_notes *notes)
{
    const struct dm_pair_counts *c = &r->pairs.counts;
    uint64_t young = 0, never_done, never_started, kernel, unmatched, lost;
    int parts = 0;

    for (int i = 0; i < r->n_devs; i++)
        young += r->devs[i].open_young;
    kernel = l->kernel_dropped + l->kernel_overrun + l->undelivered;
    /* Starts still open at the end, but not recently: their completion is
     * not coming. A completion without its start early in the capture is
     * normally a request that started before it, and a start open at the
     * very end one still in flight; once the kernel has dropped events,
     * either may as well be a request that lost its other half. */
    never_done = c->expired_starts + (c->in_flight > young ? c->in_flight - young : 0);
    never_started = c->expired_dones;
    if (kernel > 0) {
        never_done += young;
        never_started += c->early_dones;
    }
    unmatched = never_done + never_started;
    /* The kernel counts events, not requests. A request that lost one half
     * shows up once in each count; one that lost both halves (a full
     * buffer drops everything for a while) costs two dropped events and
     * leaves nothing unmatched. So the requests lost are the unmatched ones
     * plus half of the dropped events left over. */
    lost = unmatched + (kernel > unmatched ? (kernel - unmatched + 1) / 2 : 0) + c->full;
    if (whylen > 0)
        why[0] = '\0';
    if (lost == 0)
        return 0;

    snprintf(why, whylen, "block tracepoints via %s: ", l->backend);
    part(why, whylen, &parts, l->kernel_dropped,
         "event dropped by the kernel with its buffer full|"
         "events dropped by the kernel with its buffer full");
    part(why, whylen, &parts, l->kernel_overrun,
         "event overwritten in the kernel's buffer|"
         "events overwritten in the kernel's buffer");
    part(why, whylen, &parts, l->undelivered,
         "event counted by the kernel but never delivered|"
         "events counted by the kernel but never delivered");
    part(why, whylen, &parts, never_done, "request whose completion never came|"
         "requests whose completion never came");
    part(why, whylen, &parts, never_started, "completion whose start never came|"
         "completions whose start never came");
    part(why, whylen, &parts, c->full, "dropped with the pairing table full|"
         "dropped with the pairing table full");

    /* A full buffer explains itself in the loss line; a disk whose
     * completions did not arrive while nothing was dropped needs saying. */
    for (int i = 0; i < r->n_devs && l->kernel_dropped + l->kernel_overrun == 0; i++) {
        const struct dm_req_dev *d = &r->devs[i];
        /* Requests still open at the end count as missing only when the
         * kernel says it did not deliver samples: then they are the likely
         * ones, however short the capture. */
        uint64_t want = d->starts - d->merged - (l->undelivered > 0 ? 0 : d->open_young);
        uint64_t missing = want > d->matched ? want - d->matched : 0;

        /* "A large share": a fifth or more of the device's requests. */
        if (missing == 0 || missing * 5 < want)
            continue;
        dm_note(notes,
                "diskmon: %s: %" PRIu64 " of its %" PRIu64 " requests never showed a "
                "completion: the kernel did not deliver them to diskmon (%s)%s%s%s\n",
                dm_blk_name(names, d->dev), missing, want, l->backend,
                l->other != NULL ? "; try --backend " : "",
                l->other != NULL ? l->other : "",
                l->other != NULL ? ", or watch a loop device, which is not affected"
                                 : "");
    }
    return lost;
}
