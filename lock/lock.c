/* lock.c - The registry of versions, the client, acquire and release around the store. */
#include "lock/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const struct lock_ops lock_v1, lock_v2, lock_v3, lock_v4, lock_v5, lock_v6, lock_v7,
    lock_v8, lock_v9, lock_v10, lock_none;

static const struct lock_ops *const versions[] = {
    &lock_v1, &lock_v2, &lock_v3, &lock_v4, &lock_v5, &lock_v6, &lock_v7, &lock_v8,
    &lock_v9, &lock_v10, &lock_none, NULL,
};

const struct lock_ops *const *lock_versions(void)
{
    return versions;
}

/* By name first, so that "mutex" (the alias of v1 and v2) finds v1. */
const struct lock_ops *lock_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (int i = 0; versions[i]; i++)
        if (strcmp(versions[i]->name, name) == 0)
            return versions[i];
    for (int i = 0; versions[i]; i++)
        if (versions[i]->alias && strcmp(versions[i]->alias, name) == 0)
            return versions[i];
    return NULL;
}

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

long long lock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec lock_realtime_in(long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

void lock_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (ms > 0 && nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

int lock_fail(struct lock_error *err, redisContext *c, const char *what)
{
    if (err == NULL)
        return LOCK_ERROR;
    if (c && c->err) {
        err->io = 1;
        snprintf(err->msg, sizeof(err->msg), "%.40s: %.80s", what, c->errstr);
    } else {
        err->io = 0;
        snprintf(err->msg, sizeof(err->msg), "%s", what);
    }
    return LOCK_ERROR;
}

/* Which wait the client uses: the config's, if the store can wait that way. */
static int resolve_wait(const struct lock_ops *ops, enum lock_wait asked, enum lock_wait *out,
                        struct lock_error *err)
{
    if (asked == LOCK_WAIT_DEFAULT || asked == ops->wait) {
        *out = ops->wait;
        return LOCK_OK;
    }
    if (!ops->remote || asked == LOCK_WAIT_LOCAL) {
        snprintf(err->msg, sizeof(err->msg), "%s waits only by %s, not by %s", ops->name,
                 lock_wait_name(ops->wait), lock_wait_name(asked));
        err->io = 0;
        return LOCK_ERROR;
    }
    *out = asked;
    return LOCK_OK;
}

/* Frees the strings lock_client_create copied; the password's bytes are wiped first. */
static void config_free(struct lock_config *cfg)
{
    if (cfg->redis_password) {
        volatile char *p = (volatile char *)cfg->redis_password;
        while (*p)
            *p++ = '\0';
    }
    free((char *)cfg->redis_host);
    free((char *)cfg->instance_id);
    free((char *)cfg->lock_masters);
    free((char *)cfg->redis_standby);
    free((char *)cfg->redis_user);
    free((char *)cfg->redis_password);
}

/* Creates the client; the caller frees it with lock_client_destroy(). */
struct lock_client *lock_client_create(const struct lock_ops *ops, const struct lock_config *cfg,
                                       struct lock_error *err)
{
    struct lock_client *lc = calloc(1, sizeof(*lc));
    int redis_up = 0, store_up = 0, wait_up = 0;

    if (lc == NULL) {
        lock_fail(err, NULL, "out of memory");
        return NULL;
    }
    lc->ops = ops;
    lc->cfg = *cfg;
    lc->cfg.redis_host = strdup(cfg->redis_host ? cfg->redis_host : "127.0.0.1");
    lc->cfg.instance_id = strdup(cfg->instance_id ? cfg->instance_id : "instance");
    lc->cfg.lock_masters = cfg->lock_masters ? strdup(cfg->lock_masters) : NULL;
    lc->cfg.redis_standby = cfg->redis_standby ? strdup(cfg->redis_standby) : NULL;
    lc->cfg.redis_user = cfg->redis_user ? strdup(cfg->redis_user) : NULL;
    lc->cfg.redis_password = cfg->redis_password ? strdup(cfg->redis_password) : NULL;
    if (lc->cfg.ttl_ms <= 0)
        lc->cfg.ttl_ms = 30000;
    if (lc->cfg.retry_ms <= 0)
        lc->cfg.retry_ms = 10;
    if (lc->cfg.redis_host == NULL || lc->cfg.instance_id == NULL) {
        lock_fail(err, NULL, "out of memory");
        goto out_free;
    }
    if (resolve_wait(ops, cfg->wait, &lc->cfg.wait, err) != LOCK_OK)
        goto out_free;
    if (ops->keepalive && ops->renew == NULL) {
        lock_fail(err, NULL, "a keep-alive needs a store that renews");
        goto out_free;
    }
    if (lock_redis_init(lc, err) != LOCK_OK)
        goto out_free;
    redis_up = 1;
    if (ops->init && ops->init(lc, err) != LOCK_OK)
        goto out_free;
    store_up = 1;
    if (lock_wait_init(lc, err) != LOCK_OK)
        goto out_free;
    wait_up = 1;
    if (ops->keepalive && lock_keepalive_init(lc, err) != LOCK_OK)
        goto out_free;
    return lc;

out_free:
    if (wait_up)
        lock_wait_destroy(lc);
    if (store_up && ops->destroy)
        ops->destroy(lc);
    if (redis_up)
        lock_redis_destroy(lc);
    config_free(&lc->cfg);
    free(lc);
    return NULL;
}

void lock_client_destroy(struct lock_client *lc)
{
    if (lc == NULL)
        return;
    if (lc->ops->keepalive)
        lock_keepalive_destroy(lc);
    lock_wait_destroy(lc);
    if (lc->ops->destroy)
        lc->ops->destroy(lc);
    lock_redis_destroy(lc);
    config_free(&lc->cfg);
    free(lc);
}

/* "<instance id>:<n>", n given to the calling thread on first use, never reused. */
static void owner_id(const struct lock_client *lc, char *owner, size_t size)
{
    static atomic_long next_thread;
    static _Thread_local long thread_no;

    if (thread_no == 0)
        thread_no = atomic_fetch_add(&next_thread, 1) + 1;
    snprintf(owner, size, "%s:%ld", lc->cfg.instance_id, thread_no);
}

/* WAIT: a grant counts once cfg.replicas replicas of the data Redis have it (the lock
 * key and the fencing token), so that a failover to one of them cannot forget it. Waits
 * a tenth of the TTL, at most 4 s (below the connection's 5 s command timeout). LOCK_OK,
 * LOCK_UNAVAILABLE (too few acknowledged) or LOCK_ERROR. */
static int replicated(struct lock_client *lc, struct lock_error *err)
{
    long timeout = lc->cfg.ttl_ms / 10 < 1 ? 1 : lc->cfg.ttl_ms / 10 > 4000 ? 4000 : lc->cfg.ttl_ms / 10;
    redisReply *r = lock_command(lc, LOCK_R_INTEGER, err, "WAIT %d %ld", lc->cfg.replicas, timeout);
    long long acked;

    if (r == NULL)
        return LOCK_ERROR;
    acked = r->integer;
    freeReplyObject(r);
    if (acked >= lc->cfg.replicas)
        return LOCK_OK;
    snprintf(err->msg, sizeof(err->msg), "the grant reached %lld of %d replicas in %ld ms",
             acked, lc->cfg.replicas, timeout);
    err->io = 0;
    return LOCK_UNAVAILABLE;
}

/* The store's release, with the writes riding before it and the waiters' notification
 * after it (notify); the store's status. */
static int give_back(struct lock_client *lc, struct lock_grant *g, struct lock_rider *rider,
                     struct lock_error *err)
{
    struct lock_rider notice = { 0 };
    int st;

    lock_wait_releasing(lc, g, &notice);
    lock_riders_set(lc, rider, notice.n ? &notice : NULL);
    st = lc->ops->release(lc, g, err);
    lock_riders_set(lc, NULL, NULL);
    lock_rider_reset(&notice);
    return st;
}

int lock_acquire(struct lock_client *lc, const char *item, long wait_ms, struct lock_grant *g,
                 struct lock_rider *rider, struct lock_error *err)
{
    long long start = lock_now_ms();
    size_t n = item ? strlen(item) : 0;
    int st, granted;

    memset(g, 0, sizeof(*g));
    if (n == 0 || n > LOCK_ITEM_MAX)
        return lock_fail(err, NULL, "an item is 1 to 64 characters");
    memcpy(g->item, item, n + 1);
    snprintf(g->key, sizeof(g->key), "lock:{%s}", item);
    owner_id(lc, g->owner, sizeof(g->owner));

    st = lock_wait_acquire(lc, g, wait_ms, rider, err);
    granted = st == LOCK_OK;
    if (granted && lock_riders_flush(lc, err) != LOCK_OK)
        st = LOCK_ERROR;      /* the read did not get through */
    else if (granted && g->depth == 1 && lc->cfg.replicas > 0)
        st = replicated(lc, err);
    if (granted && st != LOCK_OK) {
        /* Granted, but not usable: give the lock back (telling the waiters, as a release
         * does), report why. */
        give_back(lc, g, NULL, &(struct lock_error){ 0 });
        lock_wait_released(lc, g);
    }
    lock_riders_set(lc, NULL, NULL);
    g->waited_ms = lock_now_ms() - start;
    if (st == LOCK_OK) {
        if (lc->ops->keepalive)
            lock_keepalive_hold(lc, g);
        atomic_fetch_add(&lc->acquisitions, 1);
    } else if (st == LOCK_TIMEOUT) {
        atomic_fetch_add(&lc->timeouts, 1);
    }
    return st;
}

int lock_release(struct lock_client *lc, struct lock_grant *g, struct lock_rider *rider,
                 struct lock_error *err)
{
    int st = LOCK_OK, released, lost = 0;

    /* A lock kept in the process has no command to ride with: the writes go first. */
    lock_riders_set(lc, rider, NULL);
    if (!lc->ops->remote) {
        st = lock_riders_flush(lc, err);
        rider = NULL;
    }
    released = give_back(lc, g, rider, st == LOCK_OK ? err : &(struct lock_error){ 0 });
    if (st == LOCK_OK)
        st = released;
    if (lc->ops->keepalive)
        lost = lock_keepalive_drop(lc, g);
    lock_wait_released(lc, g);

    if (st == LOCK_NOT_OWNER) {
        atomic_fetch_add(&lc->lost_leases, 1);
        if (lost || (g->valid_until_ms != 0 && lock_now_ms() >= g->valid_until_ms)) {
            st = LOCK_EXPIRED;
        } else {
            /* Ours no more, although our lease had time left: another client deleted it. */
            atomic_fetch_add(&lc->stolen, 1);
            st = LOCK_STOLEN;
        }
    }
    return st;
}

int lock_grant_is_lost(struct lock_client *lc, const struct lock_grant *g)
{
    if (lc->ops->keepalive)
        return lock_keepalive_is_lost(lc, g);
    return g->valid_until_ms != 0 && lock_now_ms() >= g->valid_until_ms;
}

int lock_grant_is_wanted(struct lock_client *lc, const struct lock_grant *g)
{
    return lock_wait_is_wanted(lc, g);
}
