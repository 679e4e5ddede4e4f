/* store.c - One Redis connection per thread, reconnected after Redis comes back. */
#include "service/service.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static pthread_key_t conn_key;
static pthread_once_t conn_once = PTHREAD_ONCE_INIT;
static atomic_int redis_down;   /* 1 after a failure was logged, until a connect succeeds */

static void conn_free(void *c)
{
    redisFree(c);
}

static void conn_key_create(void)
{
    pthread_key_create(&conn_key, conn_free);
}

static void note_down(const char *why)
{
    if (!atomic_exchange(&redis_down, 1))
        log_event("WARN", "redis %s:%d unreachable: %s", svc.redis_host, svc.redis_port, why);
}

redisContext *store_conn(void)
{
    redisContext *c;
    struct timeval connect_tv = { 1, 0 }, cmd_tv = { 5, 0 };

    pthread_once(&conn_once, conn_key_create);
    c = pthread_getspecific(conn_key);
    if (c && !c->err)
        return c;
    if (c) {
        redisFree(c);
        pthread_setspecific(conn_key, NULL);
    }
    c = redisConnectWithTimeout(svc.redis_host, svc.redis_port, connect_tv);
    if (c == NULL || c->err) {
        note_down(c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, cmd_tv);
    pthread_setspecific(conn_key, c);
    if (atomic_exchange(&redis_down, 0))
        log_event("INFO", "redis %s:%d reachable again", svc.redis_host, svc.redis_port);
    return c;
}

void store_drop(void)
{
    redisContext *c;

    pthread_once(&conn_once, conn_key_create);
    c = pthread_getspecific(conn_key);
    if (c) {
        note_down(c->err ? c->errstr : "connection dropped");
        redisFree(c);
        pthread_setspecific(conn_key, NULL);
    }
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
