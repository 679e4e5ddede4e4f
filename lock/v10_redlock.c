/* v10_redlock.c - v10: Redlock: the lock held on a quorum of N independent masters, with v9's fencing token. A master that restarts empty before the lease ends can grant it twice. */
#include "lock/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_scripts.h"

enum { MASTERS_MAX = LOCK_SERVERS_MAX };

/* The store's process-wide state: the masters, set by v10_init, read-only afterwards. */
struct redlock {
    struct lock_server m[MASTERS_MAX];
    int n, quorum;              /* quorum: n / 2 + 1 */
    long timeout_ms;            /* per master, to connect and to answer: far below the TTL */
    pthread_key_t key;          /* the calling thread's connections (struct links) */
    const struct lock_client *lc; /* whose credentials open the connections */
};

/* One thread's connections to the masters (a redisContext is not thread-safe). */
struct links {
    redisContext *c[MASTERS_MAX];
};

static void links_free(void *p)
{
    struct links *l = p;

    for (int i = 0; i < MASTERS_MAX; i++)
        if (l->c[i])
            redisFree(l->c[i]);
    free(l);
}

/* Parses "HOST:PORT,HOST:PORT,..." into rl. 0, or -1 with err filled. */
static int parse_masters(struct redlock *rl, const char *list, struct lock_error *err)
{
    if (list == NULL || *list == '\0')
        return lock_fail(err, NULL, "redlock needs its masters: --lock-redis HOST:PORT,HOST:PORT,HOST:PORT"), -1;
    if ((rl->n = lock_servers_parse(list, rl->m, MASTERS_MAX)) < 0)
        return lock_fail(err, NULL, "--lock-redis: HOST:PORT,... (ports 1 to 65535, at most 9 masters)"), -1;
    rl->quorum = rl->n / 2 + 1;
    return 0;
}

static int v10_init(struct lock_client *lc, struct lock_error *err)
{
    struct redlock *rl = calloc(1, sizeof(*rl));

    if (rl == NULL)
        return lock_fail(err, NULL, "out of memory");
    if (parse_masters(rl, lc->cfg.lock_masters, err) != 0) {
        free(rl);
        return LOCK_ERROR;
    }
    rl->timeout_ms = lc->cfg.ttl_ms / 10 < 5 ? 5 : lc->cfg.ttl_ms / 10 > 200 ? 200 : lc->cfg.ttl_ms / 10;
    if (pthread_key_create(&rl->key, links_free) != 0) {
        free(rl);
        return lock_fail(err, NULL, "cannot create the per-thread connections");
    }
    rl->lc = lc;
    lc->store_state = rl;
    return LOCK_OK;
}

/* Frees the calling thread's connections; other threads free theirs when they exit. */
static void v10_destroy(struct lock_client *lc)
{
    struct redlock *rl = lc->store_state;
    struct links *l = pthread_getspecific(rl->key);

    if (l) {
        pthread_setspecific(rl->key, NULL);
        links_free(l);
    }
    pthread_key_delete(rl->key);
    free(rl);
}

/* Master i's connection on this thread, connected within the per-master timeout; NULL
 * when it cannot be reached now (it counts as a master that said no). */
static redisContext *link_to(struct redlock *rl, struct links *l, int i)
{
    struct lock_error ignored;

    if (l->c[i] && !l->c[i]->err)
        return l->c[i];
    if (l->c[i])
        redisFree(l->c[i]);
    l->c[i] = lock_redis_open(rl->lc, rl->m[i].host, rl->m[i].port, rl->timeout_ms, &ignored);
    return l->c[i];
}

/* Runs one script (one key, then args) on every master at once: sends it to all, then
 * reads each reply, each master within its timeout. replies[i] is master i's reply, or
 * NULL when it could not be reached or did not answer in time (its connection is
 * dropped). Returns how many answered; the caller frees the replies. */
static int on_all(struct redlock *rl, const char *script, int nargs, const char **args,
                  redisReply **replies)
{
    struct links *l = pthread_getspecific(rl->key);
    const char *argv[8] = { "EVAL", script, "1" };
    int answered = 0;

    if (nargs > 5)
        nargs = 5;   /* argv's room; the scripts here take 2 or 3 */
    if (l == NULL && (l = calloc(1, sizeof(*l))) != NULL)
        pthread_setspecific(rl->key, l);
    for (int i = 0; i < nargs; i++)
        argv[3 + i] = args[i];
    for (int i = 0; i < rl->n; i++) {
        redisContext *c = l ? link_to(rl, l, i) : NULL;
        int done = 0;

        replies[i] = NULL;
        if (c == NULL)
            continue;
        redisAppendCommandArgv(c, 3 + nargs, argv, NULL);
        while (!done && redisBufferWrite(c, &done) == REDIS_OK)
            ;
    }
    for (int i = 0; i < rl->n; i++) {
        if (l == NULL || l->c[i] == NULL)
            continue;
        if (l->c[i]->err || redisGetReply(l->c[i], (void **)&replies[i]) != REDIS_OK) {
            redisFree(l->c[i]);
            l->c[i] = NULL;
            replies[i] = NULL;
            continue;
        }
        answered++;
    }
    return answered;
}

static void free_all(struct redlock *rl, redisReply **replies)
{
    for (int i = 0; i < rl->n; i++)
        freeReplyObject(replies[i]);
}

/* Gives back one hold on every master at once; how many gave it back (as in
 * v7_release.lua: holds left >= 0), and in *answered how many answered at all. */
static int release_all(struct redlock *rl, const struct lock_grant *g, int *answered)
{
    const char *args[] = { g->key, g->owner };
    redisReply *r[MASTERS_MAX];
    int released = 0;

    *answered = on_all(rl, lua_v7_release, 2, args, r);
    for (int i = 0; i < rl->n; i++)
        if (r[i] && r[i]->type == REDIS_REPLY_INTEGER && r[i]->integer >= 0)
            released++;
    free_all(rl, r);
    return released;
}

/* One try: v7's acquire script on every master at once. Granted by a quorum while the
 * lease still has time left (TTL - elapsed - drift, on the monotonic clock): the grant,
 * and a first grant takes its token from fence:{I} on the data Redis (the read riding
 * with it). Otherwise what it got is given back on every master at once: LOCK_TIMEOUT
 * (retry after the holder's lease, or after a random delay when the vote was split), or
 * LOCK_UNAVAILABLE when fewer than a quorum answered at all. */
static int v10_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_error *err)
{
    struct redlock *rl = lc->store_state;
    char ttl[32];
    const char *args[] = { g->key, g->owner, ttl };
    redisReply *r[MASTERS_MAX];
    int granted = 0, answered, depth = 0, ignored;
    long long left = 0, validity;

    (void)wait_ms;
    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    answered = on_all(rl, lua_v7_acquire, 3, args, r);
    for (int i = 0; i < rl->n; i++) {
        if (r[i] == NULL || r[i]->type != REDIS_REPLY_INTEGER)
            continue;
        if (r[i]->integer > 0) {
            granted++;
            depth = (int)(r[i]->integer > depth ? r[i]->integer : depth);
        } else if (-r[i]->integer > 0 && (left == 0 || -r[i]->integer < left)) {
            left = -r[i]->integer;
        }
    }
    free_all(rl, r);
    validity = lc->cfg.ttl_ms - (lock_now_ms() - g->acquired_ms) - (lc->cfg.ttl_ms / 100 + 2);
    if (granted >= rl->quorum && validity > 0) {
        g->depth = depth;
        g->valid_until_ms = g->acquired_ms + validity;
        if (depth == 1) {
            redisReply *t = lock_command(lc, LOCK_R_INTEGER, err, "INCR fence:{%s}", g->item);
            if (t == NULL) {
                release_all(rl, g, &ignored);
                return LOCK_ERROR;
            }
            g->token = t->integer;
            freeReplyObject(t);
        }
        return LOCK_OK;
    }
    if (granted > 0)
        release_all(rl, g, &ignored);
    if (answered < rl->quorum) {
        snprintf(err->msg, sizeof(err->msg), "no quorum: %d of %d lock masters answered (%d needed)",
                 answered, rl->n, rl->quorum);
        err->io = 0;
        return LOCK_UNAVAILABLE;
    }
    g->retry_in_ms = granted > 0 ? 1 + rand() % (lc->cfg.retry_ms > 0 ? lc->cfg.retry_ms : 10) : left;
    return LOCK_TIMEOUT;
}

/* The sale's writes go first, to the data Redis; then one hold is given back on every
 * master at once; then the notification. LOCK_OK when a quorum gave it back, LOCK_NOT_OWNER
 * when a quorum answered but fewer held it, LOCK_ERROR when fewer than a quorum answered
 * (the others' keys expire with their lease). */
static int v10_release(struct lock_client *lc, struct lock_grant *g, struct lock_error *err)
{
    struct redlock *rl = lc->store_state;
    struct lock_error ignored;
    int st, released, answered;

    lock_release_gap(lc, g);
    st = lock_riders_flush_before(lc, err);
    released = release_all(rl, g, &answered);
    lock_riders_flush(lc, &ignored);
    if (st != LOCK_OK)
        return st;
    if (released >= rl->quorum)
        return LOCK_OK;
    if (answered >= rl->quorum)
        return LOCK_NOT_OWNER;
    snprintf(err->msg, sizeof(err->msg), "release: %d of %d lock masters answered", answered, rl->n);
    err->io = 0;
    return LOCK_ERROR;
}

/* Renewal by quorum: v8's renew script on every master at once. */
static int v10_renew(struct lock_client *lc, const struct lock_grant *g, struct lock_error *err)
{
    struct redlock *rl = lc->store_state;
    char ttl[32];
    const char *args[] = { g->key, g->owner, ttl };
    redisReply *r[MASTERS_MAX];
    int renewed = 0, answered;

    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    answered = on_all(rl, lua_v8_renew, 3, args, r);
    for (int i = 0; i < rl->n; i++)
        if (r[i] && r[i]->type == REDIS_REPLY_INTEGER && r[i]->integer == 1)
            renewed++;
    free_all(rl, r);
    if (renewed >= rl->quorum)
        return LOCK_OK;
    if (answered >= rl->quorum)
        return LOCK_NOT_OWNER;
    return lock_fail(err, NULL, "renew: fewer than a quorum of lock masters answered");
}

/* v9's token and v8's watchdog over a quorum of independent masters (v7's scripts on
 * each); stock, fence:{I} and the notifications stay on the data Redis. */
const struct lock_ops lock_v10 = {
    .name = "v10",
    .alias = "redlock",
    .title = "v9 on a quorum of N independent masters (--lock-redis), validity on a monotonic clock",
    .flaw = "a master that restarts empty (no fsync) before the lease ends can give the lock twice",
    .remote = 1,
    .init = v10_init,
    .destroy = v10_destroy,
    .try_acquire = v10_try_acquire,
    .release = v10_release,
    .renew = v10_renew,
    .wait = LOCK_WAIT_NOTIFY,
    .keepalive = 1,
};
