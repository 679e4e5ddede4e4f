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

/* One server's share of a round: its groups' scripts in one batch, and with --replicas
 * one WAIT after them (it covers the share's writes). */
struct share {
    struct group *groups[GROUPS_MAX];
    int ng, wait_at;
    struct rd_batch b, confirm;
};

/* Appends one script per group of sh; LOCK_OK, or LOCK_ERROR with err (nothing is sent). */
static int share_build(struct share *sh, struct lock_error *err)
{
    int st = LOCK_OK;

    memset(&sh->b, 0, sizeof(sh->b));
    memset(&sh->confirm, 0, sizeof(sh->confirm));
    for (int g = 0; g < sh->ng && st == LOCK_OK; g++)
        st = sale_atomic_add(&sh->b, sh->groups[g]->rqs, sh->groups[g]->n, err);
    sh->wait_at = st == LOCK_OK ? sale_replicas_add(&sh->confirm) : -1;
    return st;
}

/* Every sale's outcome from its share's replies. Groups with no reply after an error say
 * outcome_unknown when their scripts were sent (they may have run), redis_unavailable
 * when nothing was. A sale its share's WAIT does not confirm answers outcome_unknown. */
static void share_answer(struct share *sh, const struct lock_error *err)
{
    for (int g = 0; g < sh->ng; g++) {
        struct group *gr = sh->groups[g];
        metrics_batch(gr->n);
        if (g < sh->b.n && sh->b.reply[g]) {
            sale_atomic_result(sh->b.reply[g], gr->rqs, gr->n);
            sale_replicas_check(&sh->confirm, sh->wait_at, gr->rqs, gr->n);
        } else {
            int down = lock_fault_is_io(err->fault) || lock_fault_is_cluster(err->fault);
            sale_set_all(gr->rqs, gr->n,
                         sh->b.sent ? SALE_OUTCOME_UNKNOWN : down ? SALE_REDIS_DOWN : SALE_ERROR,
                         sh->b.sent || down ? NULL : err->msg);
        }
    }
    rd_batch_reset(&sh->confirm);
    rd_batch_reset(&sh->b);
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

/* The groups sold: one round trip to each server their items are on (one but on a
 * cluster), all sent before any is read. */
static void run_groups(struct group *groups, int ng)
{
    static struct share shares[GROUPS_MAX];   /* the engine thread's alone */
    struct rd_trip trips[GROUPS_MAX];
    struct lock_error errs[GROUPS_MAX] = { 0 };
    int ns = 0, nt = 0, of[GROUPS_MAX];       /* of[t]: the share of trips[t] */
    char key[ITEM_MAX + 16];
    struct lock_error ignored;   /* no server: its share's trip says why */

    for (int g = 0, s; g < ng; g++) {
        snprintf(key, sizeof(key), "stock:{%s}", groups[g].rqs[0]->item);
        groups[g].server = rd_key_server(svc_redis, key, &ignored);
        for (s = 0; s < ns && shares[s].groups[0]->server != groups[g].server; s++)
            ;
        if (s == ns)
            shares[ns++].ng = 0;
        shares[s].groups[shares[s].ng++] = &groups[g];
    }
    for (int s = 0; s < ns; s++)
        if (share_build(&shares[s], &errs[s]) == LOCK_OK) {
            trips[nt] = (struct rd_trip){ .main = &shares[s].b,
                                          .after = shares[s].confirm.n ? &shares[s].confirm : NULL };
            of[nt++] = s;
        }
    rd_round_trips(svc_redis, trips, nt);
    for (int t = 0; t < nt; t++)
        if (trips[t].status != LOCK_OK)
            errs[of[t]] = trips[t].err;
    for (int s = 0; s < ns; s++)
        share_answer(&shares[s], &errs[s]);
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
            run_groups(groups, ng);
            ng = 0;
            g = group_for(groups, &ng, j);
        }
        g->rqs[g->n++] = &j->rq;
    }
    run_groups(groups, ng);
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
