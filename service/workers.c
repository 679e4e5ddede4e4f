/* workers.c - Locked sales on an event loop (--combine N): each item has a line, and
 * each line belongs to one of at most --workers threads (by the item's name). A worker
 * takes the first sale of one of its lines (in turn), takes the lock for it (waiting as
 * the version waits) and, holding the grant, takes up to N - 1 more from the line: one
 * critical section serves them all. While sales keep coming it serves the next batch
 * under the same grant, up to a hold limit (sale_serve). A reaper answers 503
 * lock_timeout to a sale still in a line at its wait limit. */
#include "service/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* One item's line of sales. */
struct line {
    char item[ITEM_MAX + 1];
    struct sale_job *head, *tail; /* guarded by mu */
    struct sale_line serve;       /* how sale_serve takes from it and answers */
    struct worker *worker;
    struct line *next;            /* the worker's lines */
};

/* A thread and the lines it serves. */
struct worker {
    pthread_t thread;
    pthread_cond_t cv;            /* a line of its is not empty, or stopping */
    struct line *lines, *turn;    /* turn: the line it looks at first next time */
    int running;
};

/* mu guards every line, worker and stopping. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct worker *workers;    /* svc.workers of them, started on first use */
static int stopping, started, reaper_started;
static pthread_t reaper;

static struct sale_job *job_of(struct sale_request *rq)
{
    return (struct sale_job *)((char *)rq - offsetof(struct sale_job, rq));
}

/* Takes the first job of l; NULL when empty. With mu held. */
static struct sale_job *line_pop(struct line *l)
{
    struct sale_job *j = l->head;

    if (j && (l->head = j->next) == NULL)
        l->tail = NULL;
    return j;
}

/* Takes up to room sales from l into rqs after the have already there: a sale at its
 * wait limit is left for the reaper, and a sale with an idempotency key goes alone.
 * Called by sale_serve with the grant held. */
static int take_more(void *arg, struct sale_request **rqs, int have, int room)
{
    struct line *l = arg;
    long long now = lock_now_ms();
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
    while (l->head == NULL && !stopping && lock_now_ms() < until_ms) {
        struct timespec ts = lock_monotonic_at(until_ms);
        pthread_cond_timedwait(&l->worker->cv, &mu, &ts); /* cv runs on CLOCK_MONOTONIC */
    }
    more = l->head != NULL;
    pthread_mutex_unlock(&mu);
    return more;
}

static void answer(void *arg, struct sale_request **rqs, int n)
{
    (void)arg;
    for (int i = 0; i < n; i++)
        engine_resume(job_of(rqs[i]));
}

/* The next of w's lines with a sale waiting, from its turn on; NULL when none. */
static struct line *next_line(struct worker *w)
{
    struct line *start = w->turn ? w->turn : w->lines, *l = start;

    do {
        if (l == NULL)
            return NULL;
        if (l->head) {
            w->turn = l->next ? l->next : w->lines;
            return l;
        }
        l = l->next ? l->next : w->lines;
    } while (l != start);
    return NULL;
}

/* Serves one sale from l, with the grant it takes. Without mu. */
static void serve_first(struct line *l, struct sale_job *first)
{
    long left = (long)(first->deadline_ms - lock_now_ms());

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
    struct worker *w = arg;
    struct line *l;

    pthread_mutex_lock(&mu);
    for (;;) {
        while ((l = next_line(w)) == NULL && !stopping)
            pthread_cond_wait(&w->cv, &mu);
        if (l == NULL)
            break;   /* stopping, and its lines are empty */
        struct sale_job *first = line_pop(l);
        pthread_mutex_unlock(&mu);
        serve_first(l, first);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Answers lock_timeout to the sales of l at their wait limit. With mu held. */
static void reap(struct line *l, long long now)
{
    struct sale_job **p = &l->head, *prev = NULL;

    while (*p) {
        struct sale_job *j = *p;
        if (j->deadline_ms > now) {
            prev = j;
            p = &j->next;
            continue;
        }
        *p = j->next;
        if (l->tail == j)
            l->tail = prev;
        j->rq.out.result = SALE_LOCK_TIMEOUT;
        metrics_line_timeout();
        engine_resume(j);
    }
}

/* Every 10 ms: sales still in a line at their wait limit answer lock_timeout. */
static void *reaper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!stopping) {
        long long now = lock_now_ms();
        for (int i = 0; i < svc.workers; i++)
            for (struct line *l = workers[i].lines; l; l = l->next)
                reap(l, now);
        pthread_mutex_unlock(&mu);
        lock_sleep_ms(10);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* How long one grant serves batch after batch while sales keep coming: long enough to
 * serve several waves of requests for the price of one acquire and one release, short
 * enough that another instance's sales wait little (and within a third of the lease, as
 * the watchdog renews). A grant waits up to LINGER_MS for a next batch before it gives
 * the lock back, and not at all once another instance has asked for it. docs/
 * performance.md has the bench runs that chose these numbers. */
enum { HOLD_MS = 10, LINGER_MS = 1 };

static long hold_ms(void)
{
    return svc.ttl_ms / 3 < HOLD_MS ? svc.ttl_ms / 3 : HOLD_MS;
}

/* The worker an item's sales go to: FNV-1a of its name. */
static struct worker *worker_of(const char *item)
{
    unsigned h = 2166136261u;

    for (const char *p = item; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return &workers[h % (unsigned)svc.workers];
}

/* item's line, made (and its worker started) on first use; NULL when it cannot be. With
 * mu held. */
static struct line *line_for(const char *item)
{
    struct worker *w = worker_of(item);
    struct line *l;

    for (l = w->lines; l; l = l->next)
        if (strcmp(l->item, item) == 0)
            return l;
    if (!w->running) {
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            return NULL;
        w->running = 1;
    }
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return NULL;
    snprintf(l->item, sizeof(l->item), "%s", item);
    l->serve = (struct sale_line){ .take = take_more, .has_more = has_more, .answer = answer,
                                   .arg = l, .hold_ms = hold_ms(), .linger_ms = LINGER_MS };
    l->worker = w;
    l->next = w->lines;
    w->lines = l;
    return l;
}

void workers_submit(struct sale_job *j)
{
    struct line *l;

    j->next = NULL;
    j->deadline_ms = lock_now_ms() + svc.wait_ms;
    pthread_mutex_lock(&mu);
    if (!started || stopping || (l = line_for(j->item)) == NULL) {
        /* Shutting down (nothing is sold; the client may try again), or no worker. */
        int down = !started || stopping;
        pthread_mutex_unlock(&mu);
        j->rq.out.result = down ? SALE_REDIS_DOWN : SALE_ERROR;
        if (!down)
            snprintf(j->rq.out.message, sizeof(j->rq.out.message), "cannot start a worker");
        engine_resume(j);
        return;
    }
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    pthread_cond_signal(&l->worker->cv);
    pthread_mutex_unlock(&mu);
}

int workers_start(void)
{
    pthread_condattr_t attr;

    if ((workers = calloc((size_t)svc.workers, sizeof(*workers))) == NULL)
        return -1;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    for (int i = 0; i < svc.workers; i++)
        pthread_cond_init(&workers[i].cv, &attr);
    pthread_condattr_destroy(&attr);
    started = 1;
    if (pthread_create(&reaper, NULL, reaper_main, NULL) != 0) {
        workers_stop();
        return -1;
    }
    reaper_started = 1;
    return 0;
}

/* Workers serve what is in their lines, then stop. */
void workers_stop(void)
{
    if (!started)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    for (int i = 0; i < svc.workers; i++)
        pthread_cond_signal(&workers[i].cv);
    pthread_mutex_unlock(&mu);
    if (reaper_started)
        pthread_join(reaper, NULL);
    for (int i = 0; i < svc.workers; i++) {
        struct worker *w = &workers[i];
        if (w->running)
            pthread_join(w->thread, NULL);
        for (struct line *l = w->lines, *next; l; l = next) {
            next = l->next;
            free(l);
        }
        pthread_cond_destroy(&w->cv);
    }
    free(workers);
    workers = NULL;
    started = 0;
}
