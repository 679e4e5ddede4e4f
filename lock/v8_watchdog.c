/* v8_watchdog.c - v8: v7 plus a watchdog renewing held leases every ttl/3. A whole-process pause stops it too. */
#include "lock/internal.h"

#include <stdio.h>

#include "lua_scripts.h"

static struct lock_script renew_script = { "v8_renew", lua_v8_renew, "", 0 };

/* Resets the lease to a full TTL, but only while the hash still holds our owner id. The
 * keep-alive (lock/keepalive.c) calls it every ttl/3 for each held lock. */
static int v8_renew(struct lock_client *lc, const struct lock_grant *g, struct lock_error *err)
{
    char ttl[32];
    const char *argv[] = { g->key, g->owner, ttl };
    redisReply *r;
    int mine;

    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    r = lock_eval(lc, &renew_script, LOCK_R_INTEGER, 1, 2, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    mine = r->integer == 1;
    freeReplyObject(r);
    return mine ? LOCK_OK : LOCK_NOT_OWNER;
}

/* v7's store plus renew, a watchdog to call it, and waiting by notification. */
const struct lock_ops lock_v8 = {
    .name = "v8",
    .alias = "watchdog",
    .title = "v7 + watchdog renewal every ttl/3 while held",
    .flaw = "a whole-process pause (SIGSTOP, GC) longer than the TTL stops the watchdog too",
    .remote = 1,
    .try_acquire = lock_hash_try_acquire,
    .release = lock_hash_release,
    .renew = v8_renew,
    .wait = LOCK_WAIT_NOTIFY,
    .keepalive = 1,
};
