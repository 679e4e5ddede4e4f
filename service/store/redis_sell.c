/* redis_sell.c - A locked sale on Redis: the stock's read rides with the granting try, the
 * write (service/store/scripts/sale_write.lua, or sale_write_fenced.lua for a grant with a
 * fencing token) with the release, each in one round trip; or the write goes alone and
 * the grant stays held for the next batch. The scripts' KEYS and ARGV are filled by the
 * names they declare (build/script_args.h), never by position. */
#include "service/store/redis.h"

#include <stdio.h>

#include "lua_scripts.h"
#include "script_args.h"

/* Makes sure Redis has the write scripts before a grant is taken: the write rides ahead of
 * the release, where a script Redis lacks could not be sent again. Cheap once loaded. */
static int scripts_ready(struct store *s, const char *item, struct rd_error *err)
{
    char key[RS_KEY_MAX];

    rs_key(&key, RS_STOCK, item);
    if (rd_script_load(s->redis, &lua_sale_write, key, err) != RD_OK)
        return RD_FAIL;
    return rd_script_load(s->redis, &lua_sale_write_fenced, key, err);
}

int rs_grant(struct store *s, struct lock_client *lc, const char *item, long wait_ms,
             struct lock_grant *g, struct store_read *read, struct error *err)
{
    struct rd_batch get = { 0 };
    struct rd_error why = { 0 };
    char key[RS_KEY_MAX];
    int st = LOCK_OK;

    read->asked = 0;
    if (scripts_ready(s, item, &why) != RD_OK ||
        rd_batch_add(&get, &why, "GET %s", rs_key(&key, RS_STOCK, item)) != RD_OK) {
        rd_error_map(&why, err);
        st = LOCK_ERROR;
    }
    if (st == LOCK_OK) {
        read->asked = 1;
        if ((st = lock_acquire(lc, item, wait_ms, g, &get, err)) == LOCK_OK)
            rs_stock_of(get.reply[0], item, read);
    }
    rd_batch_reset(&get);
    return st;
}

/* Every key and argument of one write, by name; then the request ids. */
struct write_call {
    char stock_key[RS_KEY_MAX], sold_key[RS_KEY_MAX], orders_key[RS_KEY_MAX];
    char written_key[RS_KEY_MAX], record[RS_KEY_MAX], fence_key[LOCK_KEY_MAX];
    char stock[32], count[32], token[32], batch[32], idem_ttl[32];
    const char *keys[SALE_WRITE_FENCED_KEYS];
    const char *args[SALE_WRITE_FENCED_ARGS + SALE_BATCH_MAX];
};

/* The plain script's keys and args; nkeys and nargs set. */
static void plain_call(struct write_call *w, const struct redis_store *rs,
                       const struct lock_grant *g, int keyed, int *nkeys, int *nargs)
{
    w->keys[SALE_WRITE_KEY_STOCK] = w->stock_key;
    w->keys[SALE_WRITE_KEY_SOLD] = w->sold_key;
    w->keys[SALE_WRITE_KEY_ORDERS] = w->orders_key;
    w->keys[SALE_WRITE_KEY_RECORD] = w->record;
    *nkeys = keyed ? SALE_WRITE_KEYS : SALE_WRITE_KEY_RECORD;
    w->args[SALE_WRITE_ARG_STOCK] = w->stock;
    w->args[SALE_WRITE_ARG_COUNT] = w->count;
    w->args[SALE_WRITE_ARG_INSTANCE] = rs->instance;
    w->args[SALE_WRITE_ARG_OWNER] = g->owner;
    w->args[SALE_WRITE_ARG_TOKEN] = w->token;
    w->args[SALE_WRITE_ARG_IDEM_TTL] = w->idem_ttl;
    *nargs = SALE_WRITE_ARG_REQUESTS;
}

/* The fenced script's: also the last writer, the last token issued, the batch. */
static void fenced_call(struct write_call *w, const struct redis_store *rs,
                        const struct lock_grant *g, int keyed, int *nkeys, int *nargs)
{
    w->keys[SALE_WRITE_FENCED_KEY_STOCK] = w->stock_key;
    w->keys[SALE_WRITE_FENCED_KEY_SOLD] = w->sold_key;
    w->keys[SALE_WRITE_FENCED_KEY_ORDERS] = w->orders_key;
    w->keys[SALE_WRITE_FENCED_KEY_WRITTEN] = w->written_key;
    w->keys[SALE_WRITE_FENCED_KEY_FENCE] = lock_fence_key(&w->fence_key, g->item);
    w->keys[SALE_WRITE_FENCED_KEY_RECORD] = w->record;
    *nkeys = keyed ? SALE_WRITE_FENCED_KEYS : SALE_WRITE_FENCED_KEY_RECORD;
    w->args[SALE_WRITE_FENCED_ARG_STOCK] = w->stock;
    w->args[SALE_WRITE_FENCED_ARG_COUNT] = w->count;
    w->args[SALE_WRITE_FENCED_ARG_INSTANCE] = rs->instance;
    w->args[SALE_WRITE_FENCED_ARG_OWNER] = g->owner;
    w->args[SALE_WRITE_FENCED_ARG_TOKEN] = w->token;
    w->args[SALE_WRITE_FENCED_ARG_BATCH] = w->batch;
    w->args[SALE_WRITE_FENCED_ARG_IDEM_TTL] = w->idem_ttl;
    *nargs = SALE_WRITE_FENCED_ARG_REQUESTS;
}

/* The write of b (its k sales of b->stock under b->g), appended to w as one script call:
 * a grant with a token is fenced. A sale with an idempotency key comes alone and is
 * written even when k is 0, to keep its answer: its request id goes along then too. */
static int write_add(struct rd_batch *w, const struct redis_store *rs,
                     const struct store_batch *b, struct rd_error *err)
{
    struct write_call c;
    const char *argv[SALE_WRITE_FENCED_KEYS + SALE_WRITE_FENCED_ARGS + SALE_BATCH_MAX];
    const struct lock_grant *g = b->g;
    int fenced = g->token > 0, keyed = b->rqs[0]->idem_key != NULL, nkeys, nargs;

    rs_key(&c.stock_key, RS_STOCK, g->item);
    rs_key(&c.sold_key, RS_SOLD, g->item);
    rs_key(&c.orders_key, RS_ORDERS, g->item);
    rs_key(&c.written_key, RS_WRITTEN, g->item);
    if (keyed)
        rs_idem_key(&c.record, g->item, b->rqs[0]->idem_key);
    snprintf(c.stock, sizeof(c.stock), "%lld", b->stock);
    snprintf(c.count, sizeof(c.count), "%lld", b->k);
    snprintf(c.token, sizeof(c.token), "%lld", g->token);
    snprintf(c.batch, sizeof(c.batch), "%d", b->batch);
    snprintf(c.idem_ttl, sizeof(c.idem_ttl), "%ld", keyed ? rs->idem_ttl_ms : 0L);
    if (fenced)
        fenced_call(&c, rs, g, keyed, &nkeys, &nargs);
    else
        plain_call(&c, rs, g, keyed, &nkeys, &nargs);
    for (int i = 0; i < b->n && (i < b->k || (keyed && i == 0)); i++)
        c.args[nargs++] = b->rqs[i]->request_id ? b->rqs[i]->request_id : "";
    for (int i = 0; i < nkeys; i++)
        argv[i] = c.keys[i];
    for (int i = 0; i < nargs; i++)
        argv[nkeys + i] = c.args[i];
    return rd_batch_add_eval(w, fenced ? &lua_sale_write_fenced : &lua_sale_write, nkeys, nargs,
                             argv, err);
}

/* What leaves the critical section, in one batch: the probe's leave (--faults), then the
 * write; its index, or -1 for none (a write that could not be built: the outcomes say
 * why). */
static int leaving(struct rd_batch *w, const struct redis_store *rs, const struct store_batch *b)
{
    struct rd_error err = { 0 };
    char key[RS_KEY_MAX];

    if (b->probe_id)   /* it only counts: no failure */
        rd_batch_add(w, &err, "SREM %s %s", rs_key(&key, RS_PROBE, b->g->item), b->probe_id);
    if (!b->write)
        return -1;
    if (write_add(w, rs, b, &err) != RD_OK) {
        sale_set_all(b->rqs, b->n, SALE_ERROR, err.msg);
        return -1;
    }
    return w->n - 1;
}

/* The write went out alone, the grant kept for the next batch; 1 when it may still run:
 * sent, and no reply within the timeout (the grant is then abandoned, never released on
 * another connection). With --replicas, confirm (WAIT) rides right after it as the round
 * trip's after, sent again behind the write should Redis want the script loaded first. */
static int send_alone(struct store *s, struct rd_batch *w, int at, struct rd_batch *confirm)
{
    struct rd_error err = { 0 };

    return rd_round_trip(s->redis, NULL, w, confirm->n ? confirm : NULL, &err) != RD_OK &&
           at >= 0 && w->reply[at] == NULL && w->sent && err.fault == RD_E_TIMEOUT;
}

/* The write rides with the release, its WAIT (--replicas) between them on the same
 * connection: Redis runs nothing more of this connection's until WAIT answers, so the
 * lock is held until the write is on the replicas (or WAIT gave up). Released first, the
 * next holder could read the stock this write left and sell on top of a write that a
 * failover may still undo. The release's status; a lease found gone marks the sales. */
static int send_with_release(struct lock_client *lc, struct rd_batch *w, struct store_batch *b)
{
    struct error err = { 0 };
    int st = lock_release(lc, b->g, w->n ? w : NULL, b->pause, &err);

    if (st == LOCK_EXPIRED || st == LOCK_STOLEN)
        for (int i = 0; i < b->n; i++)
            b->rqs[i]->out.lease_lost = 1;
    return st;
}

/* What leaves the critical section goes out (with the release, or alone), then the
 * write's own reply decides; without one, it was sent and may be done: outcome_unknown. */
enum store_sold rs_sell(struct store *s, struct lock_client *lc, struct store_batch *b,
                        int release, int *released)
{
    struct redis_store *rs = redis_of(s);
    struct rd_batch w = { 0 }, confirm = { 0 }, *waits = release ? &w : &confirm;
    int at = leaving(&w, rs, b), wait_at = at >= 0 ? rs_wait_add(rs, waits) : -1, unsure = 0;
    enum store_sold sold = release ? STORE_RELEASED : STORE_KEPT;

    if (release)
        *released = send_with_release(lc, &w, b);
    else if (w.n)
        unsure = send_alone(s, &w, at, &confirm);
    if (release && at >= 0 && w.reply[at] && w.reply[at]->fault == RD_E_NOSCRIPT)
        sold = STORE_AGAIN;   /* nothing ran; the layer has loaded it for the next grant */
    else if (at >= 0 && rs_write_answered(rs, w.reply[at], w.sent,
                                          wait_at >= 0 ? waits->reply[wait_at] : NULL,
                                          wait_at >= 0, b) < 0 && !release)
        sold = unsure ? STORE_UNSURE : STORE_FAILED;
    rd_batch_reset(&confirm);
    rd_batch_reset(&w);
    return sold;
}
