/* lock.c - The client, and acquire and release around the version's store: the item's
 * keys and owner id, the wait, the confirmation, the keep-alive and what a failure leaves. */
#include "lock/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const wait_names[] = {
    [LOCK_WAIT_DEFAULT] = "default", [LOCK_WAIT_POLL] = "poll", [LOCK_WAIT_LOCAL] = "local",
    [LOCK_WAIT_NOTIFY] = "notify",
};

const char *lock_wait_name(enum lock_wait w)
{
    return w <= LOCK_WAIT_NOTIFY ? wait_names[w] : "?";
}

enum lock_wait lock_wait_parse(const char *name)
{
    for (int w = LOCK_WAIT_POLL; w <= LOCK_WAIT_NOTIFY; w++)
        if (strcmp(wait_names[w], name) == 0)
            return (enum lock_wait)w;
    return LOCK_WAIT_DEFAULT;
}

/* Which wait the client uses: the config's, if the store can wait that way. */
static int resolve_wait(const struct lock_ops *ops, enum lock_wait asked, enum lock_wait *out,
                        struct error *err)
{
    if (asked == LOCK_WAIT_DEFAULT || asked == ops->wait) {
        *out = ops->wait;
        return LOCK_OK;
    }
    if (!ops->remote || asked == LOCK_WAIT_LOCAL) {
        return error_set(err, FAULT_USAGE, "%s waits only by %s, not by %s", ops->name,
                         lock_wait_name(ops->wait), lock_wait_name(asked));
    }
    *out = asked;
    return LOCK_OK;
}

/* Frees the strings lock_client_create copied; the password's bytes are wiped first. */
static void config_free(struct lock_config *cfg)
{
    if (cfg->redis_password)
        explicit_bzero((char *)cfg->redis_password, strlen(cfg->redis_password));
    free((char *)cfg->instance_id);
    free((char *)cfg->lock_masters);
    free((char *)cfg->redis_user);
    free((char *)cfg->redis_password);
}

/* A copy of cfg with its strings duplicated and its defaults filled in; LOCK_OK, or
 * LOCK_ERROR (out of memory: what was copied is freed by config_free). */
static int config_copy(struct lock_config *to, const struct lock_config *cfg,
                       const struct lock_ops *ops, struct error *err)
{
    *to = *cfg;
    to->instance_id = strdup(cfg->instance_id ? cfg->instance_id : "instance");
    to->lock_masters = cfg->lock_masters ? strdup(cfg->lock_masters) : NULL;
    to->redis_user = cfg->redis_user ? strdup(cfg->redis_user) : NULL;
    to->redis_password = cfg->redis_password ? strdup(cfg->redis_password) : NULL;
    if (to->ttl_ms <= 0)
        to->ttl_ms = LOCK_TTL_DEFAULT_MS;
    if (to->retry_ms <= 0)
        to->retry_ms = ops->retry_ms > 0 ? ops->retry_ms : 10;
    if (to->instance_id == NULL || (cfg->lock_masters && !to->lock_masters) ||
        (cfg->redis_user && !to->redis_user) || (cfg->redis_password && !to->redis_password))
        return error_set(err, FAULT_NOMEM, "out of memory");
    return LOCK_OK;
}

/* Starts the store, the wait policy, the keep-alive and the give-back thread, in that
 * order; on a failure stops what it started. */
static int parts_start(struct lock_client *lc, struct error *err)
{
    const struct lock_ops *ops = lc->ops;

    if (ops->init && ops->init(lc, err) != LOCK_OK)
        return LOCK_ERROR;
    if (lock_owner_init(lc, err) != LOCK_OK)
        goto out_store;
    if (lock_wait_init(lc, err) != LOCK_OK)
        goto out_owner;
    if (ops->keepalive && lock_keepalive_init(lc, err) != LOCK_OK)
        goto out_wait;
    if (lock_owner_start(lc, err) != LOCK_OK)
        goto out_keepalive;
    return LOCK_OK;

out_keepalive:
    if (ops->keepalive)
        lock_keepalive_destroy(lc);
out_wait:
    lock_wait_destroy(lc);
out_owner:
    lock_owner_destroy(lc);
out_store:
    if (ops->destroy)
        ops->destroy(lc);
    return LOCK_ERROR;
}

/* Creates the client; the caller frees it with lock_client_destroy(). */
struct lock_client *lock_client_create(const struct lock_ops *ops, const struct lock_config *cfg,
                                       struct error *err)
{
    struct lock_client *lc = calloc(1, sizeof(*lc));

    if (lc == NULL) {
        error_set(err, FAULT_NOMEM, "out of memory");
        return NULL;
    }
    lc->ops = ops;
    lc->redis = cfg->redis;
    if (config_copy(&lc->cfg, cfg, ops, err) != LOCK_OK)
        goto out_free;
    if (ops->remote && lc->redis == NULL) {
        error_set(err, FAULT_USAGE, "%s keeps its lock in Redis: lock_config.redis is needed", ops->name);
        goto out_free;
    }
    if (resolve_wait(ops, cfg->wait, &lc->cfg.wait, err) != LOCK_OK)
        goto out_free;
    if (ops->keepalive && ops->renew == NULL) {
        error_set(err, FAULT_USAGE, "a keep-alive needs a store that renews");
        goto out_free;
    }
    if (parts_start(lc, err) == LOCK_OK)
        return lc;

out_free:
    config_free(&lc->cfg);
    free(lc);
    return NULL;
}

void lock_client_destroy(struct lock_client *lc)
{
    if (lc == NULL)
        return;
    lock_owner_stop(lc);
    if (lc->ops->keepalive)
        lock_keepalive_destroy(lc);
    lock_wait_destroy(lc);
    lock_owner_destroy(lc);
    if (lc->ops->destroy)
        lc->ops->destroy(lc);
    config_free(&lc->cfg);
    free(lc);
}

long lock_replicas_wait_ms(long ttl_ms)
{
    long tenth = ttl_ms / 10;

    return tenth < 1 ? 1 : tenth > 4000 ? 4000 : tenth;
}

/* WAIT: a grant counts once cfg.replicas replicas of the data Redis have it (the lock
 * key and the fencing token), so that a failover to one of them cannot forget it. Waits
 * lock_replicas_wait_ms. LOCK_OK, LOCK_UNAVAILABLE (too few acknowledged) or LOCK_ERROR. */
static int replicated(struct lock_client *lc, struct error *err)
{
    long timeout = lock_replicas_wait_ms(lc->cfg.ttl_ms);
    struct rd_reply *r = lock_command(lc, NULL, RD_T(RD_INTEGER), err, "WAIT %d %ld",
                                      lc->cfg.replicas, timeout);
    long long acked;

    if (r == NULL)
        return LOCK_ERROR;
    acked = r->integer;
    rd_reply_free(r);
    if (acked >= lc->cfg.replicas)
        return LOCK_OK;
    error_set(err, FAULT_NOREPLICAS, "the grant reached %lld of %d replicas in %ld ms", acked,
              lc->cfg.replicas, timeout);
    return LOCK_UNAVAILABLE;
}

/* The store's release, with writes before it and the waiters' notification after it
 * (notify); the store's status. */
static int give_back(struct lock_client *lc, struct lock_grant *g, struct rd_batch *writes,
                     const struct lock_pause *pause, struct error *err)
{
    struct rd_batch notice = { 0 };
    struct lock_trip trip = { .before = writes, .after = &notice, .pause = pause };
    int st;

    notify_releasing(lc, g, &notice);
    st = lc->ops->release(lc, g, &trip, err);
    rd_batch_reset(&notice);
    return st;
}

/* kind's key of item ("lock", "fence": the lock's keys of an item, formatted here alone)
 * into buf; returns buf. They share the item's hash tag with the stock's keys, so that a
 * script may touch them together (one slot on a cluster). */
static const char *item_key(char (*buf)[LOCK_KEY_MAX], const char *kind, const char *item)
{
    snprintf(*buf, sizeof(*buf), "%s:{%.*s}", kind, LOCK_ITEM_MAX, item);
    return *buf;
}

const char *lock_fence_key(char (*buf)[LOCK_KEY_MAX], const char *item)
{
    return item_key(buf, "fence", item);
}

/* The item's names into g: its key, and the calling thread's owner id. */
static int grant_init(struct lock_client *lc, const char *item, struct lock_grant *g,
                      struct error *err)
{
    size_t n = item ? strlen(item) : 0;

    memset(g, 0, sizeof(*g));
    if (n == 0 || n > LOCK_ITEM_MAX)
        return error_set(err, FAULT_USAGE, "an item is 1 to 64 characters");
    memcpy(g->item, item, n + 1);
    item_key(&g->key, "lock", item);
    lock_owner_id(lc, g->owner, sizeof(g->owner));
    return LOCK_OK;
}

/* Granted: what must hold before the grant counts (the read got through, for a lock in
 * the process; the replicas have it). Else it is given back (telling the waiters, as a
 * release does) and the status says why. */
static int grant_confirm(struct lock_client *lc, struct lock_grant *g, struct rd_batch *read,
                         struct error *err)
{
    struct lock_trip alone = { .after = read };
    int st = LOCK_OK;

    if (!lc->ops->remote) {
        if (lc->ops->in_process)
            g->held_from_us = clock_wall_us();
        st = lock_trip_send(lc, &alone, err);   /* no command to ride with */
    }
    if (st == LOCK_OK && g->depth == 1 && lc->cfg.replicas > 0)
        st = replicated(lc, err);
    if (st != LOCK_OK) {
        struct error why = { 0 };
        if (give_back(lc, g, NULL, NULL, &why) == LOCK_ERROR)
            lock_owner_failed(lc, g, why.fault, 1);
        else if (g->depth == 1) {   /* kept as an answered release; its id retired */
            lock_owner_held(lc);
            lock_owner_released(lc, g, 1);
        }
        lock_wait_released(lc, g);
    }
    return st;
}

int lock_acquire(struct lock_client *lc, const char *item, long wait_ms, struct lock_grant *g,
                 struct rd_batch *read, struct error *err)
{
    long long start = clock_now_ms();
    int st = grant_init(lc, item, g, err);

    if (st != LOCK_OK)
        return st;
    st = lock_wait_acquire(lc, g, wait_ms, read, err);
    if (st == LOCK_ERROR && err)
        lock_owner_failed(lc, g, err->fault, 0);   /* sent, unanswered: it may have granted */
    if (st == LOCK_OK)
        st = grant_confirm(lc, g, read, err);
    g->waited_ms = clock_now_ms() - start;
    if (st == LOCK_OK) {
        lock_owner_held(lc);
        if (lc->ops->keepalive)
            lock_keepalive_hold(lc, g);
        atomic_fetch_add(&lc->acquisitions, 1);
    } else if (st == LOCK_TIMEOUT) {
        atomic_fetch_add(&lc->timeouts, 1);
    }
    return st;
}

/* The watchdog stops renewing g: before it is given back, so that no renewal crosses the
 * release and comes back "not ours" while g still looks held. Returns 1 when the watchdog
 * had seen the lease lost; sets g->valid_until_ms to the renewed end. */
static int renewals_stop(struct lock_client *lc, struct lock_grant *g)
{
    return lc->ops->keepalive ? lock_keepalive_drop(lc, g) : 0;
}

/* The grant is over in this process, whatever Redis did with it: the next local waiter's
 * turn comes, the thread holds one grant less; when Redis may still hold it (unsure, with
 * the fault that left it so), it is kept to be given back. */
static void grant_over(struct lock_client *lc, struct lock_grant *g, int unsure,
                       enum fault fault)
{
    lock_wait_released(lc, g);
    lock_owner_released(lc, g, !unsure);
    if (unsure)
        lock_owner_failed(lc, g, fault, 1);
}

int lock_release(struct lock_client *lc, struct lock_grant *g, struct rd_batch *writes,
                 const struct lock_pause *pause, struct error *err)
{
    struct lock_trip ahead = { .before = writes };
    struct error why = { 0 };
    int st = LOCK_OK, released, counted = renewals_stop(lc, g);
    int lost = counted || (lc->ops->lost && lc->ops->lost(lc, g));   /* before it is gone */

    /* A lock kept in the process has no command to ride with: the writes go first. */
    if (!lc->ops->remote) {
        st = lock_trip_send(lc, &ahead, err);
        writes = NULL;
        if (lc->ops->in_process)
            g->held_to_us = clock_wall_us();
    }
    released = give_back(lc, g, writes, pause, &why);
    if (st == LOCK_OK && (st = released) == LOCK_ERROR && err)
        *err = why;
    grant_over(lc, g, released == LOCK_ERROR, why.fault);   /* unanswered: it may still hold */

    if (st == LOCK_NOT_OWNER) {
        if (!counted)
            atomic_fetch_add(&lc->lost_leases, 1);   /* the watchdog counted what it saw */
        if (lost || (g->valid_until_ms != 0 && clock_now_ms() >= g->valid_until_ms)) {
            st = LOCK_EXPIRED;
        } else {
            /* Ours no more, although our lease had time left: another client deleted it. */
            atomic_fetch_add(&lc->stolen, 1);
            st = LOCK_STOLEN;
        }
    }
    return st;
}

void lock_abandon(struct lock_client *lc, struct lock_grant *g)
{
    if (lc->ops->database && lc->ops->keepalive && lc->ops->forget) {
        lock_release_done(lc, g, 0);   /* a lease in the database: it runs out */
        return;
    }
    if (!lc->ops->remote) {
        lock_release(lc, g, NULL, NULL, &(struct error){ 0 });
        return;
    }
    renewals_stop(lc, g);
    grant_over(lc, g, 1, FAULT_TIMEOUT);   /* runs out with its lease */
}

int lock_grant_is_lost(struct lock_client *lc, const struct lock_grant *g)
{
    if (lc->ops->lost && lc->ops->lost(lc, g))
        return 1;
    if (lc->ops->keepalive)
        return lock_keepalive_is_lost(lc, g);
    return g->valid_until_ms != 0 && clock_now_ms() >= g->valid_until_ms;
}

const char *lock_grant_guard(const struct lock_client *lc, const struct lock_grant *g)
{
    return lc->ops->guard ? lc->ops->guard(g) : NULL;
}

const char *lock_grant_guard_release(const struct lock_client *lc, const struct lock_grant *g)
{
    return lc->ops->forget && g->depth == 1 ? lock_grant_guard(lc, g) : NULL;
}

int lock_release_done(struct lock_client *lc, struct lock_grant *g, int sure)
{
    renewals_stop(lc, g);
    lc->ops->forget(lc, g, sure);
    grant_over(lc, g, 0, FAULT_NONE);
    return LOCK_OK;
}

int lock_grant_is_wanted(struct lock_client *lc, const struct lock_grant *g)
{
    return lock_wait_is_wanted(lc, g);
}

int lock_grant_fence(struct lock_client *lc, const struct lock_grant *g, struct db_conn *c,
                     int release, struct error *err)
{
    if (lc->ops->fence == NULL)
        return LOCK_OK;
    return lc->ops->fence(lc, g, c, release && lock_grant_fence_releases(lc, g), err);
}

int lock_grant_fence_releases(const struct lock_client *lc, const struct lock_grant *g)
{
    return lc->ops->fence && lc->ops->forget && g->depth == 1;
}

struct db_conn *lock_grant_db(const struct lock_client *lc, const struct lock_grant *g)
{
    return lc->ops->conn ? lc->ops->conn(g) : NULL;
}
