/* v8_watchdog.c - v8: v7 plus a watchdog thread renewing held leases every ttl/3. A whole-process pause stops it too. */
#include "lock/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lua_scripts.h"

static struct lock_script renew_script = { "v8_renew", lua_v8_renew, "", 0 };

/* One held lock as the watchdog sees it: one entry per key and owner, however deep the
 * nesting. Fields other than lost and valid_until_ms are guarded by watchdog.mu. */
struct lock_lease {
    char key[LOCK_KEY_MAX];
    char owner[LOCK_OWNER_MAX];
    int holds;                  /* grants in this process not yet released */
    int pins;                   /* renewals in progress (the watchdog is using it) */
    atomic_int lost;            /* renewal refused (not ours any more) or time ran out */
    atomic_llong valid_until_ms;
    struct lock_lease *next;
};

/* The process's watchdog: one thread for every held lock. Started by init, stopped by
 * destroy. It owns its own Redis connection. */
struct watchdog {
    struct lock_client *lc;
    pthread_t thread;
    pthread_mutex_t mu;         /* guards leases, stopping */
    pthread_cond_t cv;
    struct lock_lease *leases;
    int stopping;
    redisContext *c;            /* the watchdog thread's own */
};

int lock_lease_is_lost(const struct lock_lease *lease)
{
    return atomic_load((atomic_int *)&lease->lost) ||
           lock_now_ms() >= atomic_load((atomic_llong *)&lease->valid_until_ms);
}

static void lease_unlink_free(struct watchdog *w, struct lock_lease *lease)
{
    struct lock_lease **p;

    for (p = &w->leases; *p; p = &(*p)->next)
        if (*p == lease) {
            *p = lease->next;
            break;
        }
    free(lease);
}

/* Renews one lease on the watchdog's connection (reconnecting when needed). */
static void renew_one(struct watchdog *w, struct lock_lease *lease)
{
    struct lock_client *lc = w->lc;
    struct lock_error err;
    char ttl[32];
    const char *argv[] = { lease->key, lease->owner, ttl };
    long long sent = lock_now_ms();
    redisReply *r;

    if (w->c == NULL || w->c->err) {
        struct timeval tv = { 1, 0 };
        if (w->c)
            redisFree(w->c);
        w->c = redisConnectWithTimeout(lc->cfg.redis_host, lc->cfg.redis_port, tv);
        if (w->c == NULL || w->c->err)
            goto out_unreachable;
        redisSetTimeout(w->c, tv);
    }
    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    r = lock_script_eval(w->c, &renew_script, 1, 2, argv, &err);
    if (r == NULL)
        goto out_unreachable;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
        atomic_store(&lease->valid_until_ms, sent + lc->cfg.ttl_ms);
        atomic_fetch_add(&lc->renewals, 1);
    } else if (r->type == REDIS_REPLY_INTEGER) {
        /* The hash no longer holds us: the lease ran out and someone else may hold it. */
        if (!atomic_exchange(&lease->lost, 1))
            atomic_fetch_add(&lc->lost_leases, 1);
    }
    freeReplyObject(r);
    return;

out_unreachable:
    /* Redis did not answer: the lease is good only until its time runs out. */
    if (lock_now_ms() >= atomic_load(&lease->valid_until_ms))
        atomic_store(&lease->lost, 1);
}

static void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;
    long period = w->lc->cfg.ttl_ms / 3 > 0 ? w->lc->cfg.ttl_ms / 3 : 1;
    struct timespec until;

    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += period / 1000;
        until.tv_nsec += (period % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        /* Sleeps a full period, or until stopped; with nothing held it issues no command. */
        while (!w->stopping && pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT)
            ;
        if (w->stopping)
            break;
        for (struct lock_lease *lease = w->leases, *next; lease; lease = next) {
            if (atomic_load(&lease->lost)) {
                next = lease->next;
                continue;
            }
            /* Pinned, the lease outlives a release while the mutex is let go for I/O. */
            lease->pins++;
            pthread_mutex_unlock(&w->mu);
            renew_one(w, lease);
            pthread_mutex_lock(&w->mu);
            lease->pins--;
            next = lease->next;
            if (lease->holds == 0 && lease->pins == 0)
                lease_unlink_free(w, lease);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int v8_init(struct lock_client *lc, struct lock_error *err)
{
    struct watchdog *w = calloc(1, sizeof(*w));
    int rc;

    if (w == NULL)
        return lock_fail(err, NULL, "out of memory");
    w->lc = lc;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    rc = pthread_create(&w->thread, NULL, watchdog_main, w);
    if (rc != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return lock_fail(err, NULL, "cannot start the watchdog thread");
    }
    lc->state = w;
    return LOCK_OK;
}

static void v8_destroy(struct lock_client *lc)
{
    struct watchdog *w = lc->state;

    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    while (w->leases)
        lease_unlink_free(w, w->leases);
    if (w->c)
        redisFree(w->c);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* v7's acquire, then the lease is handed to the watchdog (or, nested, joined). */
static int v8_try_acquire(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                          struct lock_error *err)
{
    struct watchdog *w = lc->state;
    struct lock_lease *lease;
    int st = lock_hash_try_acquire(lc, c, g, err);

    if (st != LOCK_OK)
        return st;
    pthread_mutex_lock(&w->mu);
    for (lease = w->leases; lease; lease = lease->next)
        if (strcmp(lease->key, g->key) == 0 && strcmp(lease->owner, g->owner) == 0)
            break;
    if (lease == NULL && (lease = calloc(1, sizeof(*lease))) != NULL) {
        strcpy(lease->key, g->key);
        strcpy(lease->owner, g->owner);
        lease->next = w->leases;
        w->leases = lease;
    }
    if (lease) {
        lease->holds++;
        atomic_store(&lease->lost, 0);
        atomic_store(&lease->valid_until_ms, g->valid_until_ms);
    }
    pthread_mutex_unlock(&w->mu);
    g->lease = lease; /* NULL only when out of memory: then it is plain v7 */
    return LOCK_OK;
}

/* v7's release; the last release of a key in this process stops its renewal. */
static int v8_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                      struct lock_error *err)
{
    struct watchdog *w = lc->state;
    struct lock_lease *lease = g->lease;
    int st = lock_hash_release(lc, c, g, err);

    if (lease == NULL)
        return st;
    pthread_mutex_lock(&w->mu);
    g->valid_until_ms = atomic_load(&lease->valid_until_ms);
    if (atomic_load(&lease->lost))
        g->valid_until_ms = 1; /* the watchdog saw it go: not stolen before its time */
    if (--lease->holds == 0 && lease->pins == 0)
        lease_unlink_free(w, lease);
    pthread_mutex_unlock(&w->mu);
    g->lease = NULL;
    return st;
}

const struct lock_ops lock_v8 = {
    .name = "v8",
    .alias = "watchdog",
    .title = "v7 + watchdog renewal every ttl/3 while held",
    .flaw = "a whole-process pause (SIGSTOP, GC) longer than the TTL stops the watchdog too",
    .uses_redis = 1,
    .init = v8_init,
    .destroy = v8_destroy,
    .try_acquire = v8_try_acquire,
    .release = v8_release,
};
