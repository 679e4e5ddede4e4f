/* sale_write.c - The sale's write under the lock: service/scripts/sale_write.lua, or
 * sale_write_fenced.lua for a grant with a fencing token. Its KEYS and ARGV are filled by
 * the names the scripts declare (build/script_args.h), never by position. */
#include "service/service.h"

#include <stdio.h>

#include "lua_scripts.h"
#include "script_args.h"

/* Every key and argument of one write, by name; then the request ids. */
struct write_call {
    char stock_key[96], sold_key[96], orders_key[96], written_key[96], fence_key[96];
    char record[ITEM_MAX + IDEM_KEY_MAX + 16];
    char stock[32], count[32], token[32], batch[32], idem_ttl[32];
    const char *keys[SALE_WRITE_FENCED_KEYS];
    const char *args[SALE_WRITE_FENCED_ARGS + SALE_BATCH_MAX];
};

/* The plain script's keys and args; nkeys and nargs set. */
static void plain_call(struct write_call *w, const struct lock_grant *g, int keyed,
                       int *nkeys, int *nargs)
{
    w->keys[SALE_WRITE_KEY_STOCK] = w->stock_key;
    w->keys[SALE_WRITE_KEY_SOLD] = w->sold_key;
    w->keys[SALE_WRITE_KEY_ORDERS] = w->orders_key;
    w->keys[SALE_WRITE_KEY_RECORD] = w->record;
    *nkeys = keyed ? SALE_WRITE_KEYS : SALE_WRITE_KEY_RECORD;
    w->args[SALE_WRITE_ARG_STOCK] = w->stock;
    w->args[SALE_WRITE_ARG_COUNT] = w->count;
    w->args[SALE_WRITE_ARG_INSTANCE] = svc.name;
    w->args[SALE_WRITE_ARG_OWNER] = g->owner;
    w->args[SALE_WRITE_ARG_TOKEN] = w->token;
    w->args[SALE_WRITE_ARG_IDEM_TTL] = w->idem_ttl;
    *nargs = SALE_WRITE_ARG_REQUESTS;
}

/* The fenced script's: also the last writer, the last token issued, the batch. */
static void fenced_call(struct write_call *w, const struct lock_grant *g, int keyed,
                        int *nkeys, int *nargs)
{
    w->keys[SALE_WRITE_FENCED_KEY_STOCK] = w->stock_key;
    w->keys[SALE_WRITE_FENCED_KEY_SOLD] = w->sold_key;
    w->keys[SALE_WRITE_FENCED_KEY_ORDERS] = w->orders_key;
    w->keys[SALE_WRITE_FENCED_KEY_WRITTEN] = w->written_key;
    w->keys[SALE_WRITE_FENCED_KEY_FENCE] = w->fence_key;
    w->keys[SALE_WRITE_FENCED_KEY_RECORD] = w->record;
    *nkeys = keyed ? SALE_WRITE_FENCED_KEYS : SALE_WRITE_FENCED_KEY_RECORD;
    w->args[SALE_WRITE_FENCED_ARG_STOCK] = w->stock;
    w->args[SALE_WRITE_FENCED_ARG_COUNT] = w->count;
    w->args[SALE_WRITE_FENCED_ARG_INSTANCE] = svc.name;
    w->args[SALE_WRITE_FENCED_ARG_OWNER] = g->owner;
    w->args[SALE_WRITE_FENCED_ARG_TOKEN] = w->token;
    w->args[SALE_WRITE_FENCED_ARG_BATCH] = w->batch;
    w->args[SALE_WRITE_FENCED_ARG_IDEM_TTL] = w->idem_ttl;
    *nargs = SALE_WRITE_FENCED_ARG_REQUESTS;
}

/* A sale with an idempotency key comes alone and is written even when k is 0, to keep
 * its answer: its request id goes along then too. */
int sale_write_add(struct rd_batch *b, const struct lock_grant *g, long long stock, long long k,
                   int batch, struct sale_request **rqs, int n, struct lock_error *err)
{
    struct write_call w;
    const char *argv[SALE_WRITE_FENCED_KEYS + SALE_WRITE_FENCED_ARGS + SALE_BATCH_MAX];
    int fenced = g->token > 0, keyed = rqs[0]->idem_key != NULL, nkeys, nargs;

    snprintf(w.stock_key, sizeof(w.stock_key), "stock:{%s}", g->item);
    snprintf(w.sold_key, sizeof(w.sold_key), "sold:{%s}", g->item);
    snprintf(w.orders_key, sizeof(w.orders_key), "orders:{%s}", g->item);
    snprintf(w.written_key, sizeof(w.written_key), "written:{%s}", g->item);
    snprintf(w.fence_key, sizeof(w.fence_key), "fence:{%s}", g->item);
    snprintf(w.stock, sizeof(w.stock), "%lld", stock);
    snprintf(w.count, sizeof(w.count), "%lld", k);
    snprintf(w.token, sizeof(w.token), "%lld", g->token);
    snprintf(w.batch, sizeof(w.batch), "%d", batch);
    snprintf(w.idem_ttl, sizeof(w.idem_ttl), "%ld", keyed ? svc.idem_ttl_ms : 0L);
    if (keyed)
        sale_idem_record(rqs[0], &w.record);
    if (fenced)
        fenced_call(&w, g, keyed, &nkeys, &nargs);
    else
        plain_call(&w, g, keyed, &nkeys, &nargs);
    for (int i = 0; i < n && (i < k || (keyed && i == 0)); i++)
        w.args[nargs++] = rqs[i]->request_id ? rqs[i]->request_id : "";
    for (int i = 0; i < nkeys; i++)
        argv[i] = w.keys[i];
    for (int i = 0; i < nargs; i++)
        argv[nkeys + i] = w.args[i];
    return rd_batch_add_eval(b, fenced ? &lua_sale_write_fenced : &lua_sale_write, nkeys, nargs,
                             argv, err);
}

int sale_write_prepare(const char *item, struct lock_error *err)
{
    char key[ITEM_MAX + 16];

    snprintf(key, sizeof(key), "stock:{%s}", item);
    if (rd_script_load(svc_redis, &lua_sale_write, key, err) != LOCK_OK)
        return LOCK_ERROR;
    return rd_script_load(svc_redis, &lua_sale_write_fenced, key, err);
}

long long sale_write_result(const struct rd_reply *r, long long k, struct sale_request **rqs,
                            int n)
{
    if (r->type == RD_INTEGER && r->integer == k)
        return k;
    if (sale_script_answer(r, rqs, n))
        return rqs[0]->out.result == SALE_LEASE_LOST ? -1 : 0;
    sale_set_all(rqs, n, SALE_ERROR, "the sale's write failed");
    return -1;
}
