/* workers.c - Locked sales on an event loop (--combine N): each item has a line of sales,
 * and at most --workers threads serve the lines. An idle worker takes a line that has
 * sales and that no other worker is serving (the one that has waited longest, passing
 * over those of a store server where half the workers hold a lock already: next_line),
 * takes the lock for its first sale (waiting as the version waits) and, holding the
 * grant, takes up to N - 1 more from the line: one critical section serves them all.
 * While sales keep coming it serves the next batch under the same grant, up to a hold
 * limit (sale_serve). A worker waiting for one item's lock holds up no other item while
 * another worker is idle; when all are busy, the next line waits for one. A reaper
 * answers 503 lock_timeout to a sale still in a line at its wait limit. */
#include "service/sale/engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hash.h"
#include "service/config/config.h"
#include "service/metrics/metrics.h"
#include "service/sale/sale.h"
#include "service/store/store.h"

/* One item's line of sales. */
struct line {
    char item[ITEM_MAX + 1];
    struct sale_job *head, *tail;
    int busy;                     /* a worker is serving this line */
    pthread_cond_t cv;            /* a sale came (for the worker lingering on it) */
    struct sale_line serve;       /* how sale_serve takes from it and answers */
    int ready;                    /* in the ready list */
    int server;                   /* its store server when it was made ready (-1: none) */
    long picked_trips;            /* its worker's trips (below) when it took it */
    long long picked_ms;          /* monotonic: when its worker took it */
    int granted;                  /* its worker holds its lock */
    int waiting;                  /* in the waiting list: it has sales (head) */
    long long last_us;            /* monotonic: when its last sale came */
    atomic_int close;             /* its last two sales came within LINGER_MS (read
                                     without mu: a hint, asked on every batch) */
    struct line *next;            /* every line */
    struct line *wnext, *wprev;   /* the waiting list, for the reaper */
    struct line *hnext;           /* the next in its bucket */
    struct line *rnext;           /* the next in the ready list */
};

/* Lines found by their item's hash, and the lines with sales and no worker in the order
 * they became so: with a thousand items, a sale finds its line in a step, and a worker
 * the next line to serve from the head (a walk through every line cost more than the
 * sale; only a crowded server's lines are passed over, next_line). */
enum { LINE_BUCKETS = 1024 };

/* How long one grant serves batch after batch while sales keep coming: long enough to
 * serve several waves of requests for the price of one acquire and one release, short
 * enough that another instance's sales wait little (and within a third of the lease, as
 * the watchdog renews). A grant waits up to LINGER_MS for a next batch before it gives
 * the lock back, and not at all once another instance has asked for it, nor when the
 * item's last two sales came further apart than that (then the write rides with the
 * release). docs/performance.md has the bench runs that chose these numbers. */
enum { HOLD_MS = 10, LINGER_MS = 1 };

/* mu guards every line and everything below. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv;    /* a line has sales and no worker: for an idle worker */
static struct line *lines;
static struct line *bucket[LINE_BUCKETS];
static struct line *ready_head, *ready_tail;
static struct line *waiting;      /* the lines that have sales (the reaper looks at those) */
static pthread_t *threads;        /* svc.workers of them at most, started as needed */
static int running, idle, stopping, started, reaper_started, reaper_stopping;
static pthread_t reaper;

/* With spread items (a store of several servers), each worker's line now (served[i],
 * NULL: idle) tells how many workers work on each server: those that hold their line's
 * lock, took it less than PICK_MS ago (its grant may have come back and not yet been
 * told: granted), or whose first round trip for it has not come back yet (trips[i], the
 * store's count of worker i's trips, has not moved since it took the line: on busy cores
 * a worker may not have run at all in PICK_MS). One refused past that waits for
 * another's grant, on no server: two such would otherwise hold every other line of
 * theirs. At most per_server() may at once: the store's cap (half the workers, at least
 * one). SERVERS_COUNTED: as many as the Redis layer numbers (one past it is not counted). */
enum { SERVERS_COUNTED = 64, PICK_MS = 5 };
static struct line **served;
static atomic_long *trips;

static int per_server(void)
{
    return svc.workers / 2 > 0 ? svc.workers / 2 : 1;
}

static struct sale_job *job_of(struct sale_request *rq)
{
    return (struct sale_job *)((char *)rq - offsetof(struct sale_job, rq));
}

/* Puts l in the waiting list when it has sales, takes it out when it has none. With mu
 * held. */
static void line_waiting(struct line *l)
{
    if (l->head && !l->waiting) {
        l->waiting = 1;
        l->wprev = NULL;
        if ((l->wnext = waiting) != NULL)
            waiting->wprev = l;
        waiting = l;
    } else if (!l->head && l->waiting) {
        l->waiting = 0;
        if (l->wprev)
            l->wprev->wnext = l->wnext;
        else
            waiting = l->wnext;
        if (l->wnext)
            l->wnext->wprev = l->wprev;
    }
}

/* Takes the first job of l; NULL when empty. With mu held. */
static struct sale_job *line_pop(struct line *l)
{
    struct sale_job *j = l->head;

    if (j && (l->head = j->next) == NULL) {
        l->tail = NULL;
        line_waiting(l);
    }
    return j;
}

/* Takes up to room sales from l into rqs after the have already there: a sale at its
 * wait limit is left for the reaper, and a sale with an idempotency key goes alone.
 * Called by sale_serve with the grant held. */
static int take_more(void *arg, struct sale_request **rqs, int have, int room)
{
    struct line *l = arg;
    long long now = clock_now_ms();
    int n = 0;

    pthread_mutex_lock(&mu);
    while (l->head && n < room && l->head->deadline_ms > now) {
        if (have + n > 0 && (l->head->rq.idem_key || rqs[0]->idem_key))
            break;
        rqs[have + n++] = &line_pop(l)->rq;
    }
    pthread_mutex_unlock(&mu);
    return n;
}

/* 1 when a sale is in l, waiting for one until the monotonic time until_ms. */
static int has_more(void *arg, long long until_ms)
{
    struct line *l = arg;
    int more;

    pthread_mutex_lock(&mu);
    while (l->head == NULL && !stopping && clock_now_ms() < until_ms) {
        struct timespec ts = clock_monotonic_at(until_ms);
        pthread_cond_timedwait(&l->cv, &mu, &ts); /* cv runs on CLOCK_MONOTONIC */
    }
    more = l->head != NULL;
    pthread_mutex_unlock(&mu);
    return more;
}

/* 1 when l's last two sales came within LINGER_MS: a next batch is worth waiting for.
 * Asked as the grant decides, so a wave of sales that began as the grant was taken
 * counts. */
static int lingers(void *arg)
{
    struct line *l = arg;

    return atomic_load_explicit(&l->close, memory_order_relaxed);
}

/* l's worker holds its lock: it works on l's server until it is done (worker_main). */
static void granted(void *arg)
{
    struct line *l = arg;

    pthread_mutex_lock(&mu);
    l->granted = 1;
    pthread_mutex_unlock(&mu);
}

static void answer(void *arg, struct sale_request **rqs, int n)
{
    (void)arg;
    for (int i = 0; i < n; i++)
        engine_resume(job_of(rqs[i]));
}

/* Puts l in the ready list when it has sales, no worker, and is not there yet, with its
 * store server as far as the store knows now (-1: not counted). With mu held. */
static void mark_ready(struct line *l)
{
    int s;

    if (l->ready || l->head == NULL || l->busy)
        return;
    s = svc_store->spread && svc_store->ops->item_server
            ? svc_store->ops->item_server(svc_store, l->item) : -1;
    l->server = s < SERVERS_COUNTED ? s : -1;
    l->ready = 1;
    l->rnext = NULL;
    if (ready_tail)
        ready_tail->rnext = l;
    else
        ready_head = l;
    ready_tail = l;
}

/* Takes l, after prev (NULL: at the head), out of the ready list. With mu held. */
static void ready_unlink(struct line *prev, struct line *l)
{
    if (prev)
        prev->rnext = l->rnext;
    else
        ready_head = l->rnext;
    if (ready_tail == l)
        ready_tail = prev;
    l->ready = 0;
}

/* How many workers work on server s now (served). With mu held. */
static int working_on(int s)
{
    long long now = clock_now_ms();
    int n = 0;

    for (int i = 0; i < running; i++) {
        const struct line *l = served[i];
        n += l && l->server == s &&
             (l->granted || now - l->picked_ms < PICK_MS ||
              atomic_load_explicit(&trips[i], memory_order_relaxed) == l->picked_trips);
    }
    return n;
}

/* 1 when l's server has its cap of workers: a worker that took l would wait at the
 * store's gate while another server's sales wait for a worker. full (NULL: none) keeps
 * each server's answer for one walk of the ready list (0: not asked yet, 1: no, 2: yes);
 * a line of no known server (one Redis) costs nothing. With mu held. */
static int crowded(const struct line *l, signed char *full)
{
    if (l->server < 0)
        return 0;
    if (full == NULL)
        return working_on(l->server) >= per_server();
    if (full[l->server] == 0)
        full[l->server] = working_on(l->server) >= per_server() ? 2 : 1;
    return full[l->server] == 2;
}

/* The line that has waited longest with sales and no worker, passing over the crowded
 * ones (the first of their server's workers to finish takes one, or wakes a worker). NULL
 * when none. With mu held. (A line in the list may have been emptied meanwhile, by the
 * reaper or by the worker that served it: it is dropped.) */
static struct line *next_line(void)
{
    struct line *l = ready_head, *prev = NULL;
    signed char full[SERVERS_COUNTED] = { 0 };

    while (l) {
        struct line *next = l->rnext;
        if (!l->head || l->busy) {
            ready_unlink(prev, l);
        } else if (!crowded(l, full)) {
            ready_unlink(prev, l);
            return l;
        } else {
            prev = l;
        }
        l = next;
    }
    return NULL;
}

/* Serves one sale from l, with the grant it takes. Without mu. */
static void serve_first(struct line *l, struct sale_job *first)
{
    long left = (long)(first->deadline_ms - clock_now_ms());

    if (left > 0) {
        sale_serve(&first->rq, left, &l->serve);
        return;
    }
    first->rq.out.result = SALE_LOCK_TIMEOUT;
    metrics_line_timeout();
    engine_resume(first);
}

static void *worker_main(void *arg)
{
    int me = (int)(intptr_t)arg;   /* served[me] */
    struct line *l;

    if (svc_store->ops->worker)   /* a store server that stops answering holds half at most */
        svc_store->ops->worker(svc_store, per_server(), &trips[me]);
    pthread_mutex_lock(&mu);
    for (;;) {
        idle++;
        while ((l = next_line()) == NULL && !stopping)
            pthread_cond_wait(&work_cv, &mu);
        idle--;
        if (l == NULL)
            break;   /* stopping, and no line has sales left */
        l->busy = 1;
        l->picked_trips = atomic_load_explicit(&trips[me], memory_order_relaxed);
        l->picked_ms = clock_now_ms();
        l->granted = 0;
        served[me] = l;
        struct sale_job *first = line_pop(l);
        pthread_mutex_unlock(&mu);
        serve_first(l, first);
        pthread_mutex_lock(&mu);
        served[me] = NULL;
        if (ready_head && idle > 0)
            pthread_cond_signal(&work_cv);   /* a line passed over may be taken now */
        l->busy = 0;
        mark_ready(l);   /* what came meanwhile waits its turn behind the other lines */
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Answers lock_timeout to the sales of l at their wait limit. With mu held. */
static void reap(struct line *l, long long now)
{
    struct sale_job **p = &l->head, *prev = NULL;
    int silent = l->head && engine_item_silent(l->item);

    while (*p) {
        struct sale_job *j = *p;
        if (j->deadline_ms > now && !silent) {
            prev = j;
            p = &j->next;
            continue;
        }
        *p = j->next;
        if (l->tail == j)
            l->tail = prev;
        if (silent) {   /* its server stopped answering: none of them waits on it */
            engine_answer_down(j);
            continue;
        }
        j->rq.out.result = SALE_LOCK_TIMEOUT;
        metrics_line_timeout();
        engine_resume(j);
    }
    line_waiting(l);
}

/* Every 10 ms: a store server that stopped answering found (watch); sales still in a line
 * at their wait limit answer lock_timeout, and those of a silent server answer 503 now;
 * an idle worker woken when lines wait (one passed over may be taken now). */
static void *reaper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!reaper_stopping) {   /* (after the workers: they serve what is left) */
        long long now = clock_now_ms();
        if (svc_store->spread && svc_store->ops->watch) {
            pthread_mutex_unlock(&mu);
            svc_store->ops->watch(svc_store);   /* a server that stopped answering, found */
            pthread_mutex_lock(&mu);
        }
        for (struct line *l = waiting, *next; l; l = next) {
            next = l->wnext;   /* reap may take l out of the list */
            reap(l, now);
        }
        if (ready_head && idle > 0)   /* a line passed over, its server's workers now fewer */
            pthread_cond_signal(&work_cv);
        pthread_mutex_unlock(&mu);
        clock_sleep_ms(10);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

static long hold_ms(void)
{
    return svc.ttl_ms / 3 < HOLD_MS ? svc.ttl_ms / 3 : HOLD_MS;
}

/* item's line, made on first use; NULL when out of memory. With mu held. */
static struct line *line_for(const char *item)
{
    struct line *l;
    unsigned h = hash_bytes(item, strlen(item)) % LINE_BUCKETS;

    for (l = bucket[h]; l; l = l->hnext)
        if (strcmp(l->item, item) == 0)
            return l;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return NULL;
    snprintf(l->item, sizeof(l->item), "%s", item);
    clock_cond_init_monotonic(&l->cv);
    l->serve = (struct sale_line){ .take = take_more, .has_more = has_more, .answer = answer,
                                   .lingers = lingers, .granted = granted, .arg = l,
                                   .batch_max = svc.combine,
                                   .hold_ms = hold_ms(), .linger_ms = LINGER_MS };
    l->next = lines;
    lines = l;
    l->hnext = bucket[h];
    bucket[h] = l;
    return l;
}

/* A line no worker serves has sales: wakes an idle worker, or starts one while fewer
 * than --workers run. 0, or -1 when none runs and none can be started. With mu held. */
static int wake_worker(void)
{
    if (idle == 0 && running < svc.workers &&
        pthread_create(&threads[running], NULL, worker_main, (void *)(intptr_t)running) == 0)
        running++;
    pthread_cond_signal(&work_cv);
    return running > 0 ? 0 : -1;
}

static void workers_submit(struct sale_job *j)
{
    struct line *l = NULL;
    int down;

    if (engine_answer_silent(j))   /* its server does not answer: no worker waits on it */
        return;
    j->next = NULL;
    j->deadline_ms = clock_now_ms() + svc.wait_ms;
    pthread_mutex_lock(&mu);
    down = !started || stopping;
    if (!down && (l = line_for(j->item)) != NULL) {
        long long now = clock_now_us();
        atomic_store_explicit(&l->close, l->last_us != 0 && now - l->last_us < LINGER_MS * 1000,
                              memory_order_relaxed);
        l->last_us = now;
        if (l->tail)
            l->tail->next = j;
        else
            l->head = j;
        l->tail = j;
        line_waiting(l);
        mark_ready(l);
        pthread_cond_signal(&l->cv);   /* the worker serving l, lingering for more */
        if (l->busy || crowded(l, NULL) || wake_worker() == 0) {   /* (crowded: next_line) */
            pthread_mutex_unlock(&mu);
            return;
        }
        l->head = l->tail = NULL;   /* j was its only sale: no worker ever ran */
        line_waiting(l);
    }
    pthread_mutex_unlock(&mu);
    /* Shutting down (nothing is sold; the client may try again), or no worker. */
    j->rq.out.result = down ? SALE_STORE_DOWN : SALE_ERROR;
    if (!down)
        snprintf(j->rq.out.message, sizeof(j->rq.out.message), "cannot start a worker");
    engine_resume(j);
}

static void workers_stop(void);

static int workers_start(void)
{
    if ((threads = calloc((size_t)svc.workers, sizeof(*threads))) == NULL ||
        (served = calloc((size_t)svc.workers, sizeof(*served))) == NULL ||
        (trips = malloc((size_t)svc.workers * sizeof(*trips))) == NULL) {
        free(threads);
        free(served);
        threads = NULL;
        served = NULL;
        return -1;
    }
    for (int i = 0; i < svc.workers; i++)
        atomic_init(&trips[i], 0);
    clock_cond_init_monotonic(&work_cv);
    started = 1;
    if (pthread_create(&reaper, NULL, reaper_main, NULL) != 0) {
        workers_stop();
        return -1;
    }
    reaper_started = 1;
    return 0;
}

/* Workers serve what is in the lines, then stop. */
static void workers_stop(void)
{
    if (!started)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_broadcast(&work_cv);
    for (struct line *l = lines; l; l = l->next)
        pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < running; i++)
        pthread_join(threads[i], NULL);
    pthread_mutex_lock(&mu);
    reaper_stopping = 1;
    pthread_mutex_unlock(&mu);
    if (reaper_started)
        pthread_join(reaper, NULL);
    while (lines) {
        struct line *l = lines;
        lines = l->next;
        pthread_cond_destroy(&l->cv);
        free(l);
    }
    pthread_cond_destroy(&work_cv);
    free(threads);
    threads = NULL;
    free(served);
    free((void *)trips);
    served = NULL;
    trips = NULL;
    running = idle = 0;
    memset(bucket, 0, sizeof(bucket));
    ready_head = ready_tail = NULL;
    waiting = NULL;
    started = 0;
}

const struct engine engine_workers = {
    .name = "workers",
    .locked = 1,
    .event_loop = 1,
    .start = workers_start,
    .stop = workers_stop,
    .submit = workers_submit,
};
