/* The disk model's policies on a simulated clock, for tests/playbooks/test_hdd_model_policies.py.
 *
 * It #includes the server's source (its static functions become reachable; its main is renamed) and drives the
 * same policy functions the server's threads call (arrive_at, drive_advance, drive_next_event) from a script on
 * stdin, with no FUSE mount and no I/O: time jumps from one event (an arrival, the mechanism freeing, a reply) to
 * the next, so a run of thousands of requests takes milliseconds and is the same on a loaded machine.
 *
 * Script, one command a line (times in ns from 0, offsets and sizes in bytes):
 *   param NAME VALUE                  a server option (before the first request), e.g. param write_cache 0
 *   read|write T OFFSET SIZE          a request arriving at T
 *   fsync T
 *   run T                             simulate until T, print the drive's state then
 *   closed read|write rand|seq COUNT DEPTH SIZE REGION SEED
 *                                     keep DEPTH requests outstanding (a new one when one replies) until COUNT
 *                                     replied; offsets uniform over [0, REGION) (rand) or following on (seq)
 * Output: one JSON object per line: a "state" line per run, then one per request at the end, then "stats".
 */
#define main spillway_hdd_model_main
#include SPILLWAY_HDD_MODEL_SOURCE
#undef main

#define MAX_SIM_JOBS 200000

struct sim_job {
    struct job job;          /* first: the model's lists hold &sim_job.job */
    int id, replied;
    nanos replied_at;
    uint64_t dirty_at_reply;
};

static struct sim_job *jobs[MAX_SIM_JOBS];
static int job_count;
static nanos sim_t;
static int geometry_ready;

/* the closed loop */
static int closed_left, closed_kind, closed_random;
static uint64_t closed_size, closed_region, closed_next_offset, rng_state;

static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void ready(void)
{
    if (geometry_ready)
        return;
    if (P.capacity == 0)
        P.capacity = 8ull << 30;
    image_size = P.capacity;
    derive_geometry();
    geometry_ready = 1;
}

static void on_reply(struct job *job, nanos t)
{
    struct sim_job *s = (struct sim_job *)job;
    s->replied = 1;
    s->replied_at = t;
    s->dirty_at_reply = dirty_bytes;
}

static void issue(enum job_kind kind, nanos t, uint64_t offset, uint64_t size);

static void closed_refill(nanos t)
{
    if (closed_left <= 0)
        return;
    uint64_t offset;
    if (closed_random) {
        offset = next_random() % (closed_region / closed_size) * closed_size;
    } else {
        offset = closed_next_offset;
        closed_next_offset = offset + closed_size >= closed_region ? 0 : offset + closed_size;
    }
    closed_left--;
    issue(closed_kind, t, offset, closed_size);
}

static void issue(enum job_kind kind, nanos t, uint64_t offset, uint64_t size)
{
    ready();
    if (job_count == MAX_SIM_JOBS) {
        fprintf(stderr, "too many requests\n");
        exit(2);
    }
    struct sim_job *s = calloc(1, sizeof *s);
    s->id = job_count;
    jobs[job_count++] = s;
    s->job.kind = kind;
    s->job.offset = offset;
    s->job.size = size;
    struct job *due = arrive_at(&s->job, t);
    if (due) {
        on_reply(due, t);
        closed_refill(t);
    }
    drive_advance(t);
}

/* Events in time order up to `limit`: replies first at equal times (a closed loop's next request then meets the
   drive as the server's would), then the mechanism. */
static void simulate_until(nanos limit)
{
    for (long steps = 0; steps < 100000000L; steps++) {
        nanos next_drive = drive_next_event(sim_t), next_reply = INT64_MAX;
        for (struct job *job = done_list; job; job = job->next)
            if (job->reply_at < next_reply)
                next_reply = job->reply_at;
        nanos next = next_drive < next_reply ? next_drive : next_reply;
        if (next > limit || next == INT64_MAX)
            break;
        if (next > sim_t)
            sim_t = next;
        if (next_reply <= sim_t) {
            struct job **link = &done_list, *due = NULL;
            while (*link) {
                if ((*link)->reply_at <= sim_t) {
                    struct job *job = *link;
                    *link = job->next;
                    job->next = due;
                    due = job;
                } else {
                    link = &(*link)->next;
                }
            }
            while (due) {
                struct job *next_due = due->next;
                on_reply(due, due->reply_at);
                closed_refill(sim_t);
                due = next_due;
            }
        } else {
            drive_advance(sim_t);
        }
    }
    if (limit != INT64_MAX && limit > sim_t)
        sim_t = limit;
}

static int set_param(const char *name, const char *value)
{
    struct { const char *name; double *d; uint64_t *u; int *i; } table[] = {
        {"rpm", &P.rpm}, {"read_seek_avg_ms", &P.read_seek_avg_ms}, {"read_seek_track_ms", &P.read_seek_track_ms},
        {"write_seek_avg_ms", &P.write_seek_avg_ms}, {"write_seek_track_ms", &P.write_seek_track_ms},
        {"outer_rate", &P.outer_rate}, {"inner_rate", &P.inner_rate}, {"interface_rate", &P.interface_rate},
        {"overhead_ms", &P.overhead_ms}, {"hit_overhead_ms", &P.hit_overhead_ms},
        {"destage_idle_ms", &P.destage_idle_ms}, {"max_wait_ms", &P.max_wait_ms},
        {"capacity", NULL, &P.capacity}, {"write_cache", NULL, &P.write_cache}, {"readahead", NULL, &P.readahead},
        {"destage_min", NULL, &P.destage_min}, {"min_prefetch", NULL, &P.min_prefetch},
        {"segments", NULL, NULL, &P.segments},
    };
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
        if (strcmp(table[k].name, name) == 0) {
            if (table[k].d)
                *table[k].d = atof(value);
            else if (table[k].u)
                *table[k].u = strtoull(value, NULL, 10);
            else
                *table[k].i = atoi(value);
            return 0;
        }
    return -1;
}

static void print_state(void)
{
    printf("{\"state\": {\"t\": %lld, \"dirty_bytes\": %llu, \"destages\": %llu, \"pending\": %d}}\n",
           (long long)sim_t, (unsigned long long)dirty_bytes, (unsigned long long)S.destages, pending_head != NULL);
}

int main(void)
{
    char line[512], a[64], b[64];
    long long t;
    unsigned long long offset, size, count, depth, region, seed;
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "param %63s %63s", a, b) == 2) {
            if (geometry_ready || set_param(a, b) != 0) {
                fprintf(stderr, "bad param line: %s", line);
                return 2;
            }
        } else if (sscanf(line, "read %lld %llu %llu", &t, &offset, &size) == 3 ||
                   sscanf(line, "write %lld %llu %llu", &t, &offset, &size) == 3) {
            simulate_until(t);
            issue(line[0] == 'r' ? JOB_READ : JOB_WRITE, t, offset, size);
        } else if (sscanf(line, "fsync %lld", &t) == 1) {
            simulate_until(t);
            issue(JOB_FSYNC, t, 0, 0);
        } else if (sscanf(line, "run %lld", &t) == 1) {
            simulate_until(t);
            print_state();
        } else if (sscanf(line, "closed %63s %63s %llu %llu %llu %llu %llu", a, b, &count, &depth, &size, &region,
                          &seed) == 7) {
            closed_kind = strcmp(a, "write") == 0 ? JOB_WRITE : JOB_READ;
            closed_random = strcmp(b, "rand") == 0;
            closed_size = size;
            closed_region = region;
            closed_next_offset = 0;
            rng_state = seed ? seed : 1;
            closed_left = (int)count;
            nanos start = sim_t;
            for (unsigned long long k = 0; k < depth && closed_left > 0; k++)
                closed_refill(start);
            simulate_until(INT64_MAX);
        } else if (line[0] != '\n' && line[0] != '#') {
            fprintf(stderr, "bad line: %s", line);
            return 2;
        }
    }
    simulate_until(INT64_MAX);
    for (int k = 0; k < job_count; k++) {
        struct sim_job *s = jobs[k];
        printf("{\"id\": %d, \"kind\": \"%s\", \"offset\": %llu, \"size\": %llu, \"arrival\": %lld, "
               "\"replied\": %d, \"reply\": %lld, \"dirty_at_reply\": %llu}\n",
               s->id, s->job.kind == JOB_READ ? "read" : s->job.kind == JOB_WRITE ? "write" : "fsync",
               (unsigned long long)s->job.offset, (unsigned long long)s->job.size, (long long)s->job.arrival,
               s->replied, (long long)s->replied_at, (unsigned long long)s->dirty_at_reply);
    }
    printf("{\"stats\": {\"buffer_hits\": %llu, \"stream_continuations\": %llu, \"cache_absorbed\": %llu, "
           "\"cache_full_waits\": %llu, \"destages\": %llu, \"write_throughs\": %llu, \"reordered\": %llu, "
           "\"aged\": %llu, \"min_prefetches\": %llu, \"dirty_bytes\": %llu, \"end\": %lld}}\n",
           (unsigned long long)S.buffer_hits, (unsigned long long)S.stream_continuations,
           (unsigned long long)S.cache_absorbed, (unsigned long long)S.cache_full_waits,
           (unsigned long long)S.destages, (unsigned long long)S.write_throughs, (unsigned long long)S.reordered,
           (unsigned long long)S.aged, (unsigned long long)S.min_prefetches, (unsigned long long)dirty_bytes,
           (long long)sim_t);
    return 0;
}
