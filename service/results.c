/* results.c - A sale's outcomes: each result's answer (status, error, metric) in one
 * table, and how what the lock or a sale script said becomes an outcome. */
#include "service/service.h"

#include <stdio.h>
#include <string.h>

const struct sale_result_info sale_results[SALE_RESULTS] = {
    [SALE_OK] = { 200, NULL, "ok" },
    [SALE_SOLD_OUT] = { 409, "sold_out", "sold_out" },
    [SALE_LOCK_TIMEOUT] = { 503, "lock_timeout", "lock_timeout" },
    [SALE_LOCK_UNAVAILABLE] = { 503, "lock_unavailable", "lock_unavailable" },
    [SALE_REDIS_DOWN] = { 503, "redis_unavailable", "redis_unavailable" },
    [SALE_UNKNOWN_ITEM] = { 404, "unknown_item", "unknown_item" },
    [SALE_BAD_STOCK] = { 500, "bad_stock", "bad_stock" },
    [SALE_LEASE_LOST] = { 409, "lease_lost", "lease_lost" },
    [SALE_OUTCOME_UNKNOWN] = { 503, "outcome_unknown", "outcome_unknown" },
    [SALE_KEY_REUSED] = { 422, "idempotency_key_reused", "key_reused" },
    [SALE_ERROR] = { 500, "error", "error" },
};

void sale_set_all(struct sale_request **rqs, int n, enum sale_result res, const char *msg)
{
    for (int i = 0; i < n; i++) {
        rqs[i]->out.result = res;
        if (msg)
            snprintf(rqs[i]->out.message, sizeof(rqs[i]->out.message), "%s", msg);
    }
}

/* Redis refused a write for want of replicas (min-replicas-to-write): a script is refused
 * at its first write, so nothing was written; Redis is up but takes no writes now. */
static const char refused_no_replicas[] =
    "Redis takes no writes now: too few replicas (min-replicas-to-write); nothing was written";
/* A cluster could not serve the item's slot now (it is moving and stayed so longer than
 * the layer waits, or the cluster is down): nothing of the command ran. */
static const char cluster_busy[] =
    "the cluster cannot serve this item now (its slot is moving, or a failover is under way); "
    "nothing was written";

void sale_acquire_failed(int st, const struct lock_error *err, struct sale_request **rqs, int n)
{
    char msg[160];

    if (st == LOCK_TIMEOUT) {
        sale_set_all(rqs, n, SALE_LOCK_TIMEOUT, NULL);
    } else if (st == LOCK_UNAVAILABLE) {
        sale_set_all(rqs, n, SALE_LOCK_UNAVAILABLE, NULL);
    } else if (err->fault == LOCK_E_NOREPLICAS) {
        sale_set_all(rqs, n, SALE_REDIS_DOWN, refused_no_replicas);
    } else if (lock_fault_is_cluster(err->fault)) {
        sale_set_all(rqs, n, SALE_REDIS_DOWN, cluster_busy);
    } else if (lock_fault_is_io(err->fault) || err->fault == LOCK_E_AUTH) {
        sale_set_all(rqs, n, SALE_REDIS_DOWN, NULL);
    } else {
        snprintf(msg, sizeof(msg), "lock: %s", err->msg);
        sale_set_all(rqs, n, SALE_ERROR, msg);
    }
}

enum sale_result sale_stock_of(const struct rd_reply *r, const char *item, long long *stock,
                               char *msg, size_t msg_size)
{
    if (r == NULL)
        return SALE_REDIS_DOWN;
    if (r->type == RD_NIL) {
        snprintf(msg, msg_size, "no stock key stock:{%s}; set it with deploy/stock", item);
        return SALE_UNKNOWN_ITEM;
    }
    if (r->type != RD_STRING || parse_integer(r->str, stock) != 0) {
        snprintf(msg, msg_size, "stock:{%s} does not hold an integer", item);
        return SALE_BAD_STOCK;
    }
    return SALE_OK;
}

/* A key seen before: its first answer, "STATUS REMAINING TOKEN INSTANCE REQUEST". */
static void replay(const struct rd_reply *r, struct sale_request *rq)
{
    int status = 0;
    struct sale_outcome *out = &rq->out;

    out->result = SALE_ERROR;
    snprintf(out->message, sizeof(out->message), "unreadable first answer");
    if (parse_record(r->str, &status, &out->remaining, &out->token, &out->instance) == 0) {
        out->result = status == 200 ? SALE_OK : SALE_SOLD_OUT;
        out->message[0] = '\0';
        out->replayed = 1;
    }
}

/* The errors the sale scripts answer with, by code (service/scripts/sale_*.lua), and what
 * each means for the sales: the message is before, the item, after. */
static const struct {
    const char *code;
    enum sale_result result;
    const char *before, *after;     /* NULL: no message */
} script_errors[] = {
    { "lease_lost", SALE_LEASE_LOST, "Redis refused the write: its fencing token is not the newest for ", "" },
    { "unknown_item", SALE_UNKNOWN_ITEM, "no stock key stock:{", "}; set it with deploy/stock" },
    { "bad_stock", SALE_BAD_STOCK, "stock:{", "} does not hold an integer" },
};

int sale_script_answer(const struct rd_reply *r, struct sale_request **rqs, int n)
{
    struct lock_error err;
    char msg[160];

    if (r->type == RD_STRING && rqs[0]->idem_key) {
        replay(r, rqs[0]);
        return 1;
    }
    if (r->type != RD_ERROR)
        return 0;
    rd_reply_error(r, &err);
    if (err.fault == LOCK_E_NOREPLICAS || lock_fault_is_cluster(err.fault)) {
        sale_set_all(rqs, n, SALE_REDIS_DOWN,
                     err.fault == LOCK_E_NOREPLICAS ? refused_no_replicas : cluster_busy);
        return 1;
    }
    for (size_t i = 0; i < sizeof(script_errors) / sizeof(script_errors[0]); i++) {
        if (err.fault != LOCK_E_REPLY || strcmp(err.code, script_errors[i].code) != 0)
            continue;
        if (script_errors[i].before)
            snprintf(msg, sizeof(msg), "%s%.64s%s", script_errors[i].before, rqs[0]->item,
                     script_errors[i].after);
        sale_set_all(rqs, n, script_errors[i].result, script_errors[i].before ? msg : NULL);
        return 1;
    }
    return 0;
}
