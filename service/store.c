/* store.c - The thread's Redis connection (the lock library's), with one log line when
 * Redis goes away and one when it comes back. */
#include "service/service.h"

#include <stdatomic.h>

static atomic_int redis_down;   /* 1 after a failure was logged, until a connect succeeds */

static void note_down(const char *why)
{
    if (!atomic_exchange(&redis_down, 1))
        log_event("WARN", "redis %s:%d unreachable: %s", svc.redis_host, svc.redis_port, why);
}

redisContext *store_conn(void)
{
    struct lock_error err = { 0 };
    redisContext *c = lock_redis(svc_lock, &err);

    if (c == NULL) {
        note_down(err.msg);
        return NULL;
    }
    if (atomic_load(&redis_down) && atomic_exchange(&redis_down, 0))
        log_event("INFO", "redis %s:%d reachable again", svc.redis_host, svc.redis_port);
    return c;
}

void store_drop(void)
{
    store_drop_why("connection dropped");
}

void store_drop_why(const char *why)
{
    note_down(why);
    metrics_redis_drop();
    lock_redis_drop(svc_lock);
}

int store_ping(void)
{
    redisContext *c = store_conn();
    redisReply *r;
    int ok;

    if (c == NULL)
        return 0;
    r = redisCommand(c, "PING");
    if (r == NULL) {
        store_drop();
        return 0;
    }
    ok = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok;
}
