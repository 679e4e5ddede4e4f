/* sale_atomic.c - The atomic baseline: the whole sale in one script
 * (service/scripts/sale_atomic.lua), no lock. Its KEYS and ARGV are filled by the names
 * the script declares (build/script_args.h). */
#include "service/service.h"

#include <stdio.h>

#include "lua_scripts.h"
#include "script_args.h"

int sale_atomic_add(struct rd_batch *b, struct sale_request **rqs, int n, struct lock_error *err)
{
    const char *item = rqs[0]->item;
    int keyed = rqs[0]->idem_key != NULL, nkeys, nargs = SALE_ATOMIC_ARG_REQUESTS;
    char stock[96], sold[96], orders[96], count[16], ttl[24];
    char record[ITEM_MAX + IDEM_KEY_MAX + 16];
    const char *argv[SALE_ATOMIC_KEYS + SALE_ATOMIC_ARGS + SALE_BATCH_MAX];
    const char **keys = argv, **args;

    if (n > SALE_BATCH_MAX)
        return lock_fail(err, LOCK_E_USAGE, "too many sales for one script");
    snprintf(stock, sizeof(stock), "stock:{%s}", item);
    snprintf(sold, sizeof(sold), "sold:{%s}", item);
    snprintf(orders, sizeof(orders), "orders:{%s}", item);
    snprintf(count, sizeof(count), "%d", n);
    snprintf(ttl, sizeof(ttl), "%ld", keyed ? svc.idem_ttl_ms : 0L);
    keys[SALE_ATOMIC_KEY_STOCK] = stock;
    keys[SALE_ATOMIC_KEY_SOLD] = sold;
    keys[SALE_ATOMIC_KEY_ORDERS] = orders;
    nkeys = SALE_ATOMIC_KEY_RECORD;
    if (keyed) {
        sale_idem_record(rqs[0], &record);
        keys[SALE_ATOMIC_KEY_RECORD] = record;
        nkeys = SALE_ATOMIC_KEYS;
    }
    args = argv + nkeys;
    args[SALE_ATOMIC_ARG_INSTANCE] = svc.name;
    args[SALE_ATOMIC_ARG_COUNT] = count;
    args[SALE_ATOMIC_ARG_IDEM_TTL] = ttl;
    for (int i = 0; i < n; i++)
        args[nargs++] = rqs[i]->request_id ? rqs[i]->request_id : "";
    return rd_batch_add_eval(b, &lua_sale_atomic, nkeys, nargs, argv, err);
}

void sale_atomic_result(const struct rd_reply *r, struct sale_request **rqs, int n)
{
    char msg[160];

    if (r->type == RD_ARRAY && r->elements == 2 && r->element[0]->type == RD_INTEGER &&
        r->element[1]->type == RD_INTEGER) {
        long long k = r->element[0]->integer, left = r->element[1]->integer;
        for (int i = 0; i < n; i++) {
            rqs[i]->out.result = i < k ? SALE_OK : SALE_SOLD_OUT;
            rqs[i]->out.remaining = i < k ? left + k - 1 - i : 0;
        }
    } else if (!sale_script_answer(r, rqs, n)) {
        snprintf(msg, sizeof(msg), "sale script: %.120s",
                 r->type == RD_ERROR ? r->str : "unexpected reply");
        sale_set_all(rqs, n, SALE_ERROR, msg);
    }
}

/* With --replicas, WAIT rides right after the script as the round trip's after (sent
 * again behind it, should Redis want the script loaded first): a sale it does not confirm
 * answers outcome_unknown. */
void sale_atomic_run(struct sale_request *rq)
{
    struct rd_batch b = { 0 }, confirm = { 0 };
    struct lock_error err = { 0 };
    int wait_at = sale_replicas_add(&confirm);

    metrics_batch(1);
    if (rq->idem_key && sale_idem_bind(rq) != 0) {
        /* the key was used for another item, or Redis could not say: rq says which */
    } else if (sale_atomic_add(&b, &rq, 1, &err) != LOCK_OK) {
        sale_set_all(&rq, 1, SALE_ERROR, err.msg);
    } else if (rd_round_trip(svc_redis, NULL, &b, confirm.n ? &confirm : NULL, &err) != LOCK_OK &&
               (wait_at < 0 || b.reply[0] == NULL)) {
        /* Not sent (no connection): nothing sold. Sent and no answer: maybe done. (The
         * script's answer and no WAIT's: the check below says outcome_unknown.) */
        sale_set_all(&rq, 1, b.sent ? SALE_OUTCOME_UNKNOWN : SALE_REDIS_DOWN, NULL);
    } else {
        sale_atomic_result(b.reply[0], &rq, 1);
        sale_replicas_check(&confirm, wait_at, &rq, 1);
    }
    if (wait_at >= 0)
        rd_batch_reset(&confirm);
    rd_batch_reset(&b);
}
