/* sale.c - The sale: read stock, decide, write stock, sold and the ledger, under a grant. */
#include "service/service.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_scripts.h"

static struct lock_script probe_script = { "probe_enter", lua_probe_enter, "", 0 };
static struct lock_script atomic_script = { "sale_atomic", lua_sale_atomic, "", 0 };

/* Parses a whole decimal integer (optional '-'); 0 on success. */
static int parse_stock(const char *s, long long *out)
{
    char *end;

    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno || *end != '\0' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) ? -1 : 0;
}

static enum sale_result redis_down(struct sale_outcome *out)
{
    store_drop();
    out->result = SALE_REDIS_DOWN;
    return out->result;
}

/* Reads and checks stock:{item}; SALE_OK with *stock set, or why not. */
static enum sale_result read_stock(redisContext *c, const char *item, long long *stock,
                                   char *msg, size_t msg_size)
{
    redisReply *r = redisCommand(c, "GET stock:{%s}", item);
    enum sale_result res = SALE_OK;

    if (r == NULL)
        return SALE_REDIS_DOWN;
    if (r->type == REDIS_REPLY_NIL) {
        snprintf(msg, msg_size, "no stock key stock:{%s}; set it with deploy/stock", item);
        res = SALE_UNKNOWN_ITEM;
    } else if (r->type != REDIS_REPLY_STRING || parse_stock(r->str, stock) != 0) {
        snprintf(msg, msg_size, "stock:{%s} does not hold an integer", item);
        res = SALE_BAD_STOCK;
    }
    freeReplyObject(r);
    return res;
}

enum sale_result inventory_read(const char *item, long long *stock, long long *sold, char *msg,
                                size_t msg_size)
{
    redisContext *c = store_conn();
    redisReply *r;
    enum sale_result res;

    if (c == NULL)
        return SALE_REDIS_DOWN;
    res = read_stock(c, item, stock, msg, msg_size);
    if (res == SALE_REDIS_DOWN)
        store_drop();
    if (res != SALE_OK)
        return res;
    r = redisCommand(c, "GET sold:{%s}", item);
    if (r == NULL) {
        store_drop();
        return SALE_REDIS_DOWN;
    }
    *sold = 0;
    if (r->type == REDIS_REPLY_STRING && parse_stock(r->str, sold) != 0)
        *sold = 0;
    freeReplyObject(r);
    return SALE_OK;
}

/* Probe (faults only): enter adds this sale to probe:{item}; leave removes it. */
static void probe_enter(redisContext *c, const char *item, const char *id)
{
    char probe[128], overlaps[128];
    const char *argv[] = { probe, overlaps, id };
    struct lock_error err;
    redisReply *r;

    snprintf(probe, sizeof(probe), "probe:{%s}", item);
    snprintf(overlaps, sizeof(overlaps), "overlaps:{%s}", item);
    r = lock_script_eval(c, &probe_script, 2, 1, argv, &err);
    freeReplyObject(r);
}

static void probe_leave(redisContext *c, const char *item, const char *id)
{
    freeReplyObject(redisCommand(c, "SREM probe:{%s} %s", item, id));
}

/* The read-modify-write under the grant: GET, decide, (work), then one MULTI/EXEC. */
static void sell_under_grant(redisContext *c, const struct sale_request *rq,
                             const struct lock_grant *g, struct sale_outcome *out)
{
    static atomic_llong seq;
    char probe_id[LOCK_OWNER_MAX + 96];
    long long stock;
    char remaining[32], token[32];
    redisReply *r;
    int ok = 1;

    if (svc.faults) {
        snprintf(probe_id, sizeof(probe_id), "%s:%s:%lld", svc.name, g->owner,
                 (long long)atomic_fetch_add(&seq, 1));
        probe_enter(c, rq->item, probe_id);
    }
    out->result = read_stock(c, rq->item, &stock, out->message, sizeof(out->message));
    if (out->result != SALE_OK)
        goto out_probe;
    if (stock <= 0) {
        out->result = SALE_SOLD_OUT;
        out->remaining = 0;
        goto out_probe;
    }
    if (rq->work_ms > 0)
        lock_sleep_ms(rq->work_ms);

    snprintf(remaining, sizeof(remaining), "%lld", stock - 1);
    snprintf(token, sizeof(token), "%lld", g->token);
    redisAppendCommand(c, "MULTI");
    redisAppendCommand(c, "SET stock:{%s} %s", rq->item, remaining);
    redisAppendCommand(c, "INCR sold:{%s}", rq->item);
    redisAppendCommand(c, "XADD orders:{%s} * instance %s remaining %s token %s owner %s",
                       rq->item, svc.name, remaining, token, g->owner);
    redisAppendCommand(c, "EXEC");
    for (int i = 0; i < 5; i++) {
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            out->result = SALE_REDIS_DOWN;
            return;
        }
        if (i == 4)
            ok = r->type == REDIS_REPLY_ARRAY && r->elements == 3;
        freeReplyObject(r);
    }
    if (!ok) {
        out->result = SALE_ERROR;
        snprintf(out->message, sizeof(out->message), "the sale's transaction failed");
        goto out_probe;
    }
    out->result = SALE_OK;
    out->remaining = stock - 1;
    out->token = g->token;

out_probe:
    if (svc.faults && out->result != SALE_REDIS_DOWN)
        probe_leave(c, rq->item, probe_id);
}

static void sale_atomic(redisContext *c, const struct sale_request *rq, struct sale_outcome *out)
{
    char keys[3][128];
    const char *argv[] = { keys[0], keys[1], keys[2], svc.name };
    struct lock_error err;
    redisReply *r;

    snprintf(keys[0], sizeof(keys[0]), "stock:{%s}", rq->item);
    snprintf(keys[1], sizeof(keys[1]), "sold:{%s}", rq->item);
    snprintf(keys[2], sizeof(keys[2]), "orders:{%s}", rq->item);
    r = lock_script_eval(c, &atomic_script, 3, 1, argv, &err);
    if (r == NULL) {
        if (err.io) {
            redis_down(out);
        } else {
            out->result = SALE_ERROR;
            snprintf(out->message, sizeof(out->message), "%s", err.msg);
        }
        return;
    }
    if (r->type == REDIS_REPLY_INTEGER) {
        out->result = r->integer < 0 ? SALE_SOLD_OUT : SALE_OK;
        out->remaining = r->integer < 0 ? 0 : r->integer;
    } else if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "unknown_item")) {
        out->result = SALE_UNKNOWN_ITEM;
        snprintf(out->message, sizeof(out->message), "no stock key stock:{%s}; set it with deploy/stock", rq->item);
    } else if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "bad_stock")) {
        out->result = SALE_BAD_STOCK;
        snprintf(out->message, sizeof(out->message), "stock:{%s} does not hold an integer", rq->item);
    } else {
        out->result = SALE_ERROR;
        snprintf(out->message, sizeof(out->message), "sale script: %s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    freeReplyObject(r);
}

/* Maps a failed acquire to the outcome. */
static void acquire_failed(int st, const struct lock_error *err, struct sale_outcome *out)
{
    if (st == LOCK_TIMEOUT) {
        out->result = SALE_LOCK_TIMEOUT;
    } else if (err->io) {
        redis_down(out);
    } else {
        out->result = SALE_ERROR;
        snprintf(out->message, sizeof(out->message), "lock: %s", err->msg);
    }
}

/* The helper the seeds' reentrancy test calls: takes the same lock and gives it back. */
static int nested_helper(redisContext *c, const struct lock_grant *outer, struct sale_outcome *out)
{
    struct lock_grant inner;
    struct lock_error err = { 0 };
    int st = lock_acquire(svc_lock, c, outer->key, outer->owner, svc.wait_ms, &inner, &err);

    metrics_lock_wait(inner.waited_ms);
    if (st != LOCK_OK) {
        acquire_failed(st, &err, out);
        return -1;
    }
    if (lock_release(svc_lock, c, &inner, &err) == LOCK_ERROR && err.io)
        store_drop();
    return 0;
}

void sale_run(const struct sale_request *rq, struct sale_outcome *out)
{
    static _Thread_local char owner[LOCK_OWNER_MAX];
    redisContext *c = store_conn();
    struct lock_grant g;
    struct lock_error err = { 0 };
    char key[LOCK_KEY_MAX];
    int st;

    memset(out, 0, sizeof(*out));
    if (c == NULL) {
        out->result = SALE_REDIS_DOWN;
        return;
    }
    if (svc.ops->is_atomic) {
        sale_atomic(c, rq, out);
        return;
    }
    if (owner[0] == '\0')
        lock_owner_id(svc_lock, owner, sizeof(owner));
    snprintf(key, sizeof(key), "lock:{%s}", rq->item);

    st = lock_acquire(svc_lock, c, key, owner, svc.wait_ms, &g, &err);
    metrics_lock_wait(g.waited_ms);
    if (st != LOCK_OK) {
        acquire_failed(st, &err, out);
        return;
    }
    if (rq->nested && nested_helper(c, &g, out) != 0)
        goto out_release;
    sell_under_grant(c, rq, &g, out);

out_release:
    if (out->result == SALE_REDIS_DOWN) {
        /* The connection is gone; a lease-based lock expires by itself. A local mutex
         * must still be unlocked: it needs no connection. */
        if (!svc.ops->uses_redis)
            lock_release(svc_lock, NULL, &g, &err);
        store_drop();
        return;
    }
    if (lock_grant_is_lost(&g))
        out->lease_lost = 1;
    g.release_gap_ms = rq->release_gap_ms;
    st = lock_release(svc_lock, c, &g, &err);
    if (st == LOCK_NOT_OWNER)
        out->lease_lost = 1;
    else if (st == LOCK_ERROR && err.io)
        store_drop();
}
