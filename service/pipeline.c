/* pipeline.c - Sales on an event loop: libmicrohttpd suspends each sale's connection and
 * queues the sale here; no thread per request waits.
 *
 * The atomic sale: one thread takes everything queued, sends one script per item (the
 * sales of an item in one batch) in a single write on its own Redis connection, reads
 * the replies, and resumes the connections.
 *
 * A locked sale with --combine N: each item has a worker thread and a line. The worker
 * takes the first sale of the line, takes the lock for it (waiting as the version waits),
 * and, holding the grant, takes up to N - 1 more from the line: one critical section
 * serves them all. While sales keep coming it serves the next batch under the same
 * grant, up to a hold limit (sale_serve). A reaper answers 503 lock_timeout to a sale
 * still in a line at its wait limit. */
#include "service/pipeline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { GROUP_MAX = SALE_BATCH_MAX };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;   /* guards queue, stopping */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct sale_job *queue_head, *queue_tail;
static int stopping;
static pthread_t thread;
static int started;

/* The jobs of one item in this round, answered by one script. */
struct group {
    struct sale_request *rqs[GROUP_MAX];
    int n;
    int answered;                 /* its reply came and set the outcomes */
};

static void fail_all(struct sale_job *jobs, enum sale_result res, const char *msg)
{
    for (struct sale_job *j = jobs; j; j = j->next) {
        j->rq.out.result = res;
        if (msg)
            snprintf(j->rq.out.message, sizeof(j->rq.out.message), "%s", msg);
    }
}

/* Sends one script per group not yet answered, all in one write, and reads every reply;
 * a group Redis refused with NOSCRIPT (it forgot the script: a restart) goes again once
 * the script is loaded. Groups still unanswered on an I/O error say outcome_unknown:
 * their scripts were sent, and may have run. */
static void run_groups(redisContext *c, struct group *groups, int ng)
{
    struct lock_error err = { 0 };
    int io;

    for (int attempt = 0; attempt < 2; attempt++) {
        int left = 0;

        if (attempt == 1 && sale_atomic_load(c, 1, &err) != LOCK_OK)
            break;
        for (int g = 0; g < ng; g++) {
            char *cmd;
            int len;
            if (groups[g].answered)
                continue;
            if ((len = sale_atomic_format(groups[g].rqs, groups[g].n, &cmd, &err)) < 0)
                goto out_fail;
            redisAppendFormattedCommand(c, cmd, (size_t)len);
            free(cmd);
        }
        for (int g = 0; g < ng; g++) {
            redisReply *r;
            if (groups[g].answered)
                continue;
            if (redisGetReply(c, (void **)&r) != REDIS_OK)
                goto out_fail;
            if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
                left++;
            } else {
                sale_atomic_result(r, groups[g].rqs, groups[g].n);
                groups[g].answered = 1;
                metrics_batch(groups[g].n);
            }
            freeReplyObject(r);
        }
        if (left == 0)
            return;
    }

out_fail:
    io = c->err != 0;
    if (io)
        store_drop();
    for (int g = 0; g < ng; g++)
        if (!groups[g].answered)
            for (int i = 0; i < groups[g].n; i++)
                groups[g].rqs[i]->out.result = io ? SALE_OUTCOME_UNKNOWN : SALE_ERROR;
}

/* One round: the queued jobs grouped by item, sold, answered. */
static void serve(struct sale_job *jobs)
{
    static struct group groups[64];
    struct lock_error err = { 0 };
    redisContext *c = store_conn();
    int ng = 0;

    if (c == NULL) {
        fail_all(jobs, SALE_REDIS_DOWN, NULL);
        return;
    }
    if (sale_atomic_load(c, 0, &err) != LOCK_OK) {
        if (err.io)
            store_drop();
        fail_all(jobs, err.io ? SALE_REDIS_DOWN : SALE_ERROR, err.io ? NULL : err.msg);
        return;
    }
    for (struct sale_job *j = jobs; j; j = j->next) {
        int g;
        for (g = 0; g < ng; g++)
            if (!j->rq.idem_key && !groups[g].rqs[0]->idem_key && groups[g].n < GROUP_MAX &&
                strcmp(groups[g].rqs[0]->item, j->rq.item) == 0)
                break; /* a sale with an idempotency key goes alone */
        if (g == ng) {
            if (ng == (int)(sizeof(groups) / sizeof(groups[0]))) {
                /* More items at once than groups: sell these now, the rest after. */
                run_groups(c, groups, ng);
                if ((c = store_conn()) == NULL) {
                    for (struct sale_job *k = j; k; k = k->next)
                        k->rq.out.result = SALE_REDIS_DOWN;
                    return;
                }
                ng = g = 0;
            }
            groups[ng].n = groups[ng].answered = 0;
            ng++;
        }
        groups[g].rqs[groups[g].n++] = &j->rq;
    }
    run_groups(c, groups, ng);
}

static void *pipeline_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (queue_head == NULL && !stopping)
            pthread_cond_wait(&cv, &mu);
        if (queue_head == NULL && stopping)
            break;
        struct sale_job *jobs = queue_head;
        queue_head = queue_tail = NULL;
        pthread_mutex_unlock(&mu);

        serve(jobs);
        for (struct sale_job *j = jobs, *next; j; j = next) {
            next = j->next; /* the job may be freed as soon as its connection resumes */
            j->done = 1;
            MHD_resume_connection(j->conn);
        }
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* --- locked sales, combined: a worker and a line per item --- */

struct worker {
    char item[ITEM_MAX + 1];
    pthread_t thread;
    pthread_cond_t cv;            /* the line is not empty, or stopping */
    struct sale_job *head, *tail; /* the line, guarded by mu */
    struct sale_line line;        /* how sale_serve takes from it and answers */
    struct worker *next;
};

static struct worker *workers;    /* guarded by mu; freed by pipeline_stop */
static pthread_t reaper;
static int reaper_started;

static void resume(struct sale_job *j)
{
    j->done = 1;
    MHD_resume_connection(j->conn);
}

static struct sale_job *job_of(struct sale_request *rq)
{
    return (struct sale_job *)((char *)rq - offsetof(struct sale_job, rq));
}

/* Takes up to room sales from w's line into rqs after the have already there, skipping
 * none: a sale at its wait limit is left for the reaper, and a sale with an idempotency
 * key goes alone. Called by sale_serve with the grant held. */
static int take_more(void *arg, struct sale_request **rqs, int have, int room)
{
    struct worker *w = arg;
    long long now = lock_now_ms();
    int n = 0;

    pthread_mutex_lock(&mu);
    while (w->head && n < room && w->head->deadline_ms > now) {
        struct sale_job *j = w->head;
        if (have + n > 0 && (j->rq.idem_key || rqs[0]->idem_key))
            break;
        w->head = j->next;
        if (w->head == NULL)
            w->tail = NULL;
        rqs[have + n++] = &j->rq;
    }
    pthread_mutex_unlock(&mu);
    return n;
}

/* 1 when a sale is in w's line, waiting for one until the monotonic time until_ms. */
static int has_more(void *arg, long long until_ms)
{
    struct worker *w = arg;
    int more;

    pthread_mutex_lock(&mu);
    while (w->head == NULL && !stopping && lock_now_ms() < until_ms) {
        struct timespec ts = { until_ms / 1000, (until_ms % 1000) * 1000000L };
        pthread_cond_timedwait(&w->cv, &mu, &ts); /* w->cv runs on CLOCK_MONOTONIC */
    }
    more = w->head != NULL;
    pthread_mutex_unlock(&mu);
    return more;
}

static void answer(void *arg, struct sale_request **rqs, int n)
{
    (void)arg;
    for (int i = 0; i < n; i++)
        resume(job_of(rqs[i]));
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    pthread_mutex_lock(&mu);
    for (;;) {
        while (w->head == NULL && !stopping)
            pthread_cond_wait(&w->cv, &mu);
        if (w->head == NULL)
            break;
        struct sale_job *first = w->head;
        w->head = first->next;
        if (w->head == NULL)
            w->tail = NULL;
        pthread_mutex_unlock(&mu);

        long left = (long)(first->deadline_ms - lock_now_ms());
        if (left <= 0) {
            first->rq.out.result = SALE_LOCK_TIMEOUT;
            atomic_fetch_add(&svc_lock->timeouts, 1);
            resume(first);
        } else {
            sale_serve(&first->rq, left, &w->line);
        }
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Every 10 ms: sales still in a line at their wait limit answer lock_timeout. */
static void *reaper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!stopping) {
        long long now = lock_now_ms();
        for (struct worker *w = workers; w; w = w->next) {
            struct sale_job **p = &w->head, *prev = NULL;
            while (*p) {
                struct sale_job *j = *p;
                if (j->deadline_ms > now) {
                    prev = j;
                    p = &j->next;
                    continue;
                }
                *p = j->next;
                if (w->tail == j)
                    w->tail = prev;
                j->rq.out.result = SALE_LOCK_TIMEOUT;
                atomic_fetch_add(&svc_lock->timeouts, 1);
                resume(j);
            }
        }
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
 * the lock back, and not at all once another instance has asked for it. The README
 * has the bench runs that chose these numbers. */
enum { HOLD_MS = 10, LINGER_MS = 1 };

static long hold_ms(void)
{
    return svc.ttl_ms / 3 < HOLD_MS ? svc.ttl_ms / 3 : HOLD_MS;
}

/* Queues a locked sale on its item's line, starting the item's worker on first use. */
static void submit_locked(struct sale_job *j)
{
    struct worker *w;

    j->deadline_ms = lock_now_ms() + svc.wait_ms;
    for (w = workers; w; w = w->next)
        if (strcmp(w->item, j->item) == 0)
            break;
    if (w == NULL && (w = calloc(1, sizeof(*w))) != NULL) {
        snprintf(w->item, sizeof(w->item), "%s", j->item);
        w->line = (struct sale_line){ take_more, has_more, answer, w, hold_ms(), LINGER_MS };
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cv, &attr);
        pthread_condattr_destroy(&attr);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            pthread_cond_destroy(&w->cv);
            free(w);
            w = NULL;
        } else {
            w->next = workers;
            workers = w;
        }
    }
    if (w == NULL) {
        pthread_mutex_unlock(&mu);
        j->rq.out.result = SALE_ERROR;
        snprintf(j->rq.out.message, sizeof(j->rq.out.message), "cannot start a worker");
        resume(j);
        return;
    }
    if (w->tail)
        w->tail->next = j;
    else
        w->head = j;
    w->tail = j;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&mu);
}

void pipeline_submit(struct sale_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&mu);
    if (!started || stopping) {
        /* Shutting down: nothing is sold; the client may try again. */
        pthread_mutex_unlock(&mu);
        j->rq.out.result = SALE_REDIS_DOWN;
        j->done = 1;
        MHD_resume_connection(j->conn);
        return;
    }
    if (!svc.atomic) {
        submit_locked(j); /* unlocks mu */
        return;
    }
    if (queue_tail)
        queue_tail->next = j;
    else
        queue_head = j;
    queue_tail = j;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

int pipeline_start(void)
{
    if (pthread_create(&thread, NULL, pipeline_main, NULL) != 0)
        return -1;
    started = 1;
    if (!svc.atomic) {
        if (pthread_create(&reaper, NULL, reaper_main, NULL) != 0) {
            pipeline_stop();
            return -1;
        }
        reaper_started = 1;
    }
    return 0;
}

void pipeline_stop(void)
{
    if (!started)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&cv);
    for (struct worker *w = workers; w; w = w->next)
        pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    if (reaper_started)
        pthread_join(reaper, NULL);
    /* Workers serve what is in their lines, then stop. */
    while (workers) {
        struct worker *w = workers;
        pthread_join(w->thread, NULL);
        workers = w->next;
        pthread_cond_destroy(&w->cv);
        free(w);
    }
    started = 0;
}
