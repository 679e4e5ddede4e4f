/* atomic.c - The atomic sale, a baseline and no lock: the store sells each item's waiting
 * sales whole by itself (on Redis, one script per item). It runs on an event loop: one
 * thread takes everything queued, groups it by item, has the store sell every group at
 * once (one round trip per server), and resumes the connections. Where the store's items
 * are spread over servers (a Redis Cluster), a sale of a server that is not answering is
 * answered at once, the thread watches the servers every WATCH_MS, and a round gives up
 * on a server silent for the layer's silence (100 ms): one server cut off stalls the
 * others' sales once, that long, not for its timeout. (A thread per server would stall
 * none, and cost a third of the sales a second on 2 cores: docs/performance.md.) */
#include "service/sale/engine.h"

#include <pthread.h>
#include <string.h>

#include "common/clock.h"
#include "service/config/config.h"
#include "service/metrics/metrics.h"
#include "service/store/store.h"

enum { GROUPS_MAX = 64, WATCH_MS = 10 };

/* The queue; mu guards it and stopping. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static struct sale_job *queue_head, *queue_tail;
static int stopping, started;
static int spread;                /* items on several servers (a cluster): watched */
static pthread_t thread;

/* The group of j's item among groups[0..*ng), or a new one: a sale with an idempotency key
 * goes alone. NULL when every group is taken. */
static struct store_group *group_for(struct store_group *groups, int *ng, const struct sale_job *j)
{
    for (int g = 0; g < *ng; g++)
        if (!j->rq.idem_key && !groups[g].rqs[0]->idem_key && groups[g].n < SALE_BATCH_MAX &&
            strcmp(groups[g].rqs[0]->item, j->rq.item) == 0)
            return &groups[g];
    if (*ng == GROUPS_MAX)
        return NULL;
    groups[*ng].n = 0;
    return &groups[(*ng)++];
}

/* The groups sold by the store, all at once. */
static void sell_groups(struct store_group *groups, int ng)
{
    struct store_group *each[GROUPS_MAX];

    for (int g = 0; g < ng; g++) {
        each[g] = &groups[g];
        metrics_batch(groups[g].n);
    }
    svc_store->ops->sell_atomic(svc_store, each, ng);
}

/* One round: the queued jobs grouped by item, sold, answered. */
static void serve(struct sale_job *jobs)
{
    static struct store_group groups[GROUPS_MAX];   /* the engine thread's alone */
    struct store_group *g;
    int ng = 0;

    for (struct sale_job *j = jobs; j; j = j->next) {
        memset(&j->rq.out, 0, sizeof(j->rq.out));
        if (j->rq.idem_key && svc_store->ops->bind_key(svc_store, &j->rq) != 0)
            continue;   /* answered: the key was used for another item, or no store */
        if ((g = group_for(groups, &ng, j)) == NULL) {
            /* More items at once than groups: sell these now, the rest after. */
            sell_groups(groups, ng);
            ng = 0;
            g = group_for(groups, &ng, j);
        }
        g->rqs[g->n++] = &j->rq;
    }
    sell_groups(groups, ng);
}

/* With spread items, every WATCH_MS whatever the queue holds: a server that stopped
 * answering found though no sale of it comes (the store's watch). With mu held; *last:
 * when it last ran. */
static void watch_due(long long *last)
{
    if (!spread || !svc_store->ops->watch || clock_now_ms() < *last + WATCH_MS)
        return;
    *last = clock_now_ms();
    pthread_mutex_unlock(&mu);
    svc_store->ops->watch(svc_store);
    pthread_mutex_lock(&mu);
}

static void *atomic_main(void *arg)
{
    long long watched = 0;

    (void)arg;
    if (spread && svc_store->ops->worker)   /* cut loose from a server that goes silent */
        svc_store->ops->worker(svc_store, 0, NULL);
    pthread_mutex_lock(&mu);
    for (;;) {
        while (queue_head == NULL && !stopping) {
            if (spread)
                clock_cond_wait_until(&cv, &mu, watched + WATCH_MS);
            else
                pthread_cond_wait(&cv, &mu);
            watch_due(&watched);
        }
        if (queue_head == NULL && stopping)
            break;
        struct sale_job *jobs = queue_head;
        queue_head = queue_tail = NULL;
        pthread_mutex_unlock(&mu);

        serve(jobs);
        for (struct sale_job *j = jobs, *next; j; j = next) {
            next = j->next; /* the job may be freed as soon as its connection resumes */
            engine_resume(j);
        }
        pthread_mutex_lock(&mu);
        watch_due(&watched);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void atomic_submit(struct sale_job *j)
{
    if (spread && engine_answer_silent(j))   /* its server does not answer: none waits on it */
        return;
    j->next = NULL;
    pthread_mutex_lock(&mu);
    if (!started || stopping) {
        /* Shutting down: nothing is sold; the client may try again. */
        pthread_mutex_unlock(&mu);
        j->rq.out.result = SALE_STORE_DOWN;
        engine_resume(j);
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

static int atomic_start(void)
{
    spread = svc_store->spread;
    clock_cond_init_monotonic(&cv);   /* (timed waits: the watch) */
    if (pthread_create(&thread, NULL, atomic_main, NULL) != 0)
        return -1;
    started = 1;
    return 0;
}

static void atomic_stop(void)
{
    if (!started)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    started = 0;
}

/* The atomic sale says what it is here, and only here. */
const struct engine engine_atomic = {
    .name = "atomic",
    .alias = "script",
    .title = "the whole sale in one step of the store, no lock: a Lua script in Redis,"
             " one UPDATE in MariaDB",
    .flaw = "none for one item; no room for work outside the store",
    .locked = 0,
    .event_loop = 1,
    .start = atomic_start,
    .stop = atomic_stop,
    .submit = atomic_submit,
};
