/*
 * spillway-hdd-model: a FUSE file system serving one disk image whose every request takes the time a
 * 7200 rpm hard disk would take (issue 21).
 *
 * Why: the emulated `hdd` profile was a cgroup blkio IOPS/bandwidth cap, which has no mechanics: sequential
 * small reads were as slow as random ones and large random reads as fast as sequential ones. Here a loop
 * device sits on the served file (losetup --direct-io=on), a filesystem on the loop device, and the model
 * delays each request as a drive would.
 *
 * What it models (times from CLOCK_MONOTONIC; the image's data goes to the host at once, only the reply waits):
 *   - geometry: the image is the start of a drive of --capacity bytes (default: the image's size, i.e. the
 *     image spans the whole stroke). Constant linear density: the transfer rate is proportional to the
 *     radius, from --outer-rate at offset 0 to --inner-rate at the end, so the radius of byte offset x is
 *     r(x)/r_outer = sqrt(1 - (x/capacity) * (1 - (inner/outer)^2)). Data is one spiral: its angle is the
 *     fractional part of the (continuous) track number, tracks being evenly spaced in radius.
 *   - seek: 0 within a track, else t(n) = track_seek + (full_seek - track_seek) * sqrt((n-1)/(N-1)) for n of
 *     N tracks; full_seek is chosen so that the average over seek lengths weighted as the datasheets weight
 *     them (uniformly random start and end cylinders: weight N+1-n) equals the datasheet's average seek:
 *     E[sqrt(d)] = 8/15 for d the distance of two uniform points, so full = track + (average - track) * 15/8.
 *     Reads and writes have their own average and single-track figures.
 *   - rotation: the platter's angle is (now / revolution) mod 1; after overhead and seek the head waits until
 *     the target sector comes round.
 *   - transfer: bytes / the rate at the request's radius; the host link (--interface-rate) for buffer hits.
 *   - command overhead: --overhead-ms before a media access, --hit-overhead-ms for a buffer or cache hit.
 *   - read-ahead buffer: after a read the head keeps reading at the media rate while the drive is idle, up to
 *     --readahead bytes past what the host has taken (a hit moves that window on); a read inside the buffer is
 *     a hit, a read anywhere in the window continues the stream and waits only for the stream to reach its
 *     end (no seek, no rotation; the pieces of one large request arrive in any order).
 *   - segments: the buffer keeps what the last --segments - 1 streams read; a read inside one is a hit. When
 *     a read resumes a stream the drive had (it starts inside or at the end of a kept segment), the drive
 *     reads on --min-prefetch bytes before taking other work, so interleaved sequential readers each find
 *     their next requests in their segment (adaptive prefetch; a random read gets none).
 *   - write cache (write-back, --write-cache bytes): a write is acknowledged once in the cache; dirty
 *     extents (merged when adjacent) are destaged when the drive is idle (no read pending) and at least
 *     --destage-min bytes are dirty or no command has been outstanding for --destage-idle; when the cache is full a
 *     write waits for space and destaging goes before reads. A flush (fsync) waits for the cache to drain.
 *     --write-cache 0 makes writes go to the platter like reads.
 *   - queueing: every request pending at the drive (several with queue depth > 1: this server is
 *     multithreaded and the kernel sends concurrent direct I/O) is a candidate; the drive serves the one with
 *     the shortest positioning time (overhead + seek + rotational wait) first, except that one waiting
 *     longer than --max-wait is served first (starvation guard, as drives age their queues).
 *   - --reply-early-us (+ --reply-early-us-per-mib x size): the reply leaves this long before the modelled
 *     completion, to hide the cost of the kernel path (loop device, FUSE round trip, copies) measured on the
 *     host; the drive's own timeline is not changed by it.
 *
 * The host side (not timing, but what keeps the host's own latency out of a request): the server reads 2 MiB
 * ahead of a sequential reader from the image (8 segments, 16 MiB, on huge pages; replies are sent straight from
 * them) and writes in the background (at most 16 MiB and 1024 writes pending, in arrival order, gathered 1 MiB or
 * 2 ms at a time; reads wait for pending writes they overlap; fsync drains them). Memory: about 64 MiB at most with the buffer pool.
 *
 * Defaults: Western Digital Ultrastar DC HC310 (HUS726T4TALA6L4 class, 3.5" SATA 6 Gb/s, 7200 rpm), "Hard Disk
 * Drive Specifications, Ultrastar DC HC310, Revision 1.4, 18 September 2018", section 4.5.1: average seek
 * (without command overhead, including settling) read 7.4 ms, write 8.2 ms typical; single-track seek read
 * 0.23 ms, write 0.32 ms typical; 7200 rpm, 8.33 ms per revolution, 4.16 ms average latency. The sustained
 * transfer rate (outer diameter) 255 MB/s and the 256 MB buffer are that family's datasheet figures (6 TB);
 * the inner-diameter rate (half the outer one), the command overheads (0.1 ms media access, 0.03 ms cache hit:
 * the order of HGST's "<30 us cache hit" specifications) and the read-ahead size are assumptions: this
 * datasheet does not give them. docs/storage.md, "The mechanical HDD model".
 *
 * Build:  gcc -O2 -Wall -o spillway-hdd-model spillway-hdd-model.c $(pkg-config --cflags --libs fuse3) -lm -lpthread
 * Run:    spillway-hdd-model --image /path/disk.img --mountpoint /path/mnt [options]  (serves mnt/disk)
 *         then: losetup --find --show --direct-io=on /path/mnt/disk
 * Stats:  kill -USR1 <pid> writes --stats FILE (also written at exit): requests, bytes, largest request, hits.
 * --no-model replies as soon as the host I/O is done (to measure the FUSE path's own cost, host read-ahead included).
 */
#define FUSE_USE_VERSION 312
#define _GNU_SOURCE
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define DISK_INO 2
#define DISK_NAME "disk"
#define MAX_REQUEST_BYTES (1u << 20)     /* FUSE max_pages 256 x 4 KiB: the largest request libfuse 3 accepts */
#define MAX_DIRTY_EXTENTS 16384          /* more scattered dirty extents than this count as a full cache */
#define DESTAGE_CHUNK_BYTES (1u << 20)   /* destage in pieces so that a read waits for one piece at most */
#define BUFFER_SPAN_BYTES (16u << 20)    /* read data kept behind a stream: a share of the 256 MB buffer */

typedef int64_t nanos;

struct params {
    const char *image, *mountpoint, *stats_path;
    double rpm, read_seek_avg_ms, read_seek_track_ms, write_seek_avg_ms, write_seek_track_ms;
    double outer_rate, inner_rate, interface_rate;      /* bytes per second */
    double overhead_ms, hit_overhead_ms, destage_idle_ms, max_wait_ms, reply_early_us, reply_early_us_per_mib;
    uint64_t capacity, write_cache, readahead, destage_min, min_prefetch;
    int segments;
    int max_threads, no_model, foreground;
};

enum job_kind { JOB_READ, JOB_WRITE, JOB_FSYNC };

struct job {
    struct job *next;
    fuse_req_t req;
    enum job_kind kind;
    uint64_t offset, size;
    char *buf;               /* read: the data to reply with */
    size_t buffer_size;
    struct segment *pinned;  /* buf lies in this prefetched segment, which stays until the reply */
    nanos arrival, reply_at;
};

/* Derived geometry, filled once from the parameters. */
struct geometry {
    double revolution_s, capacity, rate_ratio_sq_complement, stroke_denominator, tracks;
    double read_full_ms, write_full_ms;
};

static struct params P = {
    .rpm = 7200, .read_seek_avg_ms = 7.4, .read_seek_track_ms = 0.23, .write_seek_avg_ms = 8.2,
    .write_seek_track_ms = 0.32, .outer_rate = 255e6, .inner_rate = 127.5e6, .interface_rate = 600e6,
    .overhead_ms = 0.1, .hit_overhead_ms = 0.03, .destage_idle_ms = 10, .max_wait_ms = 1000, .reply_early_us = 0,
    .write_cache = 256000000,             /* the datasheet's 256 MB */
    .segments = 16, .min_prefetch = 512 * 1024, .readahead = 4ull << 20, .destage_min = 1ull << 20, .max_threads = 64,
};
static struct geometry G;
static int image_fd_direct = -1, image_fd_buffered = -1;
static uint64_t image_size;
static nanos epoch;

/* The drive's state; everything below is guarded by `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static struct job *pending_head, *pending_tail;          /* waiting for the mechanism (FIFO order kept) */
static struct job *space_waiters_head, *space_waiters_tail; /* writes waiting for write-cache space */
static struct job *flush_waiters;
static struct job *done_list;                            /* to reply at reply_at */
static nanos busy_until;                                 /* the mechanism is busy until then */
static nanos drive_thread_deadline = INT64_MIN;          /* when the waiting drive thread wakes by itself; MIN: awake */
static int mechanism_busy;                               /* with a host request (its reply is already scheduled) */
static int in_prefetch;                                  /* busy past the request's end: minimum prefetch */
static nanos prefetch_from, prefetch_until;              /* prefetch_until: a prefetch a continuation cut into */
static uint64_t destage_in_service_offset, destage_in_service_bytes;
static int destage_in_service;
static double head_stroke;                               /* 0 = outer edge, 1 = inner edge */
static int stream_active;                                /* read-ahead streaming from stream_offset */
static uint64_t stream_offset, buffer_low, stream_limit, buffer_high_frozen;
static nanos stream_time;
static nanos last_command_activity;
static struct extent { uint64_t offset, length; } dirty[MAX_DIRTY_EXTENTS];
static int dirty_count;
static uint64_t dirty_bytes;
static volatile sig_atomic_t stats_requested;
static int stopping;

static struct stats {
    uint64_t reads, writes, fsyncs, read_bytes, written_bytes, largest_read, largest_write;
    uint64_t buffer_hits, stream_continuations, cache_absorbed, cache_full_waits, destages, destaged_bytes;
    uint64_t write_throughs, reordered, aged, min_prefetches;
} S;

static nanos now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (nanos)ts.tv_sec * 1000000000 + ts.tv_nsec - epoch;
}

static nanos seconds_to_ns(double s) { return (nanos)llround(s * 1e9); }

/* --- the drive's geometry and mechanics (docs/storage.md gives the same formulas) --- */

static void derive_geometry(void)
{
    double ratio = P.inner_rate / P.outer_rate;
    G.revolution_s = 60.0 / P.rpm;
    G.capacity = (double)P.capacity;
    G.rate_ratio_sq_complement = 1.0 - ratio * ratio;
    G.stroke_denominator = 1.0 - ratio;
    /* Tracks are evenly spaced in radius and hold rate x revolution bytes: capacity = N x mean track. */
    G.tracks = G.capacity / (G.revolution_s * P.outer_rate * (1.0 + ratio) / 2.0);
    if (G.tracks < 2)
        G.tracks = 2;
    G.read_full_ms = P.read_seek_track_ms + (P.read_seek_avg_ms - P.read_seek_track_ms) * 15.0 / 8.0;
    G.write_full_ms = P.write_seek_track_ms + (P.write_seek_avg_ms - P.write_seek_track_ms) * 15.0 / 8.0;
}

static double radius_fraction(uint64_t offset)        /* r / r_outer */
{
    double f = (double)offset / G.capacity;
    if (f > 1)
        f = 1;
    return sqrt(1.0 - f * G.rate_ratio_sq_complement);
}

static double stroke_of(uint64_t offset) { return (1.0 - radius_fraction(offset)) / G.stroke_denominator; }
static double media_rate(uint64_t offset) { return P.outer_rate * radius_fraction(offset); }

static double angle_of(uint64_t offset)               /* in revolutions, [0, 1) */
{
    double track = stroke_of(offset) * G.tracks;
    return track - floor(track);
}

static double seek_seconds(double from_stroke, double to_stroke, int is_write)
{
    double tracks = fabs(to_stroke - from_stroke) * G.tracks;
    double track_ms = is_write ? P.write_seek_track_ms : P.read_seek_track_ms;
    double full_ms = is_write ? G.write_full_ms : G.read_full_ms;
    if (tracks < 0.5)
        return 0;
    if (tracks < 1)
        tracks = 1;
    return (track_ms + (full_ms - track_ms) * sqrt((tracks - 1) / (G.tracks - 1))) / 1e3;
}

/* Seconds from `start` until the head is on `offset`'s sector (overhead + seek + rotational wait). */
static uint64_t media_end_offset = UINT64_MAX;          /* where the last media transfer ended, and when */
static nanos media_end_time;

static double positioning_seconds(nanos start, uint64_t offset, int is_write)
{
    /* Back to back with the transfer that ended there (a destage or write stream): the drive keeps going. */
    if (offset == media_end_offset && start == media_end_time)
        return 0;
    double overhead = P.overhead_ms / 1e3;
    double seek = seek_seconds(head_stroke, stroke_of(offset), is_write);
    double arrive = (double)start / 1e9 + overhead + seek;
    double platter = arrive / G.revolution_s;
    double wait = angle_of(offset) - (platter - floor(platter));
    if (wait < 0)
        wait += 1;
    return overhead + seek + wait * G.revolution_s;
}

/* Where read-ahead has got to by time t (it stops at stream_limit, or when the mechanism took other work). */
static uint64_t buffer_high(nanos t)
{
    if (!stream_active)
        return buffer_high_frozen;
    /* Before stream_time (a read still in transfer) the head has not reached stream_offset yet. */
    double streamed = media_rate(stream_offset) * (double)(t - stream_time) / 1e9;
    double high = (double)stream_offset + streamed;
    if (high < (double)buffer_low)
        return buffer_low;
    return high < (double)stream_limit ? (uint64_t)high : stream_limit;
}

/* The buffer's other segments: what earlier streams read, kept (least recently used goes) so that a reader the
   drive left for another one still finds its data (--segments, the active stream included). */
#define MAX_SEGMENTS 256
static struct kept_segment { uint64_t low, high, used; } kept[MAX_SEGMENTS];
static int kept_count;
static uint64_t kept_clock;

static void keep_segment(uint64_t low, uint64_t high)
{
    if (high <= low || P.segments < 2)
        return;
    int slot = -1;
    for (int i = 0; i < kept_count; i++)
        if (kept[i].low == low) {
            slot = i;                          /* the same stream again: it grew */
            break;
        }
    if (slot < 0 && kept_count < P.segments - 1 && kept_count < MAX_SEGMENTS)
        slot = kept_count++;
    if (slot < 0) {
        slot = 0;
        for (int i = 1; i < kept_count; i++)
            if (kept[i].used < kept[slot].used)
                slot = i;
    }
    kept[slot] = (struct kept_segment){.low = low, .high = high, .used = ++kept_clock};
}

static int kept_segment_hit(uint64_t offset, uint64_t size)
{
    for (int i = 0; i < kept_count; i++)
        if (kept[i].low <= offset && offset + size <= kept[i].high) {
            kept[i].used = ++kept_clock;
            return 1;
        }
    return 0;
}

/* The read starts inside or right at the end of a kept segment: a stream the drive knows comes back. */
static int kept_segment_resumed(uint64_t offset)
{
    for (int i = 0; i < kept_count; i++)
        if (kept[i].low <= offset && offset <= kept[i].high)
            return 1;
    return 0;
}

static void kept_segments_invalidate(uint64_t offset, uint64_t size)
{
    for (int i = 0; i < kept_count;)
        if (kept[i].low < offset + size && offset < kept[i].high)
            kept[i] = kept[--kept_count];
        else
            i++;
}

/* The mechanism takes other work at t: read-ahead stops where it got to, and the head is there. */
static void stop_stream(nanos t)
{
    if (!stream_active)
        return;
    buffer_high_frozen = buffer_high(t);
    head_stroke = stroke_of(buffer_high_frozen);
    stream_active = 0;
    keep_segment(buffer_low, buffer_high_frozen);
}

/* A read the streaming head will reach without repositioning: anywhere from the buffer's start to the end of
   the read-ahead window (the pieces of one large request arrive in any order). */
static int continues_stream(const struct job *job, nanos t)
{
    return job->kind == JOB_READ && stream_active && buffer_high(t) < stream_limit &&
           job->offset >= buffer_low && job->offset <= stream_limit;
}

/* --- the write cache's dirty extents (sorted, adjacent ones merged) --- */

static int dirty_insert(uint64_t offset, uint64_t length)
{
    uint64_t end = offset + length;
    int low = 0, high = dirty_count;
    while (low < high) {                      /* first extent ending at or after offset */
        int mid = (low + high) / 2;
        if (dirty[mid].offset + dirty[mid].length < offset)
            low = mid + 1;
        else
            high = mid;
    }
    int first = low, last = low;              /* [first, last) overlap or touch the new extent */
    while (last < dirty_count && dirty[last].offset <= end)
        last++;
    uint64_t already = 0, new_offset = offset, new_end = end;
    for (int i = first; i < last; i++) {
        uint64_t e = dirty[i].offset + dirty[i].length;
        uint64_t overlap_low = dirty[i].offset > offset ? dirty[i].offset : offset;
        uint64_t overlap_high = e < end ? e : end;
        if (overlap_high > overlap_low)
            already += overlap_high - overlap_low;
        if (dirty[i].offset < new_offset)
            new_offset = dirty[i].offset;
        if (e > new_end)
            new_end = e;
    }
    if (first == last && dirty_count == MAX_DIRTY_EXTENTS)
        return -1;
    int removed = last - first;
    if (removed == 0) {
        memmove(&dirty[first + 1], &dirty[first], (size_t)(dirty_count - first) * sizeof dirty[0]);
        dirty_count++;
    } else if (removed > 1) {
        memmove(&dirty[first + 1], &dirty[last], (size_t)(dirty_count - last) * sizeof dirty[0]);
        dirty_count -= removed - 1;
    }
    dirty[first].offset = new_offset;
    dirty[first].length = new_end - new_offset;
    dirty_bytes += length - already;
    return 0;
}

static int dirty_covers(uint64_t offset, uint64_t length)
{
    for (int i = 0; i < dirty_count; i++)
        if (dirty[i].offset <= offset && offset + length <= dirty[i].offset + dirty[i].length)
            return 1;
    return 0;
}

/* The dirty extent with the shortest positioning time from the head (a window around it when many). */
static int destage_choice(nanos start, double *positioning)
{
    int from = 0, to = dirty_count;
    if (dirty_count > 256) {
        uint64_t head_offset = (uint64_t)((1 - pow(1 - head_stroke * G.stroke_denominator, 2)) /
                                          G.rate_ratio_sq_complement * G.capacity);
        int low = 0, high = dirty_count;
        while (low < high) {
            int mid = (low + high) / 2;
            if (dirty[mid].offset < head_offset)
                low = mid + 1;
            else
                high = mid;
        }
        from = low > 128 ? low - 128 : 0;
        to = from + 256 < dirty_count ? from + 256 : dirty_count;
    }
    int best = -1;
    for (int i = from; i < to; i++) {
        double p = positioning_seconds(start, dirty[i].offset, 1);
        if (best < 0 || p < *positioning) {
            best = i;
            *positioning = p;
        }
    }
    return best;
}

/* --- lists --- */

static void append(struct job **head, struct job **tail, struct job *job)
{
    job->next = NULL;
    if (*tail)
        (*tail)->next = job;
    else
        *head = job;
    *tail = job;
}

static void complete_at(struct job *job, nanos at)
{
    /* The kernel path costs a fixed part and a part per byte (copies): both come off. */
    nanos early = (nanos)((P.reply_early_us + P.reply_early_us_per_mib * (double)job->size / (1 << 20)) * 1e3);
    job->reply_at = at - early > job->arrival ? at - early : job->arrival;
    job->next = done_list;
    done_list = job;
}

/* The host link is one: transfers of buffer and cache hits follow each other on it, so queued hits cannot add up to
   more than --interface-rate (they did, 848 MB/s of 1 MiB cached writes at QD 16 on a 600 MB/s link). The command
   overhead of each hit overlaps other commands' transfers (queued commands are decoded while the link is busy). */
static nanos link_free_at;

static nanos host_transfer_end(nanos t, uint64_t size)
{
    nanos start = t + seconds_to_ns(P.hit_overhead_ms / 1e3);
    if (start < link_free_at)
        start = link_free_at;
    link_free_at = start + seconds_to_ns(size / P.interface_rate);
    return link_free_at;
}

/* Absorb waiting writes while the cache has room (in arrival order). */
static void admit_space_waiters(nanos t)
{
    while (space_waiters_head && dirty_bytes + space_waiters_head->size <= P.write_cache) {
        struct job *job = space_waiters_head;
        if (dirty_insert(job->offset, job->size) < 0)
            break;
        space_waiters_head = job->next;
        if (!space_waiters_head)
            space_waiters_tail = NULL;
        S.cache_absorbed++;
        complete_at(job, host_transfer_end(t, job->size));
    }
}

/* --- arrival: called by the FUSE threads once the host I/O is done --- */

static void reply(struct job *job);

/* The drive's policy for a request arriving at t (lock held): a hit or a cached write gets its completion now, anything
   else waits for the mechanism. Returns the job when its reply is due already. Takes the time as an argument so that
   the unit tests (tests/playbooks/test_hdd_model_policies.py) can drive it on a simulated clock. */
static struct job *arrive_at(struct job *job, nanos t)
{
    job->arrival = t;
    last_command_activity = t;
    int active_hit = 0;
    if (job->kind == JOB_FSYNC) {
        if (dirty_bytes == 0 && !space_waiters_head)
            complete_at(job, t);
        else {
            job->next = flush_waiters;
            flush_waiters = job;
        }
    } else if (job->kind == JOB_READ &&
               ((active_hit = job->offset >= buffer_low && job->offset + job->size <= buffer_high(t)) ||
                kept_segment_hit(job->offset, job->size) ||
                (dirty_count && dirty_covers(job->offset, job->size)))) {
        S.buffer_hits++;
        /* The host takes data out of the streaming segment: read-ahead, still running, may go that much further. */
        if (active_hit && stream_active && buffer_high(t) < stream_limit &&
            job->offset + job->size + P.readahead > stream_limit)
            stream_limit = job->offset + job->size + P.readahead;
        complete_at(job, host_transfer_end(t, job->size));
    } else if (job->kind == JOB_WRITE && P.write_cache) {
        uint64_t high = buffer_high(t);         /* a write over buffered data makes that buffer stale */
        if (job->offset < high && job->offset + job->size > buffer_low) {
            stop_stream(t);
            buffer_low = buffer_high_frozen = 0;
        }
        kept_segments_invalidate(job->offset, job->size);
        if (!space_waiters_head && dirty_bytes + job->size <= P.write_cache &&
            dirty_insert(job->offset, job->size) == 0) {
            S.cache_absorbed++;
            complete_at(job, host_transfer_end(t, job->size));
        } else {
            S.cache_full_waits++;
            append(&space_waiters_head, &space_waiters_tail, job);
        }
    } else {
        append(&pending_head, &pending_tail, job);
    }
    if (done_list == job && job->reply_at <= t) {
        done_list = job->next;
        return job;
    }
    return NULL;
}

static nanos drive_advance_and_next(nanos t);

/* A request whose reply time is known on arrival (a hit, a cached write, or a job the free mechanism takes at once)
   is answered by the thread that received it, sleeping until then: handing it to the drive thread cost two more
   context switches per request (streaming 64 KiB reads: 4 per request, 13 % of a core). The drive thread is woken
   only when it must act sooner than it planned. */
static void arrive(struct job *job)
{
    pthread_mutex_lock(&lock);
    nanos t = now_ns();
    struct job *mine = arrive_at(job, t);
    if (!mine) {
        nanos next = drive_advance_and_next(t);
        for (struct job **link = &done_list; *link; link = &(*link)->next)
            if (*link == job) {
                *link = job->next;
                mine = job;
                break;
            }
        for (struct job *other = done_list; other; other = other->next)
            if (other->reply_at < next)
                next = other->reply_at;
        if (next < drive_thread_deadline)
            pthread_cond_signal(&wake);
    }
    pthread_mutex_unlock(&lock);
    if (mine) {
        if (mine->reply_at > t) {
            nanos absolute = mine->reply_at + epoch;
            struct timespec ts = {.tv_sec = absolute / 1000000000, .tv_nsec = absolute % 1000000000};
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
        }
        reply(mine);
    }
}

/* --- the drive: picks the next job when the mechanism is free --- */

static void start_job(struct job *job, nanos start)
{
    int is_write = job->kind == JOB_WRITE;
    nanos end;
    int continuation = continues_stream(job, start), resumed = 0;
    if (continuation) {
        /* The head is already streaming there: the data is in when the stream reaches the job's end. */
        double rate = media_rate(stream_offset);
        uint64_t job_end = job->offset + job->size;
        /* Signed: a piece behind the stream's front (read already) is due at once. */
        end = stream_time + seconds_to_ns(((double)job_end - (double)stream_offset) / rate);
        if (end < start)
            end = start;
        S.stream_continuations++;
    } else {
        stop_stream(start);
        resumed = job->kind == JOB_READ && kept_segment_resumed(job->offset);
        double positioning = positioning_seconds(start, job->offset, is_write);
        end = start + seconds_to_ns(positioning + job->size / media_rate(job->offset));
        if (is_write)
            S.write_throughs++;
    }
    head_stroke = stroke_of(job->offset + job->size);
    media_end_offset = job->offset + job->size;
    media_end_time = end;
    if (job->kind == JOB_READ && continuation) {
        /* The stream goes on; the buffer keeps what it read (up to the drive's buffer, BUFFER_SPAN_BYTES). */
        uint64_t job_end = job->offset + job->size;
        if (job_end > stream_offset) {
            stream_offset = job_end;
            stream_time = end;
            stream_limit = stream_offset + P.readahead;
        }
        if (stream_offset - buffer_low > BUFFER_SPAN_BYTES)
            buffer_low = stream_offset - BUFFER_SPAN_BYTES;
        head_stroke = stroke_of(stream_offset);
        media_end_offset = stream_offset;
        media_end_time = stream_time;
    } else if (job->kind == JOB_READ) {
        /* Read-ahead starts at the job's end when it completes. */
        stream_active = 1;
        stream_offset = job->offset + job->size;
        stream_time = end;
        buffer_low = job->offset;
        stream_limit = stream_offset + P.readahead;
    } else {
        stream_active = 0;
        buffer_low = buffer_high_frozen = 0;
        kept_segments_invalidate(job->offset, job->size);
    }
    busy_until = end;
    mechanism_busy = 1;
    in_prefetch = 0;
    if (job->kind == JOB_READ && !continuation && resumed && P.min_prefetch) {
        /* A stream the drive had read before came back: it reads on for min_prefetch bytes whatever waits, so
           that interleaved streams each find their next requests in their segment. */
        busy_until = end + seconds_to_ns((double)P.min_prefetch / media_rate(stream_offset));
        in_prefetch = 1;
        prefetch_from = end;
        S.min_prefetches++;
    } else if (continuation && prefetch_until > end) {
        busy_until = prefetch_until;
        in_prefetch = 1;
        prefetch_from = end;
    }
    prefetch_until = 0;
    if (end > last_command_activity)
        last_command_activity = end;
    complete_at(job, end);
}

static void start_destage(nanos start, int index, double positioning)
{
    stop_stream(start);
    in_prefetch = 0;
    prefetch_until = 0;
    uint64_t bytes = dirty[index].length < DESTAGE_CHUNK_BYTES ? dirty[index].length : DESTAGE_CHUNK_BYTES;
    uint64_t offset = dirty[index].offset;
    /* The chunk leaves the list now; its space is freed when it is on the platter. */
    dirty[index].offset += bytes;
    dirty[index].length -= bytes;
    if (dirty[index].length == 0) {
        memmove(&dirty[index], &dirty[index + 1], (size_t)(dirty_count - index - 1) * sizeof dirty[0]);
        dirty_count--;
    }
    busy_until = start + seconds_to_ns(positioning + bytes / media_rate(offset));
    head_stroke = stroke_of(offset + bytes);
    media_end_offset = offset + bytes;
    media_end_time = busy_until;
    destage_in_service = 1;
    destage_in_service_offset = offset;
    destage_in_service_bytes = bytes;
    S.destages++;
    S.destaged_bytes += bytes;
}

/* The pending job with the shortest positioning time; an aged one first. */
static struct job *take_next(nanos start)
{
    struct job *best = NULL, *best_prev = NULL, *prev = NULL;
    double best_positioning = 0;
    nanos max_wait = seconds_to_ns(P.max_wait_ms / 1e3);
    if (pending_head && start - pending_head->arrival > max_wait) {
        best = pending_head;
        S.aged++;
    } else {
        for (struct job *job = pending_head; job; prev = job, job = job->next) {
            double p = continues_stream(job, start) ? 0 : positioning_seconds(start, job->offset, job->kind == JOB_WRITE);
            if (!best || p < best_positioning) {
                best = job;
                best_prev = prev;
                best_positioning = p;
            }
        }
        if (best && best != pending_head)
            S.reordered++;
    }
    if (!best)
        return NULL;
    if (best == pending_head) {
        best_prev = NULL;
    }
    if (best_prev)
        best_prev->next = best->next;
    else
        pending_head = best->next;
    if (pending_tail == best)
        pending_tail = best_prev;
    return best;
}

static void write_stats(void)
{
    if (!P.stats_path)
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", P.stats_path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "{\"reads\": %lu, \"writes\": %lu, \"fsyncs\": %lu, \"read_bytes\": %lu, \"written_bytes\": %lu, "
               "\"largest_read_bytes\": %lu, \"largest_write_bytes\": %lu, \"buffer_hits\": %lu, "
               "\"stream_continuations\": %lu, \"cache_absorbed\": %lu, \"cache_full_waits\": %lu, "
               "\"destages\": %lu, \"destaged_bytes\": %lu, \"write_throughs\": %lu, \"reordered\": %lu, "
               "\"aged\": %lu, \"min_prefetches\": %lu, \"dirty_bytes\": %lu}\n",
            S.reads, S.writes, S.fsyncs, S.read_bytes, S.written_bytes, S.largest_read, S.largest_write,
            S.buffer_hits, S.stream_continuations, S.cache_absorbed, S.cache_full_waits, S.destages,
            S.destaged_bytes, S.write_throughs, S.reordered, S.aged, S.min_prefetches, dirty_bytes);
    fclose(f);
    rename(tmp, P.stats_path);
}

/* Aligned buffers are kept for reuse by power-of-two size class (4 KiB .. 1 MiB): allocating and faulting in
   a fresh 1 MiB buffer per request cost more CPU than the request's copies. As many as the write-behind queue can
   hold (16 MiB) are kept: with 16 per class, streaming 64 KiB writes faulted one fresh page in per write. */
#define BUFFER_CLASSES 9
#define BUFFERS_KEPT_PER_CLASS 256
#define BUFFERS_KEPT_BYTES (32u << 20)  /* over all classes */
static pthread_mutex_t buffer_lock = PTHREAD_MUTEX_INITIALIZER;
static void *buffers_kept[BUFFER_CLASSES][BUFFERS_KEPT_PER_CLASS];
static int buffers_kept_count[BUFFER_CLASSES];
static size_t buffers_kept_bytes;

static int buffer_class(size_t size)
{
    int class = 0;
    while (class < BUFFER_CLASSES - 1 && ((size_t)4096 << class) < size)
        class++;
    return ((size_t)4096 << class) >= size ? class : -1;
}

static char *aligned_buffer(size_t size)
{
    int class = buffer_class(size);
    void *buf = NULL;
    if (class >= 0) {
        pthread_mutex_lock(&buffer_lock);
        if (buffers_kept_count[class]) {
            buf = buffers_kept[class][--buffers_kept_count[class]];
            buffers_kept_bytes -= (size_t)4096 << class;
        }
        pthread_mutex_unlock(&buffer_lock);
        if (buf)
            return buf;
        size = (size_t)4096 << class;
    }
    if (posix_memalign(&buf, 4096, size ? size : 4096) != 0)
        return NULL;
    return buf;
}

static void release_buffer(char *buf, size_t size)
{
    if (!buf)
        return;
    int class = buffer_class(size);
    if (class >= 0) {
        pthread_mutex_lock(&buffer_lock);
        if (buffers_kept_count[class] < BUFFERS_KEPT_PER_CLASS &&
            buffers_kept_bytes + ((size_t)4096 << class) <= BUFFERS_KEPT_BYTES) {
            buffers_kept[class][buffers_kept_count[class]++] = buf;
            buffers_kept_bytes += (size_t)4096 << class;
            buf = NULL;
        }
        pthread_mutex_unlock(&buffer_lock);
    }
    free(buf);
}

static void prefetch_unpin(struct segment *seg);

static void reply(struct job *job)
{
    if (job->kind == JOB_READ)
        fuse_reply_buf(job->req, job->buf, job->size);
    else if (job->kind == JOB_WRITE)
        fuse_reply_write(job->req, job->size);
    else
        fuse_reply_err(job->req, 0);
    if (job->pinned)
        prefetch_unpin(job->pinned);
    else
        release_buffer(job->buf, job->buffer_size);
    free(job);
}

/* The mechanism at time t (lock held): a job or destage that ended frees it, flushes whose cache drained complete,
   and the next work starts (a destage, or the pending job the queueing policy picks). No clock of its own: the drive
   thread passes the time, the unit tests a simulated one. */
static void drive_advance(nanos t)
{
    /* A minimum prefetch is the stream itself: a request continuing it need not wait for its end. */
    if (in_prefetch && busy_until > t && t >= prefetch_from) {
        for (struct job *job = pending_head; job; job = job->next)
            if (continues_stream(job, t)) {
                prefetch_until = busy_until;   /* the prefetch goes on after the continuation */
                busy_until = t;
                break;
            }
    }
    if (busy_until > t)
        return;
    int just_freed = mechanism_busy || destage_in_service;
    mechanism_busy = 0;
    in_prefetch = 0;
    if (destage_in_service) {
        dirty_bytes -= destage_in_service_bytes;
        destage_in_service = 0;
        admit_space_waiters(busy_until);
    }
    if (dirty_bytes == 0 && !space_waiters_head) {
        while (flush_waiters) {
            struct job *job = flush_waiters;
            flush_waiters = job->next;
            complete_at(job, t);
        }
    }
    /* The next work starts when the mechanism became free if it was busy (the wake-up's lateness is
       not the drive's), else now. */
    nanos start = just_freed ? busy_until : t;
    int cache_pressing = space_waiters_head || flush_waiters || dirty_bytes > P.write_cache / 10 * 9;
    int destage_wanted = dirty_count > 0 &&
                         (cache_pressing || dirty_bytes >= P.destage_min ||
                          t - last_command_activity >= seconds_to_ns(P.destage_idle_ms / 1e3));
    if (destage_wanted && (cache_pressing || !pending_head)) {
        double positioning = 0;
        int index = destage_choice(start, &positioning);
        if (index >= 0)
            start_destage(start, index, positioning);
    } else if (pending_head) {
        struct job *job = take_next(start);
        start_job(job, start > job->arrival ? start : job->arrival);
    }
}

/* When the mechanism next needs drive_advance, seen at t (lock held): t for work it can start now, the end of
   the current job or destage, the moment an idle cache starts destaging, or INT64_MAX (nothing to do). */
static nanos drive_next_event(nanos t)
{
    /* The end of a job matters only to work waiting for the mechanism; with none, the next arrival frees it
       (drive_advance then starts that arrival's job as it would have). */
    if (destage_in_service || (mechanism_busy && (pending_head || dirty_count || flush_waiters || space_waiters_head)))
        return busy_until;
    if (mechanism_busy)
        return INT64_MAX;
    if (pending_head || (dirty_count && dirty_bytes >= P.destage_min))
        return t;
    if (dirty_count) {
        nanos idle_at = last_command_activity + seconds_to_ns(P.destage_idle_ms / 1e3);
        return idle_at > t ? idle_at : t;
    }
    return INT64_MAX;
}

static nanos drive_advance_and_next(nanos t)
{
    drive_advance(t);
    return drive_next_event(t);
}

static void *drive_thread(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    while (!stopping) {
        nanos t = now_ns();
        drive_advance(t);
        /* Reply to what is due, outside the lock. */
        struct job *due = NULL, **link = &done_list;
        nanos next_reply = INT64_MAX;
        while (*link) {
            struct job *job = *link;
            if (job->reply_at <= t) {
                *link = job->next;
                job->next = due;
                due = job;
            } else {
                if (job->reply_at < next_reply)
                    next_reply = job->reply_at;
                link = &job->next;
            }
        }
        if (due) {
            pthread_mutex_unlock(&lock);
            while (due) {
                struct job *next = due->next;
                reply(due);
                due = next;
            }
            pthread_mutex_lock(&lock);
            continue;
        }
        if (stats_requested) {
            stats_requested = 0;
            write_stats();
        }
        /* Sleep until the mechanism frees, a reply is due, an idle destage may start, or 100 ms. */
        nanos until = t + 100000000, next_event = drive_next_event(t);
        if (next_event <= t && !mechanism_busy && !destage_in_service)
            continue;
        if (next_event < until)
            until = next_event;
        if (next_reply < until)
            until = next_reply;
        nanos absolute = until + epoch;
        struct timespec ts = {.tv_sec = absolute / 1000000000, .tv_nsec = absolute % 1000000000};
        drive_thread_deadline = until;
        pthread_cond_timedwait(&wake, &lock, &ts);
        drive_thread_deadline = INT64_MIN;
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* --- FUSE operations: one directory with one file --- */

static void disk_attr(struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = DISK_INO;
    st->st_mode = S_IFREG | 0600;
    st->st_nlink = 1;
    st->st_size = (off_t)image_size;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)(image_size / 512);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->max_write = MAX_REQUEST_BYTES;
    conn->max_readahead = 0;
    /* Direct I/O from the loop device arrives as background requests: allow a deep queue (QD 32 and more). */
    conn->max_background = 128;
    conn->congestion_threshold = 96;
    if (conn->capable & FUSE_CAP_ASYNC_DIO)
        conn->want |= FUSE_CAP_ASYNC_DIO;
    conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_WRITEBACK_CACHE);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (parent != FUSE_ROOT_ID || strcmp(name, DISK_NAME) != 0) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct fuse_entry_param entry = {.ino = DISK_INO, .attr_timeout = 3600, .entry_timeout = 3600};
    disk_attr(&entry.attr);
    fuse_reply_entry(req, &entry);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    if (ino == FUSE_ROOT_ID) {
        memset(&st, 0, sizeof st);
        st.st_ino = FUSE_ROOT_ID;
        st.st_mode = S_IFDIR | 0755;
        st.st_nlink = 2;
    } else if (ino == DISK_INO) {
        disk_attr(&st);
    } else {
        fuse_reply_err(req, ENOENT);
        return;
    }
    fuse_reply_attr(req, &st, 3600);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    if (ino != FUSE_ROOT_ID) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    char buf[512];
    size_t used = 0;
    const char *names[] = {".", "..", DISK_NAME};
    fuse_ino_t inos[] = {FUSE_ROOT_ID, FUSE_ROOT_ID, DISK_INO};
    for (off_t i = off; i < 3; i++) {
        struct stat st = {.st_ino = inos[i], .st_mode = i == 2 ? S_IFREG : S_IFDIR};
        size_t need = fuse_add_direntry(req, buf + used, sizeof buf - used, names[i], &st, i + 1);
        if (need > sizeof buf - used || used + need > size)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (ino != DISK_INO) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    fi->direct_io = 1;   /* never in the page cache on this side: the loop device's user has its own */
    fi->keep_cache = 0;
    fuse_reply_open(req, fi);
}

static int aligned(uint64_t offset, uint64_t size) { return (offset % 512) == 0 && (size % 512) == 0; }


static struct job *new_job(fuse_req_t req, enum job_kind kind, uint64_t offset, uint64_t size)
{
    struct job *job = calloc(1, sizeof *job);
    if (!job)
        return NULL;
    job->req = req;
    job->kind = kind;
    job->offset = offset;
    job->size = size;
    return job;
}

static void account(enum job_kind kind, uint64_t size)
{
    pthread_mutex_lock(&lock);
    if (kind == JOB_READ) {
        S.reads++;
        S.read_bytes += size;
        if (size > S.largest_read)
            S.largest_read = size;
    } else {
        S.writes++;
        S.written_bytes += size;
        if (size > S.largest_write)
            S.largest_write = size;
    }
    pthread_mutex_unlock(&lock);
}

/* --- the host side of the write cache: writes land on the image in the background ---
 * A write that waited for its O_DIRECT pwrite would pay the host disk's latency on every request, more than a
 * drive's cache takes to absorb it. The data is kept (WRITE_BEHIND_BYTES and WRITE_BEHIND_ENTRIES at most, as a drive
 * keeps its cache's contents) and written in arrival order by one thread, adjacent writes gathered into one pwritev. Reads wait for
 * pending writes they overlap, prefetch never keeps data a pending write covers, and fsync waits until all is on
 * the image (the loop device sends its flushes as fsync). */
/* Small bounds: a read overlapping a pending write waits for every write queued before it (arrival order),
   and the host writes scattered 4 KiB pieces at only a few thousand per second (64 MiB of them stalled a read
   2.5 s on this machine). */
#define WRITE_BEHIND_BYTES (16u << 20)
#define WRITE_BEHIND_ENTRIES 1024
#define WRITE_BATCH_ENTRIES 256
#define WRITE_BATCH_BYTES (4u << 20)
/* The writer gathers up to this much (or waits this long) before it writes: woken per 64 KiB write, its wake-ups
   and O_DIRECT submissions were 40 % of the server's CPU on streaming writes. Whoever needs the data on the image
   (an overlapping read, a flush, a full queue) makes it write at once. */
#define WRITE_GATHER_BYTES (1u << 20)
#define WRITE_GATHER_NS 2000000

static struct pending_write {
    struct pending_write *next;
    uint64_t offset, size;
    char *buf;
} *pending_writes_head, *pending_writes_tail;
static pthread_mutex_t write_behind_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t write_behind_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t write_behind_done = PTHREAD_COND_INITIALIZER;
static uint64_t pending_write_bytes, pending_write_count;
static int write_behind_error;
static int write_behind_waiters;                  /* threads waiting for pending writes to reach the image */

static int pending_write_overlaps(uint64_t offset, uint64_t size)   /* with write_behind_lock held */
{
    for (struct pending_write *w = pending_writes_head; w; w = w->next)
        if (w->offset < offset + size && offset < w->offset + w->size)
            return 1;
    return 0;
}

static void wait_for_pending_writes(uint64_t offset, uint64_t size)
{
    pthread_mutex_lock(&write_behind_lock);
    if (pending_write_overlaps(offset, size)) {
        write_behind_waiters++;
        pthread_cond_signal(&write_behind_work);
        while (pending_write_overlaps(offset, size))
            pthread_cond_wait(&write_behind_done, &write_behind_lock);
        write_behind_waiters--;
    }
    pthread_mutex_unlock(&write_behind_lock);
}

/* Waits until every pending write is on the image; returns its first error, if any (then cleared). */
static int drain_pending_writes(void)
{
    pthread_mutex_lock(&write_behind_lock);
    write_behind_waiters++;
    pthread_cond_signal(&write_behind_work);
    while (pending_writes_head)
        pthread_cond_wait(&write_behind_done, &write_behind_lock);
    write_behind_waiters--;
    int error = write_behind_error;
    write_behind_error = 0;
    pthread_mutex_unlock(&write_behind_lock);
    return error;
}

/* Takes ownership of buf (an aligned buffer of `size` bytes); waits while the write-behind memory is full. */
static void queue_write(uint64_t offset, uint64_t size, char *buf)
{
    struct pending_write *w = malloc(sizeof *w);
    if (!w) {                                  /* no memory for the record: write it now */
        if (pwrite(image_fd_direct, buf, size, (off_t)offset) < 0) {
            pthread_mutex_lock(&write_behind_lock);
            write_behind_error = errno;
            pthread_mutex_unlock(&write_behind_lock);
        }
        release_buffer(buf, size);
        return;
    }
    *w = (struct pending_write){.offset = offset, .size = size, .buf = buf};
    pthread_mutex_lock(&write_behind_lock);
    while ((pending_write_bytes + size > WRITE_BEHIND_BYTES || pending_write_count >= WRITE_BEHIND_ENTRIES) &&
           pending_writes_head) {
        write_behind_waiters++;
        pthread_cond_signal(&write_behind_work);
        pthread_cond_wait(&write_behind_done, &write_behind_lock);
        write_behind_waiters--;
    }
    if (pending_writes_tail)
        pending_writes_tail->next = w;
    else
        pending_writes_head = w;
    pending_writes_tail = w;
    pending_write_bytes += size;
    pending_write_count++;
    /* The first write starts the writer's gathering time; enough gathered ends it. */
    if (pending_write_count == 1 || pending_write_bytes >= WRITE_GATHER_BYTES)
        pthread_cond_signal(&write_behind_work);
    pthread_mutex_unlock(&write_behind_lock);
}

static void prefetch_invalidate(uint64_t offset, uint64_t size);

static void *write_behind_thread(void *unused)
{
    (void)unused;
    struct iovec iov[WRITE_BATCH_ENTRIES];
    int gathered = 0;
    pthread_mutex_lock(&write_behind_lock);
    for (;;) {
        if (!pending_writes_head) {
            if (stopping)
                break;
            pthread_cond_wait(&write_behind_work, &write_behind_lock);
            continue;
        }
        if (!gathered && pending_write_bytes < WRITE_GATHER_BYTES && !write_behind_waiters && !stopping) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);   /* the condition variable's clock */
            ts.tv_nsec += WRITE_GATHER_NS;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&write_behind_work, &write_behind_lock, &ts);
            gathered = 1;                         /* then write what there is */
            continue;
        }
        gathered = 0;
        /* The oldest writes, as long as each starts where the previous ended (order is kept). */
        struct pending_write *first = pending_writes_head, *w = first;
        int count = 0;
        uint64_t bytes = 0;
        while (w && count < WRITE_BATCH_ENTRIES && bytes + w->size <= WRITE_BATCH_BYTES &&
               (count == 0 || w->offset == first->offset + bytes)) {
            iov[count].iov_base = w->buf;
            iov[count].iov_len = w->size;
            bytes += w->size;
            count++;
            w = w->next;
        }
        pthread_mutex_unlock(&write_behind_lock);
        ssize_t put = pwritev(image_fd_direct, iov, count, (off_t)first->offset);
        int error = put < 0 ? errno : (uint64_t)put != bytes ? EIO : 0;
        prefetch_invalidate(first->offset, bytes);
        pthread_mutex_lock(&write_behind_lock);
        if (error && !write_behind_error)
            write_behind_error = error;
        for (int i = 0; i < count; i++) {
            struct pending_write *done = pending_writes_head;
            pending_writes_head = done->next;
            pending_write_bytes -= done->size;
            pending_write_count--;
            release_buffer(done->buf, done->size);
            free(done);
        }
        if (!pending_writes_head)
            pending_writes_tail = NULL;
        pthread_cond_broadcast(&write_behind_done);
    }
    pthread_mutex_unlock(&write_behind_lock);
    return NULL;
}

/* --- the host side of read-ahead: the drive's buffer holds real data ---
 * A sequential reader would otherwise pay the host disk's latency on every request (a 64 KiB O_DIRECT pread
 * costs about as much as the modelled transfer), so the server reads ahead of a sequential stream in
 * PREFETCH_BYTES pieces on its own thread and serves reads inside them from memory. This memory is the modelled
 * drive's buffer (a few MiB, like its segments), not a page cache: writes invalidate what they overlap. */
#define PREFETCH_BYTES (2u << 20)
#define PREFETCH_SEGMENTS 8

static struct segment {
    uint64_t offset, length, used_at;
    char *data;
    int valid, pins;     /* pins: replies still to send from this data */
} segments[PREFETCH_SEGMENTS];
static pthread_mutex_t prefetch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t prefetch_wake = PTHREAD_COND_INITIALIZER;
static uint64_t prefetch_wanted = UINT64_MAX;  /* offset the prefetch thread should load next */
static uint64_t prefetch_ahead;                /* end of what is loaded or loading */
static uint64_t last_read_end = UINT64_MAX;
static uint64_t write_generation, prefetch_uses;
static int prefetch_busy;

/* The loaded segment holding [offset, offset + size), pinned until the reply (no copy: the reply is sent from
   it); asks for the next piece of a sequential stream. */
static struct segment *prefetched_read(uint64_t offset, uint64_t size, char **data)
{
    struct segment *served = NULL;
    pthread_mutex_lock(&prefetch_lock);
    for (int i = 0; i < PREFETCH_SEGMENTS; i++) {
        struct segment *seg = &segments[i];
        if (seg->valid && seg->offset <= offset && offset + size <= seg->offset + seg->length) {
            *data = seg->data + (offset - seg->offset);
            seg->used_at = ++prefetch_uses;
            seg->pins++;
            served = seg;
            break;
        }
    }
    int sequential = served != NULL || offset == last_read_end;
    last_read_end = offset + size;
    if (sequential) {
        uint64_t end = offset + size;
        if (prefetch_ahead < end || prefetch_ahead > end + PREFETCH_SEGMENTS * (uint64_t)PREFETCH_BYTES)
            prefetch_ahead = end;
        /* Keep two pieces ahead of the reader. */
        if (!prefetch_busy && prefetch_wanted == UINT64_MAX && prefetch_ahead < end + 2 * (uint64_t)PREFETCH_BYTES &&
            prefetch_ahead < image_size) {
            prefetch_wanted = prefetch_ahead;
            pthread_cond_signal(&prefetch_wake);
        }
    }
    pthread_mutex_unlock(&prefetch_lock);
    return served;
}

/* A write makes overlapping prefetched data stale; the generation also spoils a load running across it. */
static void prefetch_invalidate(uint64_t offset, uint64_t size)
{
    /* (also declared above for the write-behind thread) */
    pthread_mutex_lock(&prefetch_lock);
    write_generation++;
    for (int i = 0; i < PREFETCH_SEGMENTS; i++)
        if (segments[i].valid && segments[i].offset < offset + size && offset < segments[i].offset + segments[i].length)
            segments[i].valid = 0;
    pthread_mutex_unlock(&prefetch_lock);
}

static void prefetch_unpin(struct segment *seg)
{
    pthread_mutex_lock(&prefetch_lock);
    seg->pins--;
    pthread_mutex_unlock(&prefetch_lock);
}

static void *prefetch_thread(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&prefetch_lock);
    while (!stopping) {
        if (prefetch_wanted == UINT64_MAX) {
            pthread_cond_wait(&prefetch_wake, &prefetch_lock);
            continue;
        }
        uint64_t offset = prefetch_wanted, length = PREFETCH_BYTES;
        prefetch_wanted = UINT64_MAX;
        if (offset + length > image_size)
            length = image_size - offset;
        int victim = -1;                      /* an unpinned segment: an empty one, else the least recently used */
        for (int i = 0; i < PREFETCH_SEGMENTS; i++) {
            if (segments[i].pins)
                continue;
            if (victim < 0 || (segments[victim].valid &&
                               (!segments[i].valid || segments[i].used_at < segments[victim].used_at)))
                victim = i;
        }
        if (victim < 0)
            continue;                         /* every segment still has replies to send: skip this piece */
        struct segment *seg = &segments[victim];
        seg->valid = 0;
        prefetch_busy = 1;
        prefetch_ahead = offset + length;
        uint64_t generation = write_generation;
        pthread_mutex_unlock(&prefetch_lock);
        ssize_t got = pread(image_fd_direct, seg->data, length, (off_t)offset);
        pthread_mutex_lock(&prefetch_lock);
        prefetch_busy = 0;
        pthread_mutex_lock(&write_behind_lock);
        int overlapped = pending_write_overlaps(offset, length);
        pthread_mutex_unlock(&write_behind_lock);
        if (got == (ssize_t)length && generation == write_generation && !overlapped) {
            seg->offset = offset;
            seg->length = length;
            seg->used_at = ++prefetch_uses;
            seg->valid = 1;
        } else {
            prefetch_ahead = offset;
        }
        /* Keep going while the reader is less than two pieces behind. */
        if (last_read_end != UINT64_MAX && prefetch_ahead < last_read_end + 2 * (uint64_t)PREFETCH_BYTES &&
            prefetch_ahead >= last_read_end && prefetch_ahead < image_size && prefetch_wanted == UINT64_MAX)
            prefetch_wanted = prefetch_ahead;
    }
    pthread_mutex_unlock(&prefetch_lock);
    return NULL;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    if ((uint64_t)off >= image_size)
        size = 0;
    else if ((uint64_t)off + size > image_size)
        size = image_size - (uint64_t)off;
    char *buf = aligned_buffer(size);
    struct job *job = buf ? new_job(req, JOB_READ, (uint64_t)off, size) : NULL;
    if (!job) {
        release_buffer(buf, size);
        fuse_reply_err(req, ENOMEM);
        return;
    }
    char *prefetched = NULL;
    struct segment *pinned = size ? prefetched_read((uint64_t)off, size, &prefetched) : NULL;
    ssize_t got = 0;
    if (pinned) {
        release_buffer(buf, size);
        buf = prefetched;
        got = (ssize_t)size;
    } else if (size) {
        wait_for_pending_writes((uint64_t)off, size);
        got = pread(aligned(off, size) ? image_fd_direct : image_fd_buffered, buf, size, off);
    }
    if (got < 0) {
        int error = errno;
        release_buffer(buf, size);
        free(job);
        fuse_reply_err(req, error);
        return;
    }
    job->buf = buf;
    job->pinned = pinned;
    job->buffer_size = size;
    job->size = (uint64_t)got;
    account(JOB_READ, job->size);
    if (P.no_model || got == 0) {
        reply(job);
        return;
    }
    arrive(job);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    if ((uint64_t)off + size > image_size) {
        fuse_reply_err(req, ENOSPC);
        return;
    }
    struct job *job = new_job(req, JOB_WRITE, (uint64_t)off, size);
    if (!job) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    ssize_t put = (ssize_t)size;
    prefetch_invalidate((uint64_t)off, size);
    if (aligned(off, size)) {
        /* O_DIRECT needs an aligned buffer; libfuse's sits after the request headers. */
        char *buf = aligned_buffer(size);
        if (!buf) {
            free(job);
            fuse_reply_err(req, ENOMEM);
            return;
        }
        memcpy(buf, data, size);
        queue_write((uint64_t)off, size, buf);
    } else {
        /* Rare (the loop device sends whole sectors): after what is pending, through the page cache. */
        int error = drain_pending_writes();
        put = error ? -1 : pwrite(image_fd_buffered, data, size, off);
        if (error)
            errno = error;
        prefetch_invalidate((uint64_t)off, size);
    }
    if (put < 0) {
        int error = errno;
        free(job);
        fuse_reply_err(req, error);
        return;
    }
    job->size = (uint64_t)put;
    account(JOB_WRITE, job->size);
    if (P.no_model) {
        reply(job);
        return;
    }
    arrive(job);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    (void)datasync;
    (void)fi;
    pthread_mutex_lock(&lock);
    S.fsyncs++;
    pthread_mutex_unlock(&lock);
    int error = drain_pending_writes();
    if (error) {
        fuse_reply_err(req, error);
        return;
    }
    struct job *job = new_job(req, JOB_FSYNC, 0, 0);
    if (!job) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (P.no_model) {
        reply(job);
        return;
    }
    arrive(job);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops operations = {
    .init = op_init, .lookup = op_lookup, .getattr = op_getattr, .readdir = op_readdir, .open = op_open,
    .read = op_read, .write = op_write, .fsync = op_fsync, .flush = op_flush,
};

/* --- command line --- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: spillway-hdd-model --image FILE --mountpoint DIR [options]\n"
            "  --rpm N                     spindle speed (7200)\n"
            "  --read-seek-avg-ms MS       datasheet average read seek (7.4)\n"
            "  --read-seek-track-ms MS     datasheet single-track read seek (0.23)\n"
            "  --write-seek-avg-ms MS      datasheet average write seek (8.2)\n"
            "  --write-seek-track-ms MS    datasheet single-track write seek (0.32)\n"
            "  --outer-rate BYTES/S        sustained media rate at the outer edge (255000000)\n"
            "  --inner-rate BYTES/S        at the inner edge (127500000)\n"
            "  --interface-rate BYTES/S    host link, for buffer and cache hits (600000000)\n"
            "  --overhead-ms MS            command overhead of a media access (0.1)\n"
            "  --hit-overhead-ms MS        command overhead of a buffer or write-cache hit (0.03)\n"
            "  --write-cache BYTES         write-back cache, 0 = write through (256000000)\n"
            "  --readahead BYTES           read-ahead after a read (4194304)\n"
            "  --segments N                read buffer segments, the active stream included (16)\n"
            "  --min-prefetch BYTES        read on after a returning stream's read whatever waits (524288)\n"
            "  --destage-min BYTES         dirty bytes that start destaging while reads come (1048576)\n"
            "  --destage-idle-ms MS        time with no command outstanding that starts destaging anyway (10)\n"
            "  --max-wait-ms MS            a request waiting longer is served first (1000)\n"
            "  --capacity BYTES            modelled drive size, the image at its start (image size)\n"
            "  --reply-early-us US         reply this long before completion: the kernel path's cost (0)\n"
            "  --reply-early-us-per-mib US and this much more per MiB of the request (0)\n"
            "  --max-threads N             FUSE worker threads (64)\n"
            "  --stats FILE                counters as JSON, at exit and on SIGUSR1\n"
            "  --no-model                  no delays (measures the FUSE path alone)\n"
            "  --foreground                stay in the foreground\n");
}

static void on_usr1(int sig)
{
    (void)sig;
    stats_requested = 1;
}

int main(int argc, char **argv)
{
    enum { O_RPM = 256, O_RSA, O_RST, O_WSA, O_WST, O_OUTER, O_INNER, O_IFACE, O_OVH, O_HOVH, O_SEG, O_MINPF, O_WC, O_RA, O_DMIN,
           O_DIDLE, O_MAXWAIT, O_CAP, O_EARLY, O_EARLYMIB, O_THREADS, O_STATS, O_NOMODEL, O_FG, O_IMAGE, O_MNT, O_HELP };
    static const struct option options[] = {
        {"rpm", 1, 0, O_RPM}, {"read-seek-avg-ms", 1, 0, O_RSA}, {"read-seek-track-ms", 1, 0, O_RST},
        {"write-seek-avg-ms", 1, 0, O_WSA}, {"write-seek-track-ms", 1, 0, O_WST},
        {"outer-rate", 1, 0, O_OUTER}, {"inner-rate", 1, 0, O_INNER}, {"interface-rate", 1, 0, O_IFACE},
        {"overhead-ms", 1, 0, O_OVH}, {"hit-overhead-ms", 1, 0, O_HOVH}, {"segments", 1, 0, O_SEG},
        {"min-prefetch", 1, 0, O_MINPF}, {"write-cache", 1, 0, O_WC}, {"readahead", 1, 0, O_RA},
        {"destage-min", 1, 0, O_DMIN}, {"destage-idle-ms", 1, 0, O_DIDLE}, {"max-wait-ms", 1, 0, O_MAXWAIT},
        {"capacity", 1, 0, O_CAP}, {"reply-early-us", 1, 0, O_EARLY},
        {"reply-early-us-per-mib", 1, 0, O_EARLYMIB}, {"max-threads", 1, 0, O_THREADS},
        {"stats", 1, 0, O_STATS}, {"no-model", 0, 0, O_NOMODEL}, {"foreground", 0, 0, O_FG},
        {"image", 1, 0, O_IMAGE}, {"mountpoint", 1, 0, O_MNT}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case O_RPM: P.rpm = atof(optarg); break;
        case O_RSA: P.read_seek_avg_ms = atof(optarg); break;
        case O_RST: P.read_seek_track_ms = atof(optarg); break;
        case O_WSA: P.write_seek_avg_ms = atof(optarg); break;
        case O_WST: P.write_seek_track_ms = atof(optarg); break;
        case O_OUTER: P.outer_rate = atof(optarg); break;
        case O_INNER: P.inner_rate = atof(optarg); break;
        case O_IFACE: P.interface_rate = atof(optarg); break;
        case O_OVH: P.overhead_ms = atof(optarg); break;
        case O_HOVH: P.hit_overhead_ms = atof(optarg); break;
        case O_SEG: P.segments = atoi(optarg); break;
        case O_MINPF: P.min_prefetch = strtoull(optarg, NULL, 10); break;
        case O_WC: P.write_cache = strtoull(optarg, NULL, 10); break;
        case O_RA: P.readahead = strtoull(optarg, NULL, 10); break;
        case O_DMIN: P.destage_min = strtoull(optarg, NULL, 10); break;
        case O_DIDLE: P.destage_idle_ms = atof(optarg); break;
        case O_MAXWAIT: P.max_wait_ms = atof(optarg); break;
        case O_CAP: P.capacity = strtoull(optarg, NULL, 10); break;
        case O_EARLY: P.reply_early_us = atof(optarg); break;
        case O_EARLYMIB: P.reply_early_us_per_mib = atof(optarg); break;
        case O_THREADS: P.max_threads = atoi(optarg); break;
        case O_STATS: P.stats_path = optarg; break;
        case O_NOMODEL: P.no_model = 1; break;
        case O_FG: P.foreground = 1; break;
        case O_IMAGE: P.image = optarg; break;
        case O_MNT: P.mountpoint = optarg; break;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!P.image || !P.mountpoint || P.rpm <= 0 || P.outer_rate <= 0 || P.inner_rate <= 0 ||
        P.inner_rate > P.outer_rate || P.interface_rate <= 0 || P.read_seek_avg_ms < P.read_seek_track_ms ||
        P.write_seek_avg_ms < P.write_seek_track_ms) {
        usage(stderr);
        return 2;
    }
    image_fd_direct = open(P.image, O_RDWR | O_DIRECT);
    image_fd_buffered = open(P.image, O_RDWR);
    if (image_fd_direct < 0 || image_fd_buffered < 0) {
        fprintf(stderr, "spillway-hdd-model: cannot open %s with O_DIRECT: %s\n", P.image, strerror(errno));
        return 1;
    }
    struct stat st;
    fstat(image_fd_direct, &st);
    image_size = (uint64_t)st.st_size;
    if (P.capacity == 0)
        P.capacity = image_size;
    if (P.capacity < image_size) {
        fprintf(stderr, "spillway-hdd-model: --capacity is smaller than the image\n");
        return 2;
    }
    derive_geometry();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    epoch = (nanos)ts.tv_sec * 1000000000 + ts.tv_nsec;

    pthread_condattr_t cattr;
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &cattr);

    char *fuse_argv[] = {argv[0], "-o", "fsname=spillway-hdd-model,subtype=spillway-hdd-model", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
    struct fuse_session *se = fuse_session_new(&args, &operations, sizeof operations, NULL);
    if (!se || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, P.mountpoint) != 0) {
        fprintf(stderr, "spillway-hdd-model: cannot mount on %s\n", P.mountpoint);
        return 1;
    }
    signal(SIGUSR1, on_usr1);
    fprintf(stderr, "spillway-hdd-model: %s (%lu bytes) at %s/%s; %.0f tracks, full-stroke seek %.2f ms read, "
                    "%.2f ms write\n", P.image, image_size, P.mountpoint, DISK_NAME, G.tracks, G.read_full_ms,
            G.write_full_ms);
    fuse_daemonize(P.foreground);

    /* 1 us of timer slack, inherited by every thread made from here (the drive's, FUSE's workers, which sleep
       until their replies): the default 50 us would blur short transfers. */
    prctl(PR_SET_TIMERSLACK, 1000UL);
    pthread_t drive;
    pthread_create(&drive, NULL, drive_thread, NULL);
    pthread_t prefetcher;
    for (int i = 0; i < PREFETCH_SEGMENTS; i++) {
        /* Huge pages: pinning one 2 MiB page per O_DIRECT read instead of 512 small ones. */
        if (posix_memalign((void **)&segments[i].data, PREFETCH_BYTES, PREFETCH_BYTES) != 0)
            return 1;
        madvise(segments[i].data, PREFETCH_BYTES, MADV_HUGEPAGE);
    }
    pthread_create(&prefetcher, NULL, prefetch_thread, NULL);
    pthread_t writer;
    pthread_create(&writer, NULL, write_behind_thread, NULL);
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(config, (unsigned)P.max_threads);
    fuse_loop_cfg_set_idle_threads(config, 4);
    int rc = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);

    pthread_mutex_lock(&lock);
    stopping = 1;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    pthread_join(drive, NULL);
    pthread_mutex_lock(&prefetch_lock);
    pthread_cond_signal(&prefetch_wake);
    pthread_mutex_unlock(&prefetch_lock);
    pthread_join(prefetcher, NULL);
    int write_error = drain_pending_writes();   /* everything on the image before the mount goes */
    pthread_mutex_lock(&write_behind_lock);
    pthread_cond_signal(&write_behind_work);
    pthread_mutex_unlock(&write_behind_lock);
    pthread_join(writer, NULL);
    if (write_error)
        fprintf(stderr, "spillway-hdd-model: a write to the image failed: %s\n", strerror(write_error));
    write_stats();
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return rc ? 1 : 0;
}
