/* lock.c - The registry of versions, the client, the waiting loop and the Lua runner. */
#include "lock/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const struct lock_ops lock_v1, lock_v2, lock_v3, lock_v4, lock_v5, lock_v6, lock_v7,
    lock_v8, lock_none, lock_atomic;

static const struct lock_ops *const versions[] = {
    &lock_v1, &lock_v2, &lock_v3, &lock_v4, &lock_v5, &lock_v6, &lock_v7, &lock_v8,
    &lock_none, &lock_atomic, NULL,
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

long long lock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

/* Creates the client; the caller frees it with lock_client_destroy(). */
struct lock_client *lock_client_create(const struct lock_ops *ops, const struct lock_config *cfg,
                                       struct lock_error *err)
{
    struct lock_client *lc = calloc(1, sizeof(*lc));
    if (lc == NULL) {
        lock_fail(err, NULL, "out of memory");
        return NULL;
    }
    lc->ops = ops;
    lc->cfg = *cfg;
    lc->cfg.redis_host = strdup(cfg->redis_host ? cfg->redis_host : "127.0.0.1");
    lc->cfg.instance_id = strdup(cfg->instance_id ? cfg->instance_id : "instance");
    if (lc->cfg.ttl_ms <= 0)
        lc->cfg.ttl_ms = 30000;
    if (lc->cfg.retry_ms <= 0)
        lc->cfg.retry_ms = 10;
    if (lc->cfg.redis_host == NULL || lc->cfg.instance_id == NULL) {
        lock_fail(err, NULL, "out of memory");
        goto out_free;
    }
    if (ops->init && ops->init(lc, err) != LOCK_OK)
        goto out_free;
    return lc;

out_free:
    free((char *)lc->cfg.redis_host);
    free((char *)lc->cfg.instance_id);
    free(lc);
    return NULL;
}

void lock_client_destroy(struct lock_client *lc)
{
    if (lc == NULL)
        return;
    if (lc->ops->destroy)
        lc->ops->destroy(lc);
    free((char *)lc->cfg.redis_host);
    free((char *)lc->cfg.instance_id);
    free(lc);
}

/* The thread's number, given on first use and never reused in this process. */
void lock_owner_id(const struct lock_client *lc, char *owner, size_t size)
{
    static atomic_long next_thread;
    static _Thread_local long thread_no;

    if (thread_no == 0)
        thread_no = atomic_fetch_add(&next_thread, 1) + 1;
    snprintf(owner, size, "%s:%ld", lc->cfg.instance_id, thread_no);
}

int lock_acquire(struct lock_client *lc, redisContext *c, const char *key, const char *owner,
                 long wait_ms, struct lock_grant *g, struct lock_error *err)
{
    long long start = lock_now_ms(), now;
    int st;

    memset(g, 0, sizeof(*g));
    if (snprintf(g->key, sizeof(g->key), "%s", key) >= (int)sizeof(g->key) ||
        snprintf(g->owner, sizeof(g->owner), "%s", owner) >= (int)sizeof(g->owner))
        return lock_fail(err, NULL, "lock key or owner too long");

    if (lc->ops->acquire_wait) {
        st = lc->ops->acquire_wait(lc, c, g, wait_ms, err);
    } else {
        for (;;) {
            g->acquired_ms = lock_now_ms();
            st = lc->ops->try_acquire(lc, c, g, err);
            if (st != LOCK_TIMEOUT)
                break;
            now = lock_now_ms();
            if (now - start >= wait_ms)
                break;
            long nap = lc->cfg.retry_ms;
            if (nap > wait_ms - (now - start))
                nap = wait_ms - (now - start);
            lock_sleep_ms(nap);
        }
    }
    g->waited_ms = lock_now_ms() - start;
    if (st == LOCK_OK)
        atomic_fetch_add(&lc->acquisitions, 1);
    else if (st == LOCK_TIMEOUT)
        atomic_fetch_add(&lc->timeouts, 1);
    return st;
}

int lock_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                 struct lock_error *err)
{
    int st = lc->ops->release(lc, c, g, err);

    if (st == LOCK_NOT_OWNER) {
        atomic_fetch_add(&lc->lost_leases, 1);
        /* Ours no more, although our lease had time left: another client deleted it. */
        if (g->valid_until_ms == 0 || lock_now_ms() < g->valid_until_ms)
            atomic_fetch_add(&lc->stolen, 1);
    }
    return st;
}

int lock_grant_is_lost(const struct lock_grant *g)
{
    if (g->lease)
        return lock_lease_is_lost(g->lease);
    return g->valid_until_ms != 0 && lock_now_ms() >= g->valid_until_ms;
}

/* Loads s into Redis and records its sha (the same for every server: SHA1 of the text). */
static int script_load(redisContext *c, struct lock_script *s, struct lock_error *err)
{
    static pthread_mutex_t sha_mu = PTHREAD_MUTEX_INITIALIZER;
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", s->source);
    int st = LOCK_OK;

    if (r == NULL)
        return lock_fail(err, c, "SCRIPT LOAD");
    if (r->type != REDIS_REPLY_STRING || r->len != 40) {
        st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "SCRIPT LOAD: bad reply");
        goto out_free_reply;
    }
    pthread_mutex_lock(&sha_mu);
    if (!atomic_load_explicit(&s->loaded, memory_order_acquire)) {
        memcpy(s->sha, r->str, 40);
        s->sha[40] = '\0';
        atomic_store_explicit(&s->loaded, 1, memory_order_release);
    }
    pthread_mutex_unlock(&sha_mu);

out_free_reply:
    freeReplyObject(r);
    return st;
}

redisReply *lock_script_eval(redisContext *c, struct lock_script *s, int nkeys, int nargs,
                             const char **argv, struct lock_error *err)
{
    enum { MAX_ARGS = 16 };
    const char *cmd[MAX_ARGS + 3];
    char numkeys[16];
    redisReply *r;

    if (nkeys + nargs > MAX_ARGS) {
        lock_fail(err, NULL, "too many script arguments");
        return NULL;
    }
    if (!atomic_load_explicit(&s->loaded, memory_order_acquire) &&
        script_load(c, s, err) != LOCK_OK)
        return NULL;
    snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
    cmd[0] = "EVALSHA";
    cmd[1] = s->sha;
    cmd[2] = numkeys;
    for (int i = 0; i < nkeys + nargs; i++)
        cmd[3 + i] = argv[i];

    for (int attempt = 0; attempt < 2; attempt++) {
        r = redisCommandArgv(c, 3 + nkeys + nargs, cmd, NULL);
        if (r == NULL) {
            lock_fail(err, c, s->name);
            return NULL;
        }
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0 && attempt == 0) {
            freeReplyObject(r);
            if (script_load(c, s, err) != LOCK_OK)
                return NULL;
            continue;
        }
        break;
    }
    return r;
}
