/* v10_redlock.c - v10: Redlock: the lock held on a quorum of N independent masters, with v9's fencing token. A master that restarts empty before the lease ends can grant it twice. */
#include "lock/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_scripts.h"

enum { MASTERS_MAX = RD_SERVERS_MAX };

/* The store's process-wide state: a Redis client per master, set by v10_init. Each
 * client keeps one connection per thread, with the per-master timeout. */
struct redlock {
    struct rd_client *m[MASTERS_MAX];
    int n, quorum;              /* quorum: n / 2 + 1 */
};

static void v10_destroy(struct lock_client *lc)
{
    struct redlock *rl = lc->store_state;

    for (int i = 0; i < rl->n; i++)
        rd_client_destroy(rl->m[i]);
    free(rl);
}

/* A client for each master of "HOST:PORT,..." with the lock's credentials, each within
 * timeout_ms to connect and to answer. LOCK_OK or LOCK_ERROR (what was made is freed). */
static int masters_open(struct lock_client *lc, struct redlock *rl, struct error *err)
{
    struct rd_server at[MASTERS_MAX];
    long timeout = lc->cfg.ttl_ms / 10 < 5 ? 5 : lc->cfg.ttl_ms / 10 > 200 ? 200 : lc->cfg.ttl_ms / 10;
    int n;

    if (lc->cfg.lock_masters == NULL || *lc->cfg.lock_masters == '\0')
        return error_set(err, FAULT_USAGE, "redlock needs its masters: --lock-redis HOST:PORT,HOST:PORT,HOST:PORT");
    if ((n = rd_servers_parse(lc->cfg.lock_masters, at, MASTERS_MAX)) <= 0)
        return error_set(err, FAULT_USAGE, "--lock-redis: HOST:PORT,... (ports 1 to 65535, at most %d masters)",
                         MASTERS_MAX);
    for (rl->n = 0; rl->n < n; rl->n++) {
        struct rd_config cfg = {
            .host = at[rl->n].host, .port = at[rl->n].port,
            .user = lc->cfg.redis_user, .password = lc->cfg.redis_password,
            .connect_timeout_ms = timeout, .command_timeout_ms = timeout,
        };
        struct rd_error why = { 0 };
        if ((rl->m[rl->n] = rd_client_create(&cfg, &why)) == NULL) {
            rd_error_map(&why, err);
            return LOCK_ERROR;
        }
    }
    rl->quorum = rl->n / 2 + 1;
    return LOCK_OK;
}

static int v10_init(struct lock_client *lc, struct error *err)
{
    struct redlock *rl = calloc(1, sizeof(*rl));

    if (rl == NULL)
        return error_set(err, FAULT_NOMEM, "out of memory");
    lc->store_state = rl;
    if (masters_open(lc, rl, err) != LOCK_OK) {
        v10_destroy(lc);
        lc->store_state = NULL;
        return LOCK_ERROR;
    }
    return LOCK_OK;
}

/* Runs script (one key, then nargs args) on every master at once; replies[i] is master
 * i's, or NULL when it could not be reached or did not answer in time. Returns how many
 * answered; the caller frees the replies. */
static int on_all(struct redlock *rl, const struct rd_script *script, int nargs,
                  const char **args, struct rd_reply **replies)
{
    struct rd_batch b = { 0 };
    struct rd_error ignored;
    int answered = 0;

    if (rd_batch_add_eval(&b, script, 1, nargs - 1, args, &ignored) == RD_OK)
        answered = rd_fanout(rl->m, rl->n, &b, replies);
    else
        for (int i = 0; i < rl->n; i++)
            replies[i] = NULL;
    rd_batch_reset(&b);
    return answered;
}

static void free_all(struct redlock *rl, struct rd_reply **replies)
{
    for (int i = 0; i < rl->n; i++)
        rd_reply_free(replies[i]);
}

/* 1 when r is an integer reply. */
static int is_integer(const struct rd_reply *r)
{
    return r && r->type == RD_INTEGER;
}

/* Gives back one hold on every master at once; how many gave it back (as in
 * v7_release.lua: holds left >= 0), and in *answered how many answered at all. */
static int release_all(struct redlock *rl, const struct lock_grant *g, int *answered)
{
    const char *args[] = { g->key, g->owner };
    struct rd_reply *r[MASTERS_MAX];
    int released = 0;

    *answered = on_all(rl, &lua_v7_release, 2, args, r);
    for (int i = 0; i < rl->n; i++)
        if (is_integer(r[i]) && r[i]->integer >= 0)
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
                           struct lock_trip *trip, struct error *err)
{
    struct redlock *rl = lc->store_state;
    char ttl[32];
    const char *args[] = { g->key, g->owner, ttl };
    struct rd_reply *r[MASTERS_MAX];
    int granted = 0, answered, depth = 0, ignored;
    long long left = 0, validity;

    (void)wait_ms;
    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    answered = on_all(rl, &lua_v7_acquire, 3, args, r);
    if (answered < rl->n)   /* a master that did not answer may grant later: a new id next */
        lock_owner_failed(lc, g, FAULT_TIMEOUT, 0);
    for (int i = 0; i < rl->n; i++) {
        if (!is_integer(r[i]))
            continue;
        if (r[i]->integer > 0) {
            granted++;
            depth = (int)(r[i]->integer > depth ? r[i]->integer : depth);
        } else if (-r[i]->integer > 0 && (left == 0 || -r[i]->integer < left)) {
            left = -r[i]->integer;
        }
    }
    free_all(rl, r);
    validity = lc->cfg.ttl_ms - (clock_now_ms() - g->acquired_ms) - (lc->cfg.ttl_ms / 100 + 2);
    if (granted >= rl->quorum && validity > 0) {
        g->depth = depth;
        g->valid_until_ms = g->acquired_ms + validity;
        if (depth == 1) {
            char fence[LOCK_KEY_MAX];
            struct rd_reply *t = lock_command(lc, trip, RD_T(RD_INTEGER), err, "INCR %s",
                                              lock_fence_key(&fence, g->item));
            if (t == NULL) {
                release_all(rl, g, &ignored);
                return LOCK_ERROR;
            }
            g->token = t->integer;
            rd_reply_free(t);
        } else if (lock_trip_send(lc, trip, err) != LOCK_OK) {
            release_all(rl, g, &ignored);   /* the read did not get through */
            return LOCK_ERROR;
        }
        return LOCK_OK;
    }
    if (granted > 0)
        release_all(rl, g, &ignored);
    if (answered < rl->quorum) {
        error_set(err, FAULT_QUORUM, "no quorum: %d of %d lock masters answered (%d needed)",
                  answered, rl->n, rl->quorum);
        return LOCK_UNAVAILABLE;
    }
    g->retry_in_ms = granted > 0 ? 1 + rand() % (lc->cfg.retry_ms > 0 ? lc->cfg.retry_ms : 10) : left;
    return LOCK_TIMEOUT;
}

/* The sale's writes go first, to the data Redis; then one hold is given back on every
 * master at once; then the notification. LOCK_OK when a quorum gave it back, LOCK_NOT_OWNER
 * when a quorum answered but fewer held it, LOCK_ERROR when fewer than a quorum answered
 * (the others' keys expire with their lease). */
static int v10_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                       struct error *err)
{
    struct redlock *rl = lc->store_state;
    struct lock_trip writes = lock_trip_before(trip), notice = lock_trip_after(trip);
    struct error ignored;
    int st, released, answered;

    if (lock_pause_here(lc, trip, err) != LOCK_OK)
        return LOCK_ERROR;
    writes.before = trip->before;   /* NULL when the pause already sent them */
    if ((st = lock_trip_send(lc, &writes, err)) != LOCK_OK)
        return st;   /* the writes' fate is unknown: no release; the lease runs out */
    released = release_all(rl, g, &answered);
    if (answered < rl->n)   /* one may still hold it, for its lease: a new id next */
        lock_owner_failed(lc, g, FAULT_TIMEOUT, 1);
    lock_trip_send(lc, &notice, &ignored);
    if (released >= rl->quorum)
        return LOCK_OK;
    if (answered >= rl->quorum)
        return LOCK_NOT_OWNER;
    return error_set(err, FAULT_QUORUM, "release: %d of %d lock masters answered", answered, rl->n);
}

/* Renewal by quorum: v8's renew script on every master at once. */
static int v10_renew(struct lock_client *lc, const struct lock_grant *g, struct error *err)
{
    struct redlock *rl = lc->store_state;
    char ttl[32];
    const char *args[] = { g->key, g->owner, ttl };
    struct rd_reply *r[MASTERS_MAX];
    int renewed = 0, answered;

    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    answered = on_all(rl, &lua_v8_renew, 3, args, r);
    for (int i = 0; i < rl->n; i++)
        if (is_integer(r[i]) && r[i]->integer == 1)
            renewed++;
    free_all(rl, r);
    if (renewed >= rl->quorum)
        return LOCK_OK;
    if (answered >= rl->quorum)
        return LOCK_NOT_OWNER;
    return error_set(err, FAULT_QUORUM, "renew: fewer than a quorum of lock masters answered");
}

/* v9's token and v8's watchdog over a quorum of independent masters (v7's scripts on
 * each); stock, fence:{I} and the notifications stay on the data Redis. */
const struct lock_ops lock_v10 = {
    .name = "v10",
    .alias = "redlock",
    .title = "v9 on a quorum of N independent masters (--lock-redis), validity on a monotonic clock",
    .flaw = "a master that restarts empty (no fsync) before the lease ends can give the lock twice",
    .remote = 1,
    .checks_owner = 1,
    .init = v10_init,
    .destroy = v10_destroy,
    .try_acquire = v10_try_acquire,
    .release = v10_release,
    .renew = v10_renew,
    .wait = LOCK_WAIT_NOTIFY,
    .keepalive = 1,
};
