/* sale.c - The sale: read stock, decide, write stock, sold and the ledger, under a grant.
 * One grant serves one sale, or a batch of them (--combine; pipeline.c gathers it). */
#include "service/service.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_scripts.h"

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

static struct lock_script probe_script = { "probe_enter", lua_probe_enter, "", 0 };
static struct lock_script atomic_script = { "sale_atomic", lua_sale_atomic, "", 0 };
static struct lock_script write_script = { "sale_write", lua_sale_write, "", 0 };
static struct lock_script fenced_write_script = { "sale_write_fenced", lua_sale_write_fenced,
                                                  "", 0 };


/* Checks a GET stock:{item} reply: SALE_OK with *stock set, or why not. */
static enum sale_result stock_from_reply(const redisReply *r, const char *item, long long *stock,
                                         char *msg, size_t msg_size)
{
    if (r == NULL)
        return SALE_REDIS_DOWN;
    if (r->type == REDIS_REPLY_NIL) {
        snprintf(msg, msg_size, "no stock key stock:{%s}; set it with deploy/stock", item);
        return SALE_UNKNOWN_ITEM;
    }
    if (r->type != REDIS_REPLY_STRING || parse_integer(r->str, stock) != 0) {
        snprintf(msg, msg_size, "stock:{%s} does not hold an integer", item);
        return SALE_BAD_STOCK;
    }
    return SALE_OK;
}

enum sale_result inventory_read(const char *item, long long *stock, long long *sold, char *msg,
                                size_t msg_size)
{
    redisContext *c = store_conn();
    redisReply *r;
    enum sale_result res;

    if (c == NULL)
        return SALE_REDIS_DOWN;
    r = redisCommand(c, "MGET stock:{%s} sold:{%s}", item, item);
    if (r == NULL) {
        store_drop();
        return SALE_REDIS_DOWN;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        freeReplyObject(r);
        snprintf(msg, msg_size, "MGET: unexpected reply");
        return SALE_ERROR;
    }
    res = stock_from_reply(r->element[0], item, stock, msg, msg_size);
    *sold = 0;
    if (r->element[1]->type == REDIS_REPLY_STRING && parse_integer(r->element[1]->str, sold) != 0)
        *sold = 0;
    freeReplyObject(r);
    return res;
}

/* Probe (faults only): enter adds this sale to probe:{item}; leave removes it. */
static void probe_enter(const char *item, const char *id)
{
    redisContext *c = store_conn();
    char probe[128], overlaps[128];
    const char *argv[] = { probe, overlaps, id };
    struct lock_error err;

    if (c == NULL)
        return;
    snprintf(probe, sizeof(probe), "probe:{%s}", item);
    snprintf(overlaps, sizeof(overlaps), "overlaps:{%s}", item);
    redisReply *r = lock_script_eval(c, &probe_script, 2, 1, argv, &err);
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer > 1)
        metrics_overlap();
    freeReplyObject(r);
}

static void probe_leave(const char *item, const char *id)
{
    redisContext *c = store_conn();

    if (c)
        freeReplyObject(redisCommand(c, "SREM probe:{%s} %s", item, id));
}

static void set_all(struct sale_request **rqs, int n, enum sale_result res, const char *msg)
{
    for (int i = 0; i < n; i++) {
        rqs[i]->out.result = res;
        if (msg)
            snprintf(rqs[i]->out.message, sizeof(rqs[i]->out.message), "%s", msg);
    }
}

/* The helper the seeds' reentrancy test calls: takes the same lock and gives it back. */
static int nested_helper(const struct lock_grant *outer, struct sale_request *rq)
{
    struct lock_grant inner;
    struct lock_error err = { 0 };
    int st = lock_acquire(svc_lock, outer->item, svc.wait_ms, &inner, NULL, &err);

    metrics_lock_wait(inner.waited_ms);
    if (st == LOCK_OK) {
        lock_release(svc_lock, &inner, NULL, &err);
        return 0;
    }
    rq->out.result = st == LOCK_TIMEOUT ? SALE_LOCK_TIMEOUT : err.io ? SALE_REDIS_DOWN : SALE_ERROR;
    snprintf(rq->out.message, sizeof(rq->out.message), "lock: %s", err.msg);
    return -1;
}

/* Maps a failed acquire to every request of the batch. */
static void acquire_failed(int st, const struct lock_error *err, struct sale_request **rqs, int n)
{
    char msg[160];

    if (st == LOCK_TIMEOUT) {
        set_all(rqs, n, SALE_LOCK_TIMEOUT, NULL);
    } else if (st == LOCK_UNAVAILABLE) {
        set_all(rqs, n, SALE_LOCK_UNAVAILABLE, NULL);
    } else if (err->io) {
        store_drop_why(err->msg[0] ? err->msg : "connection dropped");
        set_all(rqs, n, SALE_REDIS_DOWN, NULL);
    } else {
        snprintf(msg, sizeof(msg), "lock: %s", err->msg);
        set_all(rqs, n, SALE_ERROR, msg);
    }
}

/* What a batch's sell step did. */
enum sell_step {
    SELL_KEPT,        /* sold (or answered 409); the grant is still held */
    SELL_FAILED,      /* the write failed (outcomes say why); the grant is still held */
    SELL_RELEASED,    /* the writes rode with the release: the grant is given back */
    SELL_AGAIN        /* released, nothing written: Redis had forgotten the write script */
};

/* A script call's key count, as its argument. */
static const char *const key_counts[] = { "0", "1", "2", "3", "4", "5", "6", "7" };

/* An idempotency key's two Redis keys, for a sale of item: its first answer, next to
 * the item (idem:{I}:K, the same hash slot), and the item it was first used for
 * (idem-item:K). */
struct idem_names {
    char record[ITEM_MAX + IDEM_KEY_MAX + 16], binding[IDEM_KEY_MAX + 16];
};

static void idem_names_init(struct idem_names *k, const struct sale_request *rq)
{
    snprintf(k->record, sizeof(k->record), "idem:{%s}:%s", rq->item, rq->idem_key);
    snprintf(k->binding, sizeof(k->binding), "idem-item:%s", rq->idem_key);
}

/* The outcome a script gave back for a key seen before: its first answer, the string
 * "STATUS REMAINING TOKEN INSTANCE REQUEST". */
static void replay(const redisReply *r, struct sale_request *rq)
{
    int status = 0;
    struct sale_outcome *out = &rq->out;

    out->result = SALE_ERROR;
    snprintf(out->message, sizeof(out->message), "unreadable first answer");
    if (parse_record(r->str, &status, &out->remaining, &out->token, &out->instance) == 0) {
        out->result = status == 200 ? SALE_OK : SALE_SOLD_OUT;
        out->message[0] = '\0';
        out->replayed = 1;
        metrics_replay();
    }
}

/* A script's key_reused error: the key was first used for another item. */
static int key_reused(const redisReply *r, struct sale_request *rq)
{
    if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, "key_reused", 10) != 0)
        return 0;
    rq->out.result = SALE_KEY_REUSED;
    snprintf(rq->out.message, sizeof(rq->out.message),
             "this Idempotency-Key was first used for item %.64s", r->str + 10 + (r->str[10] == ' '));
    return 1;
}

/* The write script's call for k sales from stock under g (of the n sales rqs: a sale with
 * an idempotency key goes alone, and then is written even when k is 0, to keep its
 * answer): EVALSHA, its sha, the key count, the keys, the args. A grant with a fencing
 * token writes through the fenced script, which also names written:{I} (the last
 * writer), fence:{I} (the last token issued) and the batch's number within the grant. */
struct write_call {
    char keys[5][96], nums[5][32];
    struct idem_names idem;
    const char *argv[3 + 7 + 8 + SALE_BATCH_MAX];
    int argc, nkeys;
    struct lock_script *script;
};

static void write_call_init(struct write_call *w, const struct lock_grant *g, long long stock,
                            long long k, int batch, struct sale_request **rqs, int n)
{
    int fenced = g->token > 0, keyed = rqs[0]->idem_key != NULL;

    w->script = fenced ? &fenced_write_script : &write_script;
    w->nkeys = (fenced ? 5 : 3) + (keyed ? 2 : 0);
    snprintf(w->keys[0], sizeof(w->keys[0]), "stock:{%s}", g->item);
    snprintf(w->keys[1], sizeof(w->keys[1]), "sold:{%s}", g->item);
    snprintf(w->keys[2], sizeof(w->keys[2]), "orders:{%s}", g->item);
    snprintf(w->nums[0], sizeof(w->nums[0]), "%lld", stock);
    snprintf(w->nums[1], sizeof(w->nums[1]), "%lld", k);
    snprintf(w->nums[2], sizeof(w->nums[2]), "%lld", g->token);
    if (fenced) {
        snprintf(w->keys[3], sizeof(w->keys[3]), "written:{%s}", g->item);
        snprintf(w->keys[4], sizeof(w->keys[4]), "fence:{%s}", g->item);
        snprintf(w->nums[3], sizeof(w->nums[3]), "%d", batch);
    }
    if (keyed)
        snprintf(w->nums[4], sizeof(w->nums[4]), "%ld", svc.idem_ttl_ms);
    else
        w->nums[4][0] = '\0'; /* the script reads it only with a key */
    w->argc = 0;
    w->argv[w->argc++] = "EVALSHA";
    w->argv[w->argc++] = w->script->sha;
    w->argv[w->argc++] = key_counts[w->nkeys];
    for (int i = 0; i < (fenced ? 5 : 3); i++)
        w->argv[w->argc++] = w->keys[i];
    if (keyed) {
        idem_names_init(&w->idem, rqs[0]);
        w->argv[w->argc++] = w->idem.record;
        w->argv[w->argc++] = w->idem.binding;
    }
    w->argv[w->argc++] = w->nums[0];
    w->argv[w->argc++] = w->nums[1];
    w->argv[w->argc++] = svc.name;
    w->argv[w->argc++] = g->owner;
    w->argv[w->argc++] = w->nums[2];
    if (fenced)
        w->argv[w->argc++] = w->nums[3];
    w->argv[w->argc++] = g->item;
    w->argv[w->argc++] = w->nums[4];
    for (int i = 0; i < n && (i < k || (keyed && i == 0)); i++)
        w->argv[w->argc++] = rqs[i]->request_id ? rqs[i]->request_id : "";
}

/* Maps the write script's reply for k sales onto the batch; returns how many it sold
 * (0 for a replayed answer), -1 when the write failed. */
static long long write_result(const redisReply *r, long long k, struct sale_request **rqs, int n)
{
    if (r->type == REDIS_REPLY_INTEGER && r->integer == k)
        return k;
    if (r->type == REDIS_REPLY_STRING && rqs[0]->idem_key) {
        replay(r, rqs[0]);
        return 0;
    }
    if (key_reused(r, rqs[0]))
        return 0;
    if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "lease_lost"))
        set_all(rqs, n, SALE_LEASE_LOST, NULL);
    else
        set_all(rqs, n, SALE_ERROR, "the sale's write failed");
    return -1;
}

/* The critical section, as a function of the grant and the n requests it serves: sell
 * min(n, *stock) of the stock this grant read (or last wrote), and write stock, sold and
 * the ledger in one script. When last is set the writes ride with the release; else
 * they go alone and the grant stays held for the next batch (batch counts them, from 1).
 * The first request's faults apply to the whole batch. A fenced grant (one with a
 * token) whose lease is known lost writes nothing: its sales answer lease_lost. A sale
 * with an idempotency key comes alone and is written even when sold out (its answer is
 * kept); the script may give back the key's first answer instead. A write whose reply
 * never came answers outcome_unknown: it may have been done. */
static enum sell_step sell_batch(struct lock_grant *g, long long *stock, struct sale_request **rqs,
                                 int n, int last, int batch)
{
    static atomic_llong seq;
    struct sale_request *lead = rqs[0];
    struct lock_rider writes = { 0 };
    struct lock_error err = { 0 };
    struct write_call w;
    char probe_id[LOCK_OWNER_MAX + 96];
    long long k = *stock <= 0 ? 0 : *stock < n ? *stock : n;
    enum sell_step step = last ? SELL_RELEASED : SELL_KEPT;
    int st, lost, write;

    metrics_batch(n);
    if (svc.faults) {
        snprintf(probe_id, sizeof(probe_id), "%s:%s:%lld", svc.name, g->owner,
                 (long long)atomic_fetch_add(&seq, 1));
        probe_enter(lead->item, probe_id);
    }
    if (lead->nested && nested_helper(g, lead) != 0) {
        set_all(rqs, n, lead->out.result, lead->out.message);
        k = 0;
    } else if (k > 0 && lead->work_ms > 0) {
        lock_sleep_ms(lead->work_ms);
    }
    lost = lock_grant_is_lost(svc_lock, g);
    if ((k > 0 || lead->idem_key) && g->token > 0 && lost) {
        set_all(rqs, n, SALE_LEASE_LOST, NULL); /* fenced: stop before writing */
        k = 0;
    }
    write = (k > 0 || lead->idem_key) && lead->out.result == SALE_OK;
    if (write) {
        write_call_init(&w, g, *stock, k, batch, rqs, n);
        if (last && lock_rider_add_argv(&writes, w.argc, w.argv) != 0) {
            set_all(rqs, n, SALE_ERROR, "out of memory");
            k = 0, write = 0;
        }
    }
    if (svc.faults)
        probe_leave(lead->item, probe_id);
    /* Unless the batch already failed (nested, out of memory): the first k sold. */
    for (int i = 0, failed = lead->out.result != SALE_OK; i < n && !failed; i++) {
        rqs[i]->out.result = i < k ? SALE_OK : SALE_SOLD_OUT;
        rqs[i]->out.remaining = i < k ? *stock - 1 - i : 0;
        rqs[i]->out.token = g->token;
    }
    if (lost)
        for (int i = 0; i < n; i++)
            rqs[i]->out.lease_lost = 1;

    if (!last) {
        redisContext *c = store_conn();
        redisReply *r = NULL;
        long long sold = 0;
        if (write && c == NULL) {
            set_all(rqs, n, SALE_REDIS_DOWN, NULL); /* nothing was sent */
            step = SELL_FAILED;
        } else if (write && (r = lock_script_eval(c, w.script, w.nkeys, w.argc - 3 - w.nkeys,
                                                  w.argv + 3, &err)) == NULL) {
            if (err.io)
                store_drop();
            set_all(rqs, n, err.io ? SALE_OUTCOME_UNKNOWN : SALE_ERROR, err.io ? NULL : err.msg);
            step = SELL_FAILED;
        } else if (write && (sold = write_result(r, k, rqs, n)) < 0) {
            step = SELL_FAILED;
        }
        freeReplyObject(r);
        *stock -= step == SELL_KEPT ? sold : 0;
        return step;
    }

    g->release_gap_ms = lead->release_gap_ms;
    st = lock_release(svc_lock, g, write ? &writes : NULL, &err);
    if (st == LOCK_EXPIRED || st == LOCK_STOLEN)
        for (int i = 0; i < n; i++)
            rqs[i]->out.lease_lost = 1;
    if ((st == LOCK_ERROR && err.io) || (write && writes.replies[0] == NULL))
        store_drop();
    if (write) {
        /* The write's own reply decides; without one, the writes were sent with the
         * release and may be done. */
        redisReply *r = writes.replies[0];
        if (r == NULL)
            set_all(rqs, n, SALE_OUTCOME_UNKNOWN, NULL);
        else if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0)
            step = SELL_AGAIN;
        else
            write_result(r, k, rqs, n);
    }
    lock_rider_reset(&writes);
    return step;
}

/* Gives the grant back with nothing riding (no more sales, or a failed batch). */
static void release_alone(struct lock_grant *g)
{
    struct lock_error err = { 0 };

    if (lock_release(svc_lock, g, NULL, &err) == LOCK_ERROR && err.io)
        store_drop();
}

static long long min_ll(long long a, long long b)
{
    return a < b ? a : b;
}

/* Takes up to room more sales from line into rqs; 0 without a line. */
static int take(const struct sale_line *line, struct sale_request **rqs, int have)
{
    int room = (svc.combine < SALE_BATCH_MAX ? svc.combine : SALE_BATCH_MAX) - have;
    return line && room > 0 ? line->take(line->arg, rqs, have, room) : 0;
}

void sale_serve(struct sale_request *first, long wait_ms, const struct sale_line *line)
{
    struct sale_request *rqs[SALE_BATCH_MAX] = { first };
    int n = 1;

    for (int attempt = 0; attempt < 2; attempt++) {
        struct lock_rider read = { 0 };
        struct lock_error err = { 0 };
        struct lock_grant g;
        long long stock = 0;
        redisContext *c;
        enum sell_step step;
        int st;

        if (!atomic_load(&write_script.loaded) || !atomic_load(&fenced_write_script.loaded)) {
            if ((c = store_conn()) == NULL || lock_script_load(c, &write_script, &err) != LOCK_OK ||
                lock_script_load(c, &fenced_write_script, &err) != LOCK_OK) {
                acquire_failed(LOCK_ERROR, &(struct lock_error){ .io = 1 }, rqs, n);
                goto out_answer;
            }
        }
        lock_rider_add(&read, "GET stock:{%s}", first->item);
        st = lock_acquire(svc_lock, first->item, wait_ms, &g, &read, &err);
        metrics_lock_wait(g.waited_ms);
        if (st != LOCK_OK) {
            acquire_failed(st, &err, rqs, n);
            lock_rider_reset(&read);
            goto out_answer;
        }
        n += take(line, rqs, n);
        for (int i = 0; i < n; i++)
            memset(&rqs[i]->out, 0, sizeof(rqs[i]->out));
        char msg[160] = "";
        enum sale_result res = stock_from_reply(read.replies[0], first->item, &stock, msg,
                                                sizeof(msg));
        lock_rider_reset(&read);
        if (res != SALE_OK) {
            set_all(rqs, n, res, msg);
            release_alone(&g); /* nothing to write */
            goto out_answer;
        }
        /* Batch after batch while sales come, the grant is young and its lease sound;
         * the last batch's writes ride with the release. Between batches the grant
         * lingers for the next sales, unless another process has asked for the lock. */
        for (int batch = 1;; batch++) {
            int last = line == NULL || lock_now_ms() - g.acquired_ms >= line->hold_ms ||
                       lock_grant_is_lost(svc_lock, &g) ||
                       ((line->linger_ms == 0 || lock_grant_is_wanted(svc_lock, &g)) &&
                        !line->has_more(line->arg, 0));
            step = sell_batch(&g, &stock, rqs, n, last, batch);
            if (step == SELL_RELEASED)
                goto out_answer;
            if (step == SELL_AGAIN)
                break;
            if (line)
                line->answer(line->arg, rqs, n);
            n = 0;
            long long until = lock_grant_is_wanted(svc_lock, &g)
                                  ? 0 : min_ll(lock_now_ms() + line->linger_ms,
                                               g.acquired_ms + line->hold_ms);
            if (step == SELL_FAILED || !line->has_more(line->arg, until) ||
                (n = take(line, rqs, 0)) == 0) {
                release_alone(&g);
                return;
            }
            for (int i = 0; i < n; i++)
                memset(&rqs[i]->out, 0, sizeof(rqs[i]->out));
        }
        /* Redis had forgotten the write script (restarted): load it, sell again. */
        atomic_store(&write_script.loaded, 0);
        atomic_store(&fenced_write_script.loaded, 0);
    }
    set_all(rqs, n, SALE_REDIS_DOWN, NULL);
out_answer:
    if (line)
        line->answer(line->arg, rqs, n);
}

/* The atomic script's call for the n sales rqs of one item (a sale with an idempotency
 * key goes alone): EVALSHA, its sha, the key count, the keys, the args. */
struct atomic_call {
    char keys[3][96], count[16], ttl[24];
    struct idem_names idem;
    const char *argv[3 + 5 + 4 + SALE_BATCH_MAX];
    int argc, nkeys;
};

static void atomic_call_init(struct atomic_call *a, struct sale_request **rqs, int n)
{
    const char *item = rqs[0]->item;
    int keyed = rqs[0]->idem_key != NULL;

    snprintf(a->keys[0], sizeof(a->keys[0]), "stock:{%s}", item);
    snprintf(a->keys[1], sizeof(a->keys[1]), "sold:{%s}", item);
    snprintf(a->keys[2], sizeof(a->keys[2]), "orders:{%s}", item);
    snprintf(a->count, sizeof(a->count), "%d", n);
    if (keyed)
        snprintf(a->ttl, sizeof(a->ttl), "%ld", svc.idem_ttl_ms);
    else
        a->ttl[0] = '\0'; /* the script reads it only with a key */
    a->nkeys = keyed ? 5 : 3;
    a->argc = 0;
    a->argv[a->argc++] = "EVALSHA";
    a->argv[a->argc++] = atomic_script.sha;
    a->argv[a->argc++] = key_counts[a->nkeys];
    for (int i = 0; i < 3; i++)
        a->argv[a->argc++] = a->keys[i];
    if (keyed) {
        idem_names_init(&a->idem, rqs[0]);
        a->argv[a->argc++] = a->idem.record;
        a->argv[a->argc++] = a->idem.binding;
    }
    a->argv[a->argc++] = svc.name;
    a->argv[a->argc++] = a->count;
    a->argv[a->argc++] = item;
    a->argv[a->argc++] = a->ttl;
    for (int i = 0; i < n; i++)
        a->argv[a->argc++] = rqs[i]->request_id ? rqs[i]->request_id : "";
}

int sale_atomic_format(struct sale_request **rqs, int n, char **cmd, struct lock_error *err)
{
    struct atomic_call a;
    int len;

    if (n > SALE_BATCH_MAX)
        return lock_fail(err, NULL, "too many sales for one script");
    atomic_call_init(&a, rqs, n);
    len = redisFormatCommandArgv(cmd, a.argc, a.argv, NULL);
    if (len < 0)
        lock_fail(err, NULL, "cannot format the sale script");
    return len;
}

int sale_atomic_load(redisContext *c, int again, struct lock_error *err)
{
    if (!again && atomic_load(&atomic_script.loaded))
        return LOCK_OK;
    return lock_script_load(c, &atomic_script, err);
}

void sale_atomic_result(const redisReply *r, struct sale_request **rqs, int n)
{
    const char *item = rqs[0]->item;
    char msg[160];

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER) {
        long long k = r->element[0]->integer, left = r->element[1]->integer;
        for (int i = 0; i < n; i++) {
            rqs[i]->out.result = i < k ? SALE_OK : SALE_SOLD_OUT;
            rqs[i]->out.remaining = i < k ? left + k - 1 - i : 0;
        }
    } else if (r->type == REDIS_REPLY_STRING && rqs[0]->idem_key) {
        replay(r, rqs[0]);
    } else if (key_reused(r, rqs[0])) {
        ;
    } else if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "unknown_item")) {
        snprintf(msg, sizeof(msg), "no stock key stock:{%s}; set it with deploy/stock", item);
        set_all(rqs, n, SALE_UNKNOWN_ITEM, msg);
    } else if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "bad_stock")) {
        snprintf(msg, sizeof(msg), "stock:{%s} does not hold an integer", item);
        set_all(rqs, n, SALE_BAD_STOCK, msg);
    } else {
        snprintf(msg, sizeof(msg), "sale script: %.120s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        set_all(rqs, n, SALE_ERROR, msg);
    }
}

/* The atomic baseline, on the calling thread: one sale in one script, no lock. */
static void sell_atomic(struct sale_request *rq)
{
    redisContext *c = store_conn();
    struct lock_error err = { 0 };
    struct atomic_call a;
    redisReply *r;

    if (c == NULL) {
        rq->out.result = SALE_REDIS_DOWN;
        return;
    }
    metrics_batch(1);
    atomic_call_init(&a, &rq, 1);
    r = lock_script_eval(c, &atomic_script, a.nkeys, a.argc - 3 - a.nkeys, a.argv + 3, &err);
    if (r == NULL) {
        if (err.io)
            store_drop(); /* the script was sent: maybe done */
        set_all(&rq, 1, err.io ? SALE_OUTCOME_UNKNOWN : SALE_ERROR, err.io ? NULL : err.msg);
        return;
    }
    sale_atomic_result(r, &rq, 1);
    freeReplyObject(r);
}

void sale_run(struct sale_request *rq)
{
    memset(&rq->out, 0, sizeof(rq->out));
    if (svc.atomic)
        sell_atomic(rq);
    else
        sale_serve(rq, svc.wait_ms, NULL);
}
