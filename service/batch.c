/* batch.c - The atomic sale on an event loop: one thread takes everything queued, sends
 * one script per item (the sales of an item in one call) in a single write on its own
 * Redis connection, reads the replies, and resumes the connections. */
#include "service/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { GROUPS_MAX = RD_BATCH_MAX };

/* The queue; mu guards it and stopping. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct sale_job *queue_head, *queue_tail;
static int stopping, started;
static pthread_t thread;

/* The jobs of one item in this round, answered by one script; server: its item's Redis
 * (a cluster's node: rd_key_server; -1 when none serves it now). */
struct group {
    struct sale_request *rqs[SALE_BATCH_MAX];
    int n;
    int server;
};

/* Sends one script per group in one round trip and sets every sale's outcome. Groups
 * with no reply after an error say outcome_unknown when their scripts were sent (they
 * may have run), redis_unavailable when nothing was. With --replicas, one WAIT rides
 * after every script as the round trip's after (sent again behind a script Redis wanted
 * loaded first): it covers the whole round's writes, and a sale it does not confirm
 * answers outcome_unknown. */
static void run_groups(struct group **groups, int ng)
{
    struct rd_batch b = { 0 }, confirm = { 0 };
    struct lock_error err = { 0 };
    int st = LOCK_OK, wait_at = -1;

    for (int g = 0; g < ng && st == LOCK_OK; g++)
        st = sale_atomic_add(&b, groups[g]->rqs, groups[g]->n, &err);
    if (st == LOCK_OK) {
        wait_at = sale_replicas_add(&confirm);
        st = rd_round_trip(svc_redis, NULL, &b, confirm.n ? &confirm : NULL, &err);
    }
    for (int g = 0; g < ng; g++) {
        metrics_batch(groups[g]->n);
        if (g < b.n && b.reply[g]) {
            sale_atomic_result(b.reply[g], groups[g]->rqs, groups[g]->n);
            sale_replicas_check(&confirm, wait_at, groups[g]->rqs, groups[g]->n);
        } else {
            sale_set_all(groups[g]->rqs, groups[g]->n,
                         b.sent ? SALE_OUTCOME_UNKNOWN
                         : lock_fault_is_io(err.fault) ? SALE_REDIS_DOWN : SALE_ERROR,
                         b.sent || lock_fault_is_io(err.fault) ? NULL : err.msg);
        }
    }
    if (wait_at >= 0)
        rd_batch_reset(&confirm);
    rd_batch_reset(&b);
}

/* The group of j's item in groups[0..*ng), or a new one: a sale with an idempotency key
 * goes alone. NULL when every group is taken. */
static struct group *group_for(struct group *groups, int *ng, const struct sale_job *j)
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

/* The groups, one round trip per server their items are on (one but on a cluster). */
static void run_by_server(struct group *groups, int ng)
{
    struct group *of[GROUPS_MAX];
    char key[ITEM_MAX + 16];
    struct lock_error err;
    int done[GROUPS_MAX] = { 0 };

    for (int g = 0; g < ng; g++) {
        snprintf(key, sizeof(key), "stock:{%s}", groups[g].rqs[0]->item);
        groups[g].server = rd_key_server(svc_redis, key, &err);
    }
    for (int g = 0; g < ng; g++) {
        int n = 0;
        if (done[g])
            continue;
        for (int h = g; h < ng; h++)
            if (!done[h] && groups[h].server == groups[g].server) {
                of[n++] = &groups[h];
                done[h] = 1;
            }
        run_groups(of, n);
    }
}

/* One round: the queued jobs grouped by item, sold, answered. */
static void serve(struct sale_job *jobs)
{
    static struct group groups[GROUPS_MAX];   /* the engine thread's alone */
    struct group *g;
    int ng = 0;

    for (struct sale_job *j = jobs; j; j = j->next) {
        if (j->rq.idem_key && sale_idem_bind(&j->rq) != 0)
            continue;   /* answered: the key was used for another item, or no Redis */
        if ((g = group_for(groups, &ng, j)) == NULL) {
            /* More items at once than groups: sell these now, the rest after. */
            run_by_server(groups, ng);
            ng = 0;
            g = group_for(groups, &ng, j);
        }
        g->rqs[g->n++] = &j->rq;
    }
    run_by_server(groups, ng);
}

static void *batch_main(void *arg)
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
            engine_resume(j);
        }
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

void batch_submit(struct sale_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&mu);
    if (!started || stopping) {
        /* Shutting down: nothing is sold; the client may try again. */
        pthread_mutex_unlock(&mu);
        j->rq.out.result = SALE_REDIS_DOWN;
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

int batch_start(void)
{
    if (pthread_create(&thread, NULL, batch_main, NULL) != 0)
        return -1;
    started = 1;
    return 0;
}

void batch_stop(void)
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
