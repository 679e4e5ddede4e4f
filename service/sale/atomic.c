/* atomic.c - The atomic sale, a baseline and no lock: the store sells each item's waiting
 * sales whole by itself (on Redis, one script per item). It runs on an event loop: one
 * thread takes everything queued, groups it by item, has the store sell every group at
 * once (one round trip per server), and resumes the connections. Where the store's items
 * are spread over servers (a Redis Cluster), each sale goes to its server's lane, a
 * thread of its own (the engine's thread keeps those of a server not known yet, and
 * watches the servers): a server that stops answering holds only its own items' sales,
 * and once it is found silent they are answered at once. */
#include "service/sale/engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "service/config/config.h"
#include "service/metrics/metrics.h"
#include "service/store/store.h"

enum { GROUPS_MAX = 64, WATCH_MS = 10 };

/* A queue of sales and the thread that serves it: the engine's own (every sale comes
 * here first) and, for spread items, one lane per server. */
struct lane {
    struct sale_job *head, *tail;
    struct store_group *groups;   /* its thread's, for serve (GROUPS_MAX) */
    pthread_cond_t cv;
    pthread_t thread;
    int started;
};

/* mu guards every queue, stopping and started. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct lane front;
static struct lane lanes[STORE_SERVERS_MAX];
static int stopping, started;
static int spread;                /* items on several servers: a lane each (item_server) */

/* Appends j to l's queue and wakes its thread; with mu held. */
static void lane_push(struct lane *l, struct sale_job *j)
{
    j->next = NULL;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    pthread_cond_signal(&l->cv);
}

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

/* One round: the queued jobs grouped by item (in groups: the serving thread's own, of
 * GROUPS_MAX), sold, answered. */
static void serve(struct sale_job *jobs, struct store_group *groups)
{
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

/* Serves jobs (groups: serve's), then resumes their connections. */
static void serve_and_resume(struct sale_job *jobs, struct store_group *groups)
{
    serve(jobs, groups);
    for (struct sale_job *j = jobs, *next; j; j = next) {
        next = j->next; /* the job may be freed as soon as its connection resumes */
        engine_resume(j);
    }
}

/* A lane's thread (arg: its struct lane): serves what its queue holds, all of it at
 * once, until the engine stops. */
static void *lane_main(void *arg)
{
    struct lane *l = arg;

    if (svc_store->ops->worker)   /* its server's one caller, cut loose should it go silent */
        svc_store->ops->worker(svc_store, 0);
    pthread_mutex_lock(&mu);
    for (;;) {
        while (l->head == NULL && !stopping)
            pthread_cond_wait(&l->cv, &mu);
        if (l->head == NULL && stopping)
            break;
        struct sale_job *jobs = l->head;
        l->head = l->tail = NULL;
        pthread_mutex_unlock(&mu);
        serve_and_resume(jobs, l->groups);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* The engine's thread: takes what is queued (spread items: those of a server not known
 * yet) and serves it; with spread items, watches the servers every WATCH_MS. */
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
    pthread_mutex_lock(&mu);
    for (;;) {
        while (front.head == NULL && !stopping) {
            if (spread)
                clock_cond_wait_until(&front.cv, &mu, watched + WATCH_MS);
            else
                pthread_cond_wait(&front.cv, &mu);
            watch_due(&watched);
        }
        if (front.head == NULL && stopping)
            break;
        struct sale_job *jobs = front.head;
        front.head = front.tail = NULL;
        pthread_mutex_unlock(&mu);
        serve_and_resume(jobs, front.groups);
        pthread_mutex_lock(&mu);
        watch_due(&watched);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* The queue of j: its item's server's lane (started on first use), or the engine's own
 * (one server; a server not known yet; a lane that cannot start). With mu held. */
static struct lane *lane_of(const struct sale_job *j)
{
    int s = spread ? svc_store->ops->item_server(svc_store, j->item) : -1;
    struct lane *l = s >= 0 && s < STORE_SERVERS_MAX ? &lanes[s] : &front;

    if (l != &front && !l->started && l->groups == NULL)
        l->groups = calloc(GROUPS_MAX, sizeof(*l->groups));
    if (l != &front && !l->started && l->groups &&
        pthread_create(&l->thread, NULL, lane_main, l) == 0)
        l->started = 1;
    return l == &front || l->started ? l : &front;
}

static void atomic_submit(struct sale_job *j)
{
    if (spread && engine_answer_silent(j))   /* its server does not answer: none waits on it */
        return;
    pthread_mutex_lock(&mu);
    if (!started || stopping) {
        /* Shutting down: nothing is sold; the client may try again. */
        pthread_mutex_unlock(&mu);
        j->rq.out.result = SALE_STORE_DOWN;
        engine_resume(j);
        return;
    }
    lane_push(lane_of(j), j);
    pthread_mutex_unlock(&mu);
}

static int atomic_start(void)
{
    spread = svc_store->spread && svc_store->ops->item_server;
    if (front.groups == NULL && (front.groups = calloc(GROUPS_MAX, sizeof(*front.groups))) == NULL)
        return -1;
    clock_cond_init_monotonic(&front.cv);   /* (timed waits: the watch) */
    for (int i = 0; i < STORE_SERVERS_MAX; i++)
        pthread_cond_init(&lanes[i].cv, NULL);
    if (pthread_create(&front.thread, NULL, atomic_main, NULL) != 0)
        return -1;
    started = 1;
    return 0;
}

/* Stops the engine's thread (what it holds is handed on), then the lanes (each serves
 * what it holds first). */
static void atomic_stop(void)
{
    if (!started)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&front.cv);
    pthread_mutex_unlock(&mu);
    pthread_join(front.thread, NULL);
    pthread_mutex_lock(&mu);
    for (int i = 0; i < STORE_SERVERS_MAX; i++)
        pthread_cond_signal(&lanes[i].cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < STORE_SERVERS_MAX; i++) {
        if (lanes[i].started)
            pthread_join(lanes[i].thread, NULL);
        lanes[i].started = 0;
        free(lanes[i].groups);
        lanes[i].groups = NULL;
    }
    free(front.groups);
    front.groups = NULL;
    started = 0;
}

/* The atomic sale says what it is here, and only here. */
const struct engine engine_atomic = {
    .name = "atomic",
    .alias = "script",
    .title = "the whole sale in one Lua script, no lock",
    .flaw = "none for one key; no room for work outside Redis",
    .locked = 0,
    .event_loop = 1,
    .start = atomic_start,
    .stop = atomic_stop,
    .submit = atomic_submit,
};
