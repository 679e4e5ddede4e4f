/* wait.c - The wait policies: how a refused acquire learns that the lock is free.
 *
 * local:  the store blocks by itself (a pthread mutex).
 * poll:   try, sleep retry_ms, try again: the seeds' loop. Every waiting thread of every
 *         process asks Redis, and one that happens to ask right after a release wins:
 *         others can starve.
 * notify: release publishes on the lock's channel (`lock:{I}`, a PUBLISH riding in the
 *         release's round trip). One subscriber thread per process (PSUBSCRIBE lock:{*})
 *         counts the messages per key and wakes that key's first waiter. Threads of one
 *         process queue for a key first come first served, so only the first asks Redis.
 *         It reads the key's message count before each try and, refused, sleeps until
 *         the count moves: a release between its try and its sleep still wakes it. It
 *         never sleeps past the holder's remaining lease (a lost message costs at most
 *         that), and while the subscriber is disconnected it polls.
 *         On Redis Cluster the channels are sharded (SPUBLISH; one SSUBSCRIBE per key
 *         waited on, on the node of its slot, made by the subscriber thread within
 *         SHARD_POLL_MS of the first wait; until Redis confirms it, that key's waiters
 *         poll). A slot that moves ends its channels' subscriptions (Redis says
 *         sunsubscribe): they are made again on the slot's new node.
 *         Between processes: a refused waiter says so (PUBLISH lock:{I} "wanted <id>");
 *         a holder may ask lock_grant_is_wanted() and give the lock up early, and then
 *         its process's next try waits for the other's release (at most retry_ms), so
 *         the lock goes to the one that asked instead of back to the holder.
 */
#include "lock/internal.h"
#include "lock/hash.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A thread waiting in a key's queue; lives on its stack. */
struct waiter {
    pthread_cond_t cv;
    struct waiter *next;
};

/* One key's queue. Created on first use, kept until the client is destroyed. */
struct key_queue {
    char key[LOCK_KEY_MAX];
    pthread_mutex_t mu;           /* guards everything below */
    unsigned long messages;       /* release messages seen for this key */
    struct waiter *first, *last;  /* first come first served; first asks Redis */
    char holder[LOCK_OWNER_MAX];  /* the owner that holds it through this queue */
    int holds;                    /* its grants not yet released (nested ones too) */
    unsigned long wanted;         /* "wanted" messages seen from other processes */
    unsigned long wanted_at_grant;/* wanted when the holder's grant was made */
    long long yield_until;        /* monotonic: we gave the lock up to another process
                                     that asked; our next try waits for its release */
    /* Cluster: the subscription to this key's sharded channel (the subscriber thread's) */
    atomic_int subscribed;        /* 1 once Redis confirmed it, until it ends */
    int asked;                    /* SSUBSCRIBE sent, not yet answered (subscriber's) */
    int server;                   /* the node it was sent to (subscriber's) */
    size_t len;                   /* strlen(key) */
    struct key_queue *next;       /* every queue, newest first */
    struct key_queue *hnext;      /* the next in its bucket */
};

/* Queues found by their key's hash: a message of one key among thousands waited on (a
 * cluster's many items) finds its queue in a step, not a walk through all of them. */
enum { QUEUE_BUCKETS = 1024 };

struct notify {
    struct lock_client *lc;
    pthread_mutex_t table_mu;     /* guards queues, bucket, count, sub */
    struct key_queue *queues;
    struct key_queue *bucket[QUEUE_BUCKETS];
    atomic_int unasked;           /* cluster: some key may need its SSUBSCRIBE sent */
    int count;
    pthread_t thread;
    struct rd_conn *sub;          /* the subscriber's connection, while connected */
    atomic_int connected;
    atomic_int stopping;
    int sharded;                  /* Redis Cluster: SPUBLISH, SSUBSCRIBE per key */
};

enum { QUEUES_MAX = 4096 };
/* Cluster: how often the subscriber looks for keys to subscribe to. */
enum { SHARD_POLL_MS = 20 };
/* The subscriber's liveness check: silent this long, it PINGs; silent as long again, the
 * connection is taken as dead (a partition sends no reset) and made anew. */
enum { SUB_IDLE_MS = 1000 };

/* Waits on cv until the monotonic time until_ms; returns ETIMEDOUT once it has passed. */
static int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long until_ms)
{
    struct timespec ts = lock_monotonic_at(until_ms);
    return pthread_cond_timedwait(cv, mu, &ts);
}

static void waiter_init(struct waiter *w)
{
    lock_cond_init_monotonic(&w->cv);
    w->next = NULL;
}

/* The queue for key; created when create is set. NULL when there is none (or no room). */
static struct key_queue *queue_for(struct notify *n, const char *key, size_t len, int create)
{
    struct key_queue *q;
    unsigned h = lock_hash(key, len) % QUEUE_BUCKETS;

    pthread_mutex_lock(&n->table_mu);
    for (q = n->bucket[h]; q; q = q->hnext)
        if (q->len == len && memcmp(q->key, key, len) == 0)
            goto out_unlock;
    if (!create || len >= LOCK_KEY_MAX || n->count >= QUEUES_MAX ||
        (q = calloc(1, sizeof(*q))) == NULL)
        goto out_unlock;
    memcpy(q->key, key, len);
    q->len = len;
    pthread_mutex_init(&q->mu, NULL);
    q->next = n->queues;
    n->queues = q;
    q->hnext = n->bucket[h];
    n->bucket[h] = q;
    n->count++;
    atomic_store(&n->unasked, 1);
out_unlock:
    pthread_mutex_unlock(&n->table_mu);
    return q;
}

/* 1 when a release of q's key will be heard: the subscription is up (for this key's
 * channel, on a cluster). */
static int listened(struct notify *n, struct key_queue *q)
{
    return n->sharded ? atomic_load(&q->subscribed) : atomic_load(&n->connected);
}

/* Counts a message for q and wakes its first waiter. */
static void queue_bump(struct key_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->messages++;
    if (q->first)
        pthread_cond_signal(&q->first->cv);
    pthread_mutex_unlock(&q->mu);
}

/* After a reconnect or a disconnect, messages may have been missed: every first waiter
 * tries again (and, disconnected, goes on polling). */
static void bump_all(struct notify *n)
{
    pthread_mutex_lock(&n->table_mu);
    for (struct key_queue *q = n->queues; q; q = q->next)
        queue_bump(q);
    pthread_mutex_unlock(&n->table_mu);
}

/* A message on a lock's channel: "released <instance id>" or "wanted <instance id>".
 * Our own are ignored: a release in this process hands over to the local queue
 * directly (lock_wait_released), and we do not ask ourselves for the lock. */
static void heard(struct notify *n, const struct rd_reply *channel, const char *payload)
{
    const char *id = strchr(payload, ' ');
    struct key_queue *q;

    if (id == NULL || strcmp(id + 1, n->lc->cfg.instance_id) == 0)
        return;
    q = queue_for(n, channel->str, channel->len, 0);
    if (strncmp(payload, "released ", 9) == 0) {
        atomic_fetch_add(&n->lc->notifications, 1);
        if (q)
            queue_bump(q);
    } else if (strncmp(payload, "wanted ", 7) == 0 && q) {
        pthread_mutex_lock(&q->mu);
        q->wanted++;
        pthread_mutex_unlock(&q->mu);
    }
}

/* A connection subscribed to every lock's channel; NULL (after a short sleep) when the
 * data Redis cannot be reached now. */
static struct rd_conn *subscribe(struct notify *n)
{
    struct lock_error err;
    struct rd_conn *c = rd_conn_open(n->lc->redis, NULL, &err);
    struct rd_reply *r = NULL;

    if (c && (r = rd_conn_call(c, RD_T(RD_ARRAY), 2 * SUB_IDLE_MS, &err, "PSUBSCRIBE lock:{*}")) != NULL) {
        rd_reply_free(r);
        return c;   /* its reads block until a message comes */
    }
    rd_conn_close(c);
    lock_sleep_ms(100);
    return NULL;
}

/* Sets the subscriber's connection (NULL: none), and wakes every first waiter: messages
 * may have been missed while it changed. */
static void set_sub(struct notify *n, struct rd_conn *c)
{
    pthread_mutex_lock(&n->table_mu);
    n->sub = c;
    pthread_mutex_unlock(&n->table_mu);
    atomic_store(&n->connected, c != NULL);
    bump_all(n);
}

static void *subscriber_main(void *arg)
{
    struct notify *n = arg;
    struct rd_conn *c;
    struct rd_reply *r;

    while (!atomic_load(&n->stopping)) {
        if ((c = subscribe(n)) == NULL)
            continue;
        set_sub(n, c);
        /* ["pmessage", pattern, channel, payload] per message, until the connection ends. */
        while (!atomic_load(&n->stopping) && (r = rd_conn_read(c, SUB_IDLE_MS)) != NULL) {
            if (r->type == RD_ARRAY && r->elements == 4 && r->element[2]->type == RD_STRING &&
                r->element[3]->type == RD_STRING)
                heard(n, r->element[2], r->element[3]->str);
            rd_reply_free(r);
        }
        set_sub(n, NULL);
        rd_conn_close(c);
    }
    return NULL;
}

/* --- Redis Cluster: sharded channels, one subscription per key on its slot's node --- */

/* The subscriber's connection to one node. */
struct shard {
    int server;
    struct rd_conn *cn;
};

/* The connection to the node serving key, opened (and added to shards) when new; NULL
 * when it cannot be reached now. */
static struct rd_conn *shard_for(struct notify *n, struct shard *shards, int *ns, int server,
                                 const char *key)
{
    struct lock_error err;

    for (int i = 0; i < *ns; i++)
        if (shards[i].server == server)
            return shards[i].cn;
    if (*ns == RD_SERVERS_MAX ||
        (shards[*ns].cn = rd_conn_open(n->lc->redis, key, &err)) == NULL)
        return NULL;
    shards[*ns].server = rd_conn_server(shards[*ns].cn);
    return shards[(*ns)++].cn;
}

/* Sends SSUBSCRIBE for every key waited on that has no subscription (nor one asked for),
 * on its slot's node. The keys are taken under the table's lock, the network is used
 * outside it (finding a slot's node may read the cluster's map): waiters go on meanwhile. */
static void subscribe_new(struct notify *n, struct shard *shards, int *ns)
{
    enum { BATCH = 64 };
    struct key_queue *todo[BATCH];
    struct lock_error err;
    int k = 0;

    if (!atomic_exchange(&n->unasked, 0))
        return;   /* no queue made, nor subscription lost, since the last look */
    pthread_mutex_lock(&n->table_mu);
    for (struct key_queue *q = n->queues; q && k < BATCH; q = q->next)
        if (!q->asked && !atomic_load(&q->subscribed)) {
            q->asked = 1;   /* taken; put back below if it cannot be sent */
            todo[k++] = q;
        }
    if (k == BATCH)
        atomic_store(&n->unasked, 1);   /* more, maybe: the next round */
    pthread_mutex_unlock(&n->table_mu);
    for (int i = 0; i < k; i++) {
        struct key_queue *q = todo[i];   /* queues live until the client goes */
        struct rd_conn *cn = NULL;
        int server = rd_key_server(n->lc->redis, q->key, &err);
        if (server < 0 || (cn = shard_for(n, shards, ns, server, q->key)) == NULL ||
            rd_conn_send(cn, &err, "SSUBSCRIBE %s", q->key) != LOCK_OK)
            cn = NULL;
        pthread_mutex_lock(&n->table_mu);
        q->asked = cn != NULL;
        if (cn)
            q->server = rd_conn_server(cn);
        else
            atomic_store(&n->unasked, 1);   /* asked again next round */
        pthread_mutex_unlock(&n->table_mu);
    }
}

/* Every key subscribed or asked for on server (all when server is -1) loses it: asked
 * again on the next round (on the slot's node then), its waiters poll meanwhile. */
static void unsubscribed(struct notify *n, int server, const struct rd_reply *channel)
{
    pthread_mutex_lock(&n->table_mu);
    for (struct key_queue *q = n->queues; q; q = q->next)
        if ((server < 0 || q->server == server) &&
            (channel == NULL || strcmp(q->key, channel->str) == 0)) {
            q->asked = 0;
            atomic_store(&q->subscribed, 0);
            atomic_store(&n->unasked, 1);
            queue_bump(q);
        }
    pthread_mutex_unlock(&n->table_mu);
}

/* One reply on a node's subscription: a message, a confirmation, an end (the slot moved),
 * or an error (MOVED: the map notes it; the keys asked there are asked again). */
static void shard_reply(struct notify *n, int server, const struct rd_reply *r)
{
    struct key_queue *q;

    if (r->type == RD_ERROR) {
        rd_client_moved(n->lc->redis, r);
        unsubscribed(n, server, NULL);
        lock_sleep_ms(SHARD_POLL_MS);
        return;
    }
    if (r->type != RD_ARRAY || r->elements < 3 || r->element[0]->type != RD_STRING ||
        r->element[1]->type != RD_STRING)
        return;
    if (strcmp(r->element[0]->str, "smessage") == 0 && r->element[2]->type == RD_STRING) {
        heard(n, r->element[1], r->element[2]->str);
    } else if (strcmp(r->element[0]->str, "ssubscribe") == 0 &&
               (q = queue_for(n, r->element[1]->str, r->element[1]->len, 0)) != NULL) {
        atomic_store(&q->subscribed, 1);
        queue_bump(q);   /* a release before it was confirmed was not heard */
    } else if (strcmp(r->element[0]->str, "sunsubscribe") == 0) {
        unsubscribed(n, server, r->element[1]);
    }
}

/* The subscriber on a cluster: SSUBSCRIBE per key waited on, on the node of its slot;
 * the replies of every node's connection read as they come. */
static void *sharded_main(void *arg)
{
    struct notify *n = arg;
    struct shard shards[RD_SERVERS_MAX];
    struct rd_conn *cns[RD_SERVERS_MAX];
    int ns = 0;

    atomic_store(&n->connected, 1);
    while (!atomic_load(&n->stopping)) {
        struct rd_reply *r;
        int i;
        subscribe_new(n, shards, &ns);
        for (i = 0; i < ns; i++)
            cns[i] = shards[i].cn;
        if ((i = rd_conn_poll(cns, ns, SHARD_POLL_MS)) < 0) {
            if (ns == 0)
                lock_sleep_ms(SHARD_POLL_MS);
            continue;
        }
        if ((r = rd_conn_read(shards[i].cn, SUB_IDLE_MS)) != NULL) {
            shard_reply(n, shards[i].server, r);
            rd_reply_free(r);
            continue;
        }
        unsubscribed(n, shards[i].server, NULL);   /* the node died or closed it */
        rd_conn_close(shards[i].cn);
        shards[i] = shards[--ns];
    }
    while (ns > 0)
        rd_conn_close(shards[--ns].cn);
    return NULL;
}

int lock_wait_init(struct lock_client *lc, struct lock_error *err)
{
    struct notify *n;

    if (lc->cfg.wait != LOCK_WAIT_NOTIFY)
        return LOCK_OK;
    if ((n = calloc(1, sizeof(*n))) == NULL)
        return lock_fail(err, LOCK_E_NOMEM, "out of memory");
    n->lc = lc;
    n->sharded = strcmp(rd_client_locator(lc->redis), "cluster") == 0;
    pthread_mutex_init(&n->table_mu, NULL);
    if (pthread_create(&n->thread, NULL, n->sharded ? sharded_main : subscriber_main, n) != 0) {
        pthread_mutex_destroy(&n->table_mu);
        free(n);
        return lock_fail(err, LOCK_E_NOMEM, "cannot start the subscriber thread");
    }
    lc->wait_state = n;
    /* Give the subscription a moment, so that the first waiters need not poll. */
    for (int i = 0; i < 100 && !atomic_load(&n->connected); i++)
        lock_sleep_ms(2);
    return LOCK_OK;
}

void lock_wait_destroy(struct lock_client *lc)
{
    struct notify *n = lc->wait_state;
    struct key_queue *q, *next;

    if (n == NULL)
        return;
    atomic_store(&n->stopping, 1);
    pthread_mutex_lock(&n->table_mu);
    if (n->sub)
        rd_conn_shutdown(n->sub); /* ends its blocking read */
    pthread_mutex_unlock(&n->table_mu);
    pthread_join(n->thread, NULL);
    for (q = n->queues; q; q = next) {
        next = q->next;
        pthread_mutex_destroy(&q->mu);
        free(q);
    }
    pthread_mutex_destroy(&n->table_mu);
    free(n);
    lc->wait_state = NULL;
}

/* Gives a (lock/owner.c) back: the store's release under its owner, again while it gives
 * back a hold (a nested grant left two), the waiters told as by any release (other
 * processes by the notice; ours here, since we do not hear our own). The store's last
 * status: LOCK_ERROR when Redis could not take it. */
static int give_back_one(struct lock_client *lc, struct lock_abandoned *a, struct lock_error *err,
                         int *given)
{
    enum { HOLDS_MAX = 64 };
    int st = LOCK_OK, rounds = 0;

    while (st == LOCK_OK && rounds++ < HOLDS_MAX) {
        struct rd_batch notice = { 0 };
        struct lock_trip trip = { .after = &notice };
        lock_wait_releasing(lc, &a->g, &notice);
        st = lc->ops->release(lc, &a->g, &trip, err);
        rd_batch_reset(&notice);
    }
    if (rounds > 1) {
        struct notify *n = lc->wait_state;
        struct key_queue *q = n ? queue_for(n, a->g.key, strlen(a->g.key), 0) : NULL;
        atomic_fetch_add(&lc->given_back, 1);
        (*given)++;
        if (q)
            queue_bump(q);
    }
    return st;
}

/* The client's abandoned locks go back before a try. One is kept until its lease is over
 * in any case, and given back again whenever the client has connected anew since (a
 * second failover, or a restart, may bring back a copy of the data that still has it);
 * when Redis cannot take it yet, it and the rest wait for the next try. Returns how many
 * Redis still held (and now let go). */
static int give_back_abandoned(struct lock_client *lc)
{
    struct lock_abandoned *a = lock_owner_take(lc), *next;
    int given = 0;

    for (; a; a = next) {
        struct lock_error err = { 0 };
        next = a->next;
        if (lock_now_ms() >= a->until_ms) {
            free(a);                          /* its lease is over, wherever it was */
            continue;
        }
        if (a->given_at == rd_client_opens(lc->redis)) {
            lock_owner_keep(a);               /* given back on these very connections */
            continue;
        }
        if (give_back_one(lc, a, &err, &given) != LOCK_ERROR) {
            a->given_at = rd_client_opens(lc->redis);
            lock_owner_keep(a);
            continue;
        }
        lock_owner_keep(a);
        if (lock_fault_is_io(err.fault)) {   /* no master yet: the rest wait too */
            for (a = next; a; a = next) {
                next = a->next;
                lock_owner_keep(a);
            }
            break;
        }
    }
    return given;
}

/* One try, with read riding after it; what this client abandoned goes back first. A
 * refused try that connected anew (the connection it found was dead) looks again, and
 * tries once more if that let a lock go. */
static int try_once(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                    struct rd_batch *read, struct lock_error *err)
{
    struct lock_trip trip = { .after = read };
    int st, again = 1;

    give_back_abandoned(lc);
    do {
        g->acquired_ms = lock_now_ms();
        g->retry_in_ms = 0;
        st = lc->ops->try_acquire(lc, g, wait_ms, &trip, err);
    } while (st == LOCK_TIMEOUT && again-- > 0 && give_back_abandoned(lc) > 0);
    return st;
}

static int poll_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                        struct rd_batch *read, struct lock_error *err)
{
    long long start = lock_now_ms(), now;
    int st;

    for (;;) {
        st = try_once(lc, g, 0, read, err);
        if (st != LOCK_TIMEOUT)
            return st;
        now = lock_now_ms();
        if (now - start >= wait_ms)
            return st;
        long nap = lc->cfg.retry_ms;
        if (nap > wait_ms - (now - start))
            nap = (long)(wait_ms - (now - start));
        lock_sleep_ms(nap);
    }
}

/* The command that publishes on a lock's channel: sharded on a cluster. */
static const char *publish(const struct lock_client *lc)
{
    const struct notify *n = lc->wait_state;

    return n && n->sharded ? "SPUBLISH" : "PUBLISH";
}

/* "<what> <instance id>", a message on a lock's channel, into buf; returns buf. */
static const char *message(const struct lock_client *lc, const char *what,
                           char (*buf)[LOCK_OWNER_MAX])
{
    snprintf(*buf, sizeof(*buf), "%s %s", what, lc->cfg.instance_id);
    return *buf;
}

/* Refused: tells the holder's process that we wait (it may give the lock up early). */
static void ask_holder(struct lock_client *lc, const struct lock_grant *g)
{
    struct lock_error ignored;
    char msg[LOCK_OWNER_MAX];

    rd_reply_free(lock_command(lc, NULL, RD_T(RD_INTEGER), &ignored, "%s %s %s", publish(lc),
                               g->key, message(lc, "wanted", &msg)));
}

/* The first waiter's loop: try; refused, sleep until a message for the key, the
 * holder's lease's end, or the deadline. Called and returns with q->mu held. */
static int notify_try_loop(struct lock_client *lc, struct notify *n, struct key_queue *q,
                           struct waiter *w, struct lock_grant *g, long long deadline,
                           struct rd_batch *read, struct lock_error *err)
{
    if (q->yield_until > lock_now_ms()) {
        /* We gave the lock up because another process asked: let it take it first. */
        unsigned long seen = q->messages;
        long long until = q->yield_until < deadline ? q->yield_until : deadline;
        while (q->messages == seen && lock_now_ms() < until)
            cond_wait_until(&w->cv, &q->mu, until);
    }
    q->yield_until = 0;
    for (;;) {
        unsigned long seen = q->messages;
        long long now, until;
        int st;

        pthread_mutex_unlock(&q->mu);
        st = try_once(lc, g, 0, read, err);
        if (st == LOCK_TIMEOUT)
            ask_holder(lc, g);
        pthread_mutex_lock(&q->mu);
        now = lock_now_ms();
        if (st != LOCK_TIMEOUT || now >= deadline)
            return st;
        /* Subscribed, a message will come; else poll. Never past the holder's lease. */
        until = now + (listened(n, q) ? lc->cfg.ttl_ms : lc->cfg.retry_ms);
        if (g->retry_in_ms > 0 && now + g->retry_in_ms < until)
            until = now + g->retry_in_ms;
        if (until > deadline)
            until = deadline;
        while (q->messages == seen && lock_now_ms() < until)
            cond_wait_until(&w->cv, &q->mu, until);
    }
}

static int notify_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                          struct rd_batch *read, struct lock_error *err)
{
    struct notify *n = lc->wait_state;
    struct key_queue *q = queue_for(n, g->key, strlen(g->key), 1);
    long long deadline = lock_now_ms() + wait_ms;
    struct waiter w;
    int st, nested;

    if (q == NULL)
        return poll_acquire(lc, g, wait_ms, read, err);
    waiter_init(&w);
    pthread_mutex_lock(&q->mu);
    nested = q->holds > 0 && strcmp(q->holder, g->owner) == 0;
    if (nested) {
        /* The holder asks again: no queueing behind itself (a reentrant store grants). */
        st = notify_try_loop(lc, n, q, &w, g, deadline, read, err);
        if (st == LOCK_OK)
            q->holds++;
        goto out_unlock;
    }
    if (q->last)
        q->last->next = &w;
    else
        q->first = &w;
    q->last = &w;
    while (q->first != &w || q->holds > 0) {
        if (cond_wait_until(&w.cv, &q->mu, deadline) == ETIMEDOUT &&
            (q->first != &w || q->holds > 0)) {
            st = LOCK_TIMEOUT;
            goto out_dequeue;
        }
    }
    st = notify_try_loop(lc, n, q, &w, g, deadline, read, err);
    if (st == LOCK_OK) {
        strcpy(q->holder, g->owner);
        q->holds = 1;
        q->wanted_at_grant = q->wanted;
    }

out_dequeue:
    /* Leave the queue; the next waiter's turn comes now, or at the release. */
    for (struct waiter **p = &q->first, *prev = NULL; *p; prev = *p, p = &(*p)->next)
        if (*p == &w) {
            *p = w.next;
            if (q->last == &w)
                q->last = prev;
            break;
        }
    if (q->first && q->holds == 0)
        pthread_cond_signal(&q->first->cv);
out_unlock:
    pthread_mutex_unlock(&q->mu);
    pthread_cond_destroy(&w.cv);
    return st;
}

int lock_wait_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                      struct rd_batch *read, struct lock_error *err)
{
    switch (lc->cfg.wait) {
    case LOCK_WAIT_NOTIFY:
        return notify_acquire(lc, g, wait_ms, read, err);
    case LOCK_WAIT_POLL:
        return poll_acquire(lc, g, wait_ms, read, err);
    default:
        return try_once(lc, g, wait_ms, read, err);
    }
}

void lock_wait_releasing(struct lock_client *lc, const struct lock_grant *g,
                         struct rd_batch *notice)
{
    char msg[LOCK_OWNER_MAX];
    struct lock_error ignored;   /* without the notice, waiters wake at the lease's end */

    if (lc->cfg.wait == LOCK_WAIT_NOTIFY)
        rd_batch_add(notice, &ignored, "%s %s %s", publish(lc), g->key,
                     message(lc, "released", &msg));
}

/* The holder's queue, locked; NULL (nothing locked) when g is not held through one. */
static struct key_queue *held_queue(struct lock_client *lc, const struct lock_grant *g)
{
    struct notify *n = lc->wait_state;
    struct key_queue *q;

    if (n == NULL || (q = queue_for(n, g->key, strlen(g->key), 0)) == NULL)
        return NULL;
    pthread_mutex_lock(&q->mu);
    if (q->holds > 0 && strcmp(q->holder, g->owner) == 0)
        return q;
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int lock_wait_is_wanted(struct lock_client *lc, const struct lock_grant *g)
{
    struct key_queue *q = held_queue(lc, g);
    int wanted;

    if (q == NULL)
        return 0;
    wanted = q->wanted != q->wanted_at_grant;
    pthread_mutex_unlock(&q->mu);
    return wanted;
}

void lock_wait_released(struct lock_client *lc, struct lock_grant *g)
{
    struct key_queue *q = held_queue(lc, g);

    if (q == NULL)
        return;
    if (--q->holds == 0) {
        /* Another process asked while we held it: our next try lets it go first, for
         * at most retry_ms (its release message ends the wait sooner). */
        if (q->wanted != q->wanted_at_grant)
            q->yield_until = lock_now_ms() + lc->cfg.retry_ms;
        if (q->first)
            pthread_cond_signal(&q->first->cv);
    }
    pthread_mutex_unlock(&q->mu);
}
