/* wait.c - The wait policies: how a refused acquire learns that the lock is free.
 *
 * local:  the store blocks by itself (a pthread mutex).
 * poll:   try, sleep retry_ms, try again: the classic loop. Every waiting thread of every
 *         process asks Redis, and one that happens to ask right after a release wins:
 *         others can starve.
 * notify: release publishes on the lock's channel (`lock:{I}`, a PUBLISH riding in the
 *         release's round trip). One subscriber thread per process (PSUBSCRIBE lock:{*})
 *         counts the messages per key and wakes that key's first waiter. Threads of one
 *         process queue for a key first come first served, so only the first asks Redis.
 *         It reads the key's message count before each try and, refused, sleeps until
 *         the count moves: a release between its try and its sleep still wakes it. It
 *         never sleeps past the holder's remaining lease (a lost message costs at most
 *         that), and while the subscriber is disconnected it polls, as it does while
 *         the client has an abandoned lock to give back (owner.c: a try gives back
 *         first, sooner than the client's give-back thread, and it may be the very lock
 *         every thread waits for).
 *         On Redis Cluster the channels are sharded (SPUBLISH; one SSUBSCRIBE per key
 *         waited on, on the node of its slot, made by the subscriber thread within
 *         SHARD_POLL_MS of the first wait; until Redis confirms it, that key's waiters
 *         poll). A slot that moves ends its channels' subscriptions (Redis says
 *         sunsubscribe): they are made again on the slot's new node.
 *         Between processes: a refused waiter says so (PUBLISH lock:{I} "wanted <id>");
 *         a holder may ask lock_grant_is_wanted() and give the lock up early, and then
 *         its process's next try waits for the other's release (at most retry_ms), so
 *         the lock goes to the one that asked instead of back to the holder.
 *         Its parts: the queues and the channel's messages (queue.c), the subscriber
 *         (subscriber.c; shards.c on a cluster).
 * Before every try, the locks this client gave up on without an answer go back first
 * (owner.c).
 */
#include "lock/notify.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lock_wait_init(struct lock_client *lc, struct error *err)
{
    struct notify *n;

    if (lc->cfg.wait != LOCK_WAIT_NOTIFY)
        return LOCK_OK;
    if ((n = calloc(1, sizeof(*n))) == NULL)
        return error_set(err, FAULT_NOMEM, "out of memory");
    n->lc = lc;
    n->sharded = strcmp(rd_client_locator(lc->redis), "cluster") == 0;
    pthread_mutex_init(&n->table_mu, NULL);
    if (pthread_create(&n->thread, NULL, n->sharded ? notify_sharded_main : notify_subscriber_main, n) != 0) {
        pthread_mutex_destroy(&n->table_mu);
        free(n);
        return error_set(err, FAULT_NOMEM, "cannot start the subscriber thread");
    }
    lc->wait_state = n;
    /* Give the subscription a moment, so that the first waiters need not poll. */
    for (int i = 0; i < 100 && !atomic_load(&n->connected); i++)
        clock_sleep_ms(2);
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

/* One try, with read riding after it; what this client abandoned goes back first. A
 * refused try that connected anew (the connection it found was dead) looks again, and
 * tries once more if that let a lock go. */
static int try_once(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                    struct rd_batch *read, struct error *err)
{
    struct lock_trip trip = { .after = read };
    int st, again = 1;

    lock_owner_give_back(lc);
    do {
        g->acquired_ms = clock_now_ms();
        g->retry_in_ms = 0;
        st = lc->ops->try_acquire(lc, g, wait_ms, &trip, err);
    } while (st == LOCK_TIMEOUT && again-- > 0 && lock_owner_give_back(lc) > 0);
    return st;
}

static int poll_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                        struct rd_batch *read, struct error *err)
{
    long long start = clock_now_ms(), now;
    int st;

    for (;;) {
        st = try_once(lc, g, 0, read, err);
        if (st != LOCK_TIMEOUT)
            return st;
        now = clock_now_ms();
        if (now - start >= wait_ms)
            return st;
        long nap = lc->cfg.retry_ms;
        if (nap > wait_ms - (now - start))
            nap = (long)(wait_ms - (now - start));
        clock_sleep_ms(nap);
    }
}

/* Refused: tells the holder's process that we wait (it may give the lock up early). */
static void ask_holder(struct lock_client *lc, const struct lock_grant *g)
{
    struct error ignored;
    char msg[LOCK_OWNER_MAX];

    rd_reply_free(lock_command(lc, NULL, RD_T(RD_INTEGER), &ignored, "%s %s %s", notify_publish(lc),
                               g->key, notify_message(lc, "wanted", &msg)));
}

/* The first waiter's loop: try; refused, sleep until a message for the key, the
 * holder's lease's end, or the deadline. Called and returns with q->mu held. */
static int notify_try_loop(struct lock_client *lc, struct notify *n, struct key_queue *q,
                           struct waiter *w, struct lock_grant *g, long long deadline,
                           struct rd_batch *read, struct error *err)
{
    if (q->yield_until > clock_now_ms()) {
        /* We gave the lock up because another process asked: let it take it first. */
        unsigned long seen = q->messages;
        long long until = q->yield_until < deadline ? q->yield_until : deadline;
        while (q->messages == seen && clock_now_ms() < until)
            clock_cond_wait_until(&w->cv, &q->mu, until);
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
        now = clock_now_ms();
        if (st != LOCK_TIMEOUT || now >= deadline)
            return st;
        /* Subscribed, a message will come; else poll. Never past the holder's lease. Nor
         * while a walk is due: the lock may be one this client abandoned (a crash, a
         * failover), which a try gives back first, and every thread may be waiting. */
        until = now + (notify_listened(n, q) && !lock_owner_due(lc) ? lc->cfg.ttl_ms
                                                                     : lc->cfg.retry_ms);
        if (g->retry_in_ms > 0 && now + g->retry_in_ms < until)
            until = now + g->retry_in_ms;
        if (until > deadline)
            until = deadline;
        while (q->messages == seen && clock_now_ms() < until)
            clock_cond_wait_until(&w->cv, &q->mu, until);
    }
}

static int notify_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                          struct rd_batch *read, struct error *err)
{
    struct notify *n = lc->wait_state;
    struct key_queue *q = notify_queue(n, g->key, strlen(g->key), 1);
    long long deadline = clock_now_ms() + wait_ms;
    struct waiter w;
    int st, nested;

    if (q == NULL)
        return poll_acquire(lc, g, wait_ms, read, err);
    notify_waiter_init(&w);
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
        if (clock_cond_wait_until(&w.cv, &q->mu, deadline) == ETIMEDOUT &&
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
                      struct rd_batch *read, struct error *err)
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

/* The holder's queue, locked; NULL (nothing locked) when g is not held through one. */
static struct key_queue *held_queue(struct lock_client *lc, const struct lock_grant *g)
{
    struct notify *n = lc->wait_state;
    struct key_queue *q;

    if (n == NULL || (q = notify_queue(n, g->key, strlen(g->key), 0)) == NULL)
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
            q->yield_until = clock_now_ms() + lc->cfg.retry_ms;
        if (q->first)
            pthread_cond_signal(&q->first->cv);
    }
    pthread_mutex_unlock(&q->mu);
}
