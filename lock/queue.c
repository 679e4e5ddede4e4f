/* queue.c - The notify wait's tables: a queue per lock key (its local waiters, first come
 * first served, and the release messages heard for it), and the messages on a lock's
 * channel: "released <instance id>" riding after a release, "wanted <instance id>" from a
 * refused waiter. The subscribers (subscriber.c, shards.c) feed them; the policy
 * (wait.c) and the give-back (owner.c) read and post them. */
#include "lock/notify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

void notify_waiter_init(struct waiter *w)
{
    clock_cond_init_monotonic(&w->cv);
    w->next = NULL;
}

/* The queue for key; created when create is set. NULL when there is none (or no room). */
struct key_queue *notify_queue(struct notify *n, const char *key, size_t len, int create)
{
    struct key_queue *q;
    unsigned h = hash_bytes(key, len) % QUEUE_BUCKETS;

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
int notify_listened(struct notify *n, struct key_queue *q)
{
    return n->sharded ? atomic_load(&q->subscribed) : atomic_load(&n->connected);
}

/* Counts a message for q and wakes its first waiter. */
void notify_bump(struct key_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->messages++;
    if (q->first)
        pthread_cond_signal(&q->first->cv);
    pthread_mutex_unlock(&q->mu);
}

/* After a reconnect or a disconnect, messages may have been missed: every first waiter
 * tries again (and, disconnected, goes on polling). */
void notify_bump_all(struct notify *n)
{
    pthread_mutex_lock(&n->table_mu);
    for (struct key_queue *q = n->queues; q; q = q->next)
        notify_bump(q);
    pthread_mutex_unlock(&n->table_mu);
}

/* A message on a lock's channel: "released <instance id>" or "wanted <instance id>".
 * Our own are ignored: a release in this process hands over to the local queue
 * directly (lock_wait_released), and we do not ask ourselves for the lock. */
void notify_heard(struct notify *n, const struct rd_reply *channel, const char *payload)
{
    const char *id = strchr(payload, ' ');
    struct key_queue *q;

    if (id == NULL || strcmp(id + 1, n->lc->cfg.instance_id) == 0)
        return;
    q = notify_queue(n, channel->str, channel->len, 0);
    if (strncmp(payload, "released ", 9) == 0) {
        atomic_fetch_add(&n->lc->notifications, 1);
        if (q)
            notify_bump(q);
    } else if (strncmp(payload, "wanted ", 7) == 0 && q) {
        pthread_mutex_lock(&q->mu);
        q->wanted++;
        pthread_mutex_unlock(&q->mu);
    }
}

/* The command that publishes on a lock's channel: sharded on a cluster. */
const char *notify_publish(const struct lock_client *lc)
{
    const struct notify *n = lc->wait_state;

    return n && n->sharded ? "SPUBLISH" : "PUBLISH";
}

/* "<what> <instance id>", a message on a lock's channel, into buf; returns buf. */
const char *notify_message(const struct lock_client *lc, const char *what,
                           char (*buf)[LOCK_OWNER_MAX])
{
    snprintf(*buf, sizeof(*buf), "%s %s", what, lc->cfg.instance_id);
    return *buf;
}

void notify_releasing(struct lock_client *lc, const struct lock_grant *g, struct rd_batch *notice)
{
    char msg[LOCK_OWNER_MAX];
    struct rd_error ignored;   /* without the notice, waiters wake at the lease's end */

    if (lc->cfg.wait == LOCK_WAIT_NOTIFY)
        rd_batch_add(notice, &ignored, "%s %s %s", notify_publish(lc), g->key,
                     notify_message(lc, "released", &msg));
}

void notify_given_back(struct lock_client *lc, const char *key)
{
    struct notify *n = lc->wait_state;
    struct key_queue *q = n ? notify_queue(n, key, strlen(key), 0) : NULL;

    if (q)
        notify_bump(q);
}
