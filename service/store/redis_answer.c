/* redis_answer.c - What the Redis store's replies mean for the sales: the stock read, the
 * sale scripts' replies (sold, a kept first answer, their own errors), a round trip that
 * failed, and WAIT's count of replicas (--replicas N), as the requests' outcomes. */
#include "service/store/redis.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "service/log.h"
#include "service/parse.h"

/* Redis refused a write for want of replicas (min-replicas-to-write): a script is refused
 * at its first write, so nothing was written; Redis is up but takes no writes now. */
static const char refused_no_replicas[] =
    "Redis takes no writes now: too few replicas (min-replicas-to-write); nothing was written";
/* A cluster could not serve the item's slot now (it is moving and stayed so longer than
 * the layer waits, or the cluster is down): nothing of the command ran. */
static const char cluster_busy[] =
    "the cluster cannot serve this item now (its slot is moving, or a failover is under way); "
    "nothing was written";

void rs_stock_of(const struct rd_reply *r, const char *item, struct store_read *read)
{
    char key[RS_KEY_MAX];

    read->result = SALE_OK;
    if (r == NULL) {
        read->result = SALE_STORE_DOWN;
    } else if (r->type == RD_NIL) {
        snprintf(read->msg, sizeof(read->msg), "no stock key %s; set it with deploy/stock",
                 rs_key(&key, RS_STOCK, item));
        read->result = SALE_UNKNOWN_ITEM;
    } else if (r->type != RD_STRING || parse_integer(r->str, &read->stock) != 0) {
        snprintf(read->msg, sizeof(read->msg), "%s does not hold an integer",
                 rs_key(&key, RS_STOCK, item));
        read->result = SALE_BAD_STOCK;
    }
}

void rs_trip_failed(const struct rd_error *err, int sent, struct sale_request **rqs, int n)
{
    if (sent)
        sale_set_all(rqs, n, SALE_OUTCOME_UNKNOWN, NULL);   /* it may have run */
    else if (err == NULL || rd_fault_is_io(err->fault) || rd_fault_is_cluster(err->fault))
        sale_set_all(rqs, n, SALE_STORE_DOWN, NULL);
    else
        sale_set_all(rqs, n, SALE_ERROR, err->msg);
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

/* The errors the sale scripts answer with, by code (service/store/scripts/sale_*.lua),
 * and what each means for the sales: the message is before, the key, after. */
static const struct {
    const char *code;
    enum sale_result result;
    const char *before, *after;     /* NULL: no message */
    enum rs_key key;                /* named in the message: the item's key of this kind */
} script_errors[] = {
    { "lease_lost", SALE_LEASE_LOST,
      "Redis refused the write: its fencing token is not the newest for ", "", RS_STOCK },
    { "unknown_item", SALE_UNKNOWN_ITEM, "no stock key ", "; set it with deploy/stock", RS_STOCK },
    { "bad_stock", SALE_BAD_STOCK, "", " does not hold an integer", RS_STOCK },
};

/* A sale script's own error (by its code), or its replayed first answer, as rqs'
 * outcomes: 1 when r was one of them. */
static int script_answer(const struct rd_reply *r, struct sale_request **rqs, int n)
{
    struct rd_error err;
    char msg[160], key[RS_KEY_MAX];

    if (r->type == RD_STRING && rqs[0]->idem_key) {
        replay(r, rqs[0]);
        return 1;
    }
    if (r->type != RD_ERROR)
        return 0;
    rd_reply_error(r, &err);
    if (err.fault == RD_E_NOREPLICAS || rd_fault_is_cluster(err.fault)) {
        sale_set_all(rqs, n, SALE_STORE_DOWN,
                     err.fault == RD_E_NOREPLICAS ? refused_no_replicas : cluster_busy);
        return 1;
    }
    for (size_t i = 0; i < sizeof(script_errors) / sizeof(script_errors[0]); i++) {
        if (err.fault != RD_E_REPLY || strcmp(err.code, script_errors[i].code) != 0)
            continue;
        if (script_errors[i].result == SALE_LEASE_LOST)   /* the item, not a key */
            snprintf(msg, sizeof(msg), "%s%.64s", script_errors[i].before, rqs[0]->item);
        else
            snprintf(msg, sizeof(msg), "%s%s%s", script_errors[i].before,
                     rs_key(&key, script_errors[i].key, rqs[0]->item), script_errors[i].after);
        sale_set_all(rqs, n, script_errors[i].result, msg);
        return 1;
    }
    return 0;
}

int rs_wait_add(struct redis_store *rs, struct rd_batch *b)
{
    struct rd_error err = { 0 };
    int at = b->n;

    if (rs->replicas == 0)
        return -1;
    rd_batch_add(b, &err, "WAIT %d %ld", rs->replicas, rs->replicas_wait_ms);
    return at;
}

/* One WARN line a second at most, whatever the number of sales (the metric counts
 * them): nothing at info level on the request path. r: the WAIT's reply, or NULL. */
static void warn_unreplicated(struct redis_store *rs, int n, const struct rd_reply *r)
{
    static atomic_llong last_ms;
    long long now = clock_now_ms(), was = atomic_load(&last_ms);
    char acked[32] = "none (no answer to WAIT)";

    if ((was != 0 && now - was < 1000) || !atomic_compare_exchange_strong(&last_ms, &was, now))
        return;
    if (r && r->type == RD_INTEGER)
        snprintf(acked, sizeof(acked), "%lld", r->integer);
    log_event("WARN", "%d sale(s) written but acknowledged by %s of %d replicas within %ld ms: "
              "answered outcome_unknown (counted in inventory_sale_unreplicated_total; this "
              "line once a second at most)", n, acked, rs->replicas, rs->replicas_wait_ms);
}

/* After the write: when WAIT (waited: one was sent; r: its reply or NULL) did not answer
 * --replicas or more, every sold sale of rqs answers outcome_unknown instead (marked
 * unreplicated, counted): it is on the master, and a failover to a replica that lacks it
 * would undo it; others (sold out, ...) keep their outcome. How many were turned. */
static int replicas_check(struct redis_store *rs, const struct rd_reply *r, int waited,
                          struct sale_request **rqs, int n)
{
    int turned = 0;

    if (!waited || (r && r->type == RD_INTEGER && r->integer >= rs->replicas))
        return 0;
    for (int i = 0; i < n; i++) {
        if (rqs[i]->out.result != SALE_OK)
            continue;   /* sold out, lease lost, refused: nothing of theirs to confirm */
        rqs[i]->out.result = SALE_OUTCOME_UNKNOWN;
        rqs[i]->out.unreplicated = 1;
        rqs[i]->out.replayed = 0;   /* a replayed first answer is not given unconfirmed */
        turned++;
    }
    if (turned > 0) {
        atomic_fetch_add(&rs->unreplicated, turned);
        warn_unreplicated(rs, turned, r);
    }
    return turned;
}

long long rs_write_answered(struct redis_store *rs, const struct rd_reply *r, int sent,
                            const struct rd_reply *wait, int waited, struct store_batch *b)
{
    long long sold;

    if (r == NULL)
        rs_trip_failed(NULL, sent, b->rqs, b->n), sold = -1;
    else if (r->type == RD_INTEGER && r->integer == b->k)
        sold = b->k;
    else if (script_answer(r, b->rqs, b->n))
        sold = b->rqs[0]->out.result == SALE_LEASE_LOST ? -1 : 0;
    else
        sale_set_all(b->rqs, b->n, SALE_ERROR, "the sale's write failed"), sold = -1;
    if (sold < 0)
        return -1;
    b->stock -= sold;   /* on the master, whatever the replicas say */
    return replicas_check(rs, wait, waited, b->rqs, b->n) > 0 ? -1 : sold;
}

void rs_atomic_answered(struct redis_store *rs, const struct rd_reply *r,
                        const struct rd_reply *wait, int waited, struct store_group *gr)
{
    char msg[160];

    if (r->type == RD_ARRAY && r->elements == 2 && r->element[0]->type == RD_INTEGER &&
        r->element[1]->type == RD_INTEGER) {
        long long k = r->element[0]->integer, left = r->element[1]->integer;
        for (int i = 0; i < gr->n; i++) {
            gr->rqs[i]->out.result = i < k ? SALE_OK : SALE_SOLD_OUT;
            gr->rqs[i]->out.remaining = i < k ? left + k - 1 - i : 0;
        }
    } else if (!script_answer(r, gr->rqs, gr->n)) {
        snprintf(msg, sizeof(msg), "sale script: %.120s",
                 r->type == RD_ERROR ? r->str : "unexpected reply");
        sale_set_all(gr->rqs, gr->n, SALE_ERROR, msg);
    }
    replicas_check(rs, wait, waited, gr->rqs, gr->n);
}
