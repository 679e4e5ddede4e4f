/* sale.c - One sale under the lock, in the order it happens: acquire (the store reads the
 * stock with the granting try), decide, write, release (the store's write rides with it).
 * One grant serves one sale, or batch after batch of them (--combine: workers.c gathers
 * them). The teaching faults are faults/faults.c's; where the stock lives, the store's
 * (store/store.h); the live page hears of each step (events/events.h). */
#include "service/sale/sale.h"

#include <string.h>

#include "common/clock.h"
#include "service/config/config.h"
#include "service/events/events.h"
#include "service/faults/faults.h"
#include "service/metrics/metrics.h"
#include "service/store/store.h"

/* A failed acquire (st, err) as every request's outcome. */
static void acquire_failed(int st, const struct error *err, struct sale_request **rqs, int n)
{
    char msg[160];

    if (st == LOCK_TIMEOUT) {
        sale_set_all(rqs, n, SALE_LOCK_TIMEOUT, NULL);
    } else if (st == LOCK_UNAVAILABLE) {
        sale_set_all(rqs, n, SALE_LOCK_UNAVAILABLE, NULL);
    } else if (err->fault == FAULT_NOREPLICAS) {
        sale_set_all(rqs, n, SALE_STORE_DOWN, "Redis takes no writes now: too few replicas "
                     "(min-replicas-to-write); nothing was written");
    } else if (err->fault == FAULT_MOVING) {
        sale_set_all(rqs, n, SALE_STORE_DOWN, "the cluster cannot serve this item now (its slot "
                     "is moving, or a failover is under way); nothing was written");
    } else if (fault_is_io(err->fault) || err->fault == FAULT_AUTH) {
        sale_set_all(rqs, n, SALE_STORE_DOWN, NULL);
    } else {
        snprintf(msg, sizeof(msg), "lock: %s", err->msg);
        sale_set_all(rqs, n, SALE_ERROR, msg);
    }
}

/* Decide: of n sales, how many the stock covers. */
static long long decide(long long stock, int n)
{
    return stock <= 0 ? 0 : stock < n ? stock : n;
}

/* Every request's outcome once k of the n are sold from stock under g (unless the batch
 * already failed: nested, out of memory). */
static void mark_sold(const struct lock_grant *g, long long stock, long long k, int lost,
                      struct sale_request **rqs, int n)
{
    for (int i = 0, failed = rqs[0]->out.result != SALE_OK; i < n && !failed; i++) {
        rqs[i]->out.result = i < k ? SALE_OK : SALE_SOLD_OUT;
        rqs[i]->out.remaining = i < k ? stock - 1 - i : 0;
        rqs[i]->out.token = g->token;
    }
    for (int i = 0; lost && i < n; i++)
        rqs[i]->out.lease_lost = 1;
}

/* Inside the critical section, between the read and the write: the faults (--faults: the
 * probe enters; nested, work_ms), then the decision. A fenced grant (one with a token)
 * whose lease is known lost writes nothing: its sales answer lease_lost. Fills b: what it
 * sells (k) and whether there is a write (a sale with an idempotency key is written even
 * when sold out: its answer is kept). */
static void critical_section(struct store_batch *b, struct faults_inside *faults)
{
    const struct lock_grant *g = b->g;
    struct sale_request *lead = b->rqs[0];
    int lost;

    b->k = decide(b->stock, b->n);
    if (faults_inside(g, lead, b->k, faults) != 0) {
        acquire_failed(faults->nested, &faults->nested_err, &lead, 1);
        snprintf(lead->out.message, sizeof(lead->out.message), "lock: %s", faults->nested_err.msg);
        sale_set_all(b->rqs, b->n, lead->out.result, lead->out.message);
        b->k = 0;
    }
    lost = lock_grant_is_lost(svc_lock, g);
    if ((b->k > 0 || lead->idem_key) && g->token > 0 && lost) {
        sale_set_all(b->rqs, b->n, SALE_LEASE_LOST,   /* fenced: stop before writing */
                     "the lease was lost before the write: nothing was sent");
        event_refused(g);
        b->k = 0;
    }
    b->write = (b->k > 0 || lead->idem_key) && lead->out.result == SALE_OK;
    if (b->write)
        faults_write_gap(lead);
    b->probe_id = faults->probe;
    b->pause = faults->pause;
    mark_sold(g, b->stock, b->k, lost, b->rqs, b->n);
}

/* How a release ended, for the live page. */
static const char *released_how(int st)
{
    return st == LOCK_OK ? "ok" : st == LOCK_EXPIRED ? "expired" : st == LOCK_STOLEN ? "stolen"
                                                                                   : "error";
}

/* One batch under g: sell b->n sales of the stock this grant read (or last wrote): the
 * store writes stock, sold and the ledger at once. When last is set the write rides with
 * the release; else it goes alone and the grant stays held for the next batch. The first
 * request's faults apply to the whole batch. */
static enum store_sold sell_batch(struct store_batch *b, int last)
{
    struct faults_inside faults;
    enum store_sold sold;
    int released = LOCK_OK, in_process = svc_lock && svc_lock->ops->in_process;

    metrics_batch(b->n);
    critical_section(b, &faults);
    event_sale(b->g, b->stock, b->n, b->write ? b->k : 0, b->rqs[0]->out.lease_lost);
    if (last && !in_process)
        event_leave(b->g);   /* before the release is sent */
    sold = svc_store->ops->sell(svc_store, svc_lock, b, last, &released);
    if (last) {
        if (in_process)
            event_leave(b->g);   /* dated when it let go, its writes done (held_to_us) */
        event_released(b->g, released_how(released));
    }
    if (b->write && b->g->token > 0 && b->rqs[0]->out.result == SALE_LEASE_LOST)
        event_fenced(b->g);   /* the store's fence refused the write */
    return sold;
}

/* Gives the grant back with nothing riding (no more sales, or a failed batch). */
static void release_alone(struct lock_grant *g)
{
    struct error err = { 0 };

    event_leave(g);
    event_released(g, released_how(lock_release(svc_lock, g, NULL, NULL, &err)));
}

/* Gives the grant up without a release: its write may still run (lock_abandon). */
static void abandon(struct lock_grant *g)
{
    event_leave(g);
    event_released(g, "abandoned");
    lock_abandon(svc_lock, g);
}

static long long min_ll(long long a, long long b)
{
    return a < b ? a : b;
}

/* Takes up to room more sales from line into rqs; 0 without a line. */
static int take(const struct sale_line *line, struct sale_request **rqs, int have)
{
    int max = line ? (line->batch_max < SALE_BATCH_MAX ? line->batch_max : SALE_BATCH_MAX) : 1;
    int got = line && max - have > 0 ? line->take(line->arg, rqs, have, max - have) : 0;

    for (int i = have; i < have + got; i++)
        memset(&rqs[i]->out, 0, sizeof(rqs[i]->out));
    return got;
}

/* 1 when the grant may wait for the line's next batch: its sales come close together
 * and no other process has asked for the lock. */
static int may_linger(const struct lock_grant *g, const struct sale_line *line)
{
    return line->linger_ms > 0 && !lock_grant_is_wanted(svc_lock, g) && line->lingers(line->arg);
}

/* 1 when this batch is the grant's last: no line, the grant is old or its lease lost,
 * or nothing more waits and the grant may not linger. */
static int is_last(const struct lock_grant *g, const struct sale_line *line)
{
    return line == NULL || clock_now_ms() - g->acquired_ms >= line->hold_ms ||
           lock_grant_is_lost(svc_lock, g) ||
           (!may_linger(g, line) && !line->has_more(line->arg, 0));
}

/* Batch after batch under one grant while sales come, the grant is young and its lease
 * sound; the last batch's write rides with the release. Between batches the grant
 * lingers for the next sales, if they come close together and no other process has asked
 * for the lock. Every batch but the current one is answered; returns STORE_AGAIN when the
 * current one, rqs[0..*n), must be tried under a new grant. */
static enum store_sold serve_batches(struct lock_grant *g, long long stock, struct sale_request **rqs,
                                     int *np, const struct sale_line *line)
{
    struct store_batch b = { .g = g, .stock = stock, .rqs = rqs, .n = *np };

    for (b.batch = 1;; b.batch++, *np = b.n) {
        enum store_sold sold = sell_batch(&b, is_last(g, line));
        if (sold == STORE_AGAIN)
            return sold;
        if (line)
            line->answer(line->arg, rqs, b.n);
        if (sold == STORE_RELEASED)
            return sold;
        long long until = !may_linger(g, line)
                              ? 0 : min_ll(clock_now_ms() + line->linger_ms,
                                           g->acquired_ms + line->hold_ms);
        if (sold == STORE_UNSURE) {
            abandon(g);
            return STORE_RELEASED;
        }
        if (sold == STORE_FAILED || !line->has_more(line->arg, until) ||
            (b.n = take(line, rqs, 0)) == 0) {
            release_alone(g);
            return STORE_RELEASED;
        }
    }
}

/* What one try of a grant left to do. */
enum tried {
    TRIED_ANSWER,       /* the outcomes are set: the caller answers them */
    TRIED_ANSWERED,     /* every batch was answered as it was sold */
    TRIED_AGAIN         /* the batch in hand must be sold again, under a new grant */
};

/* One try: the grant (the stock read with it), the first batch taken, sold. */
static enum tried try_grant(struct sale_request **rqs, int *n, const char *item, long wait_ms,
                            const struct sale_line *line)
{
    struct error err = { 0 };
    struct lock_grant g = { .owner = "" };
    struct store_read read = { 0 };
    int st = svc_store->ops->grant(svc_store, svc_lock, item, wait_ms, &g, &read, &err);

    if (read.asked) {
        metrics_lock_wait(g.waited_ms);
        if (st == LOCK_OK)
            event_acquired(&g);
        else if (st == LOCK_TIMEOUT)
            event_timeout(&g);
    }
    if (st != LOCK_OK) {
        acquire_failed(st, &err, rqs, *n);
        return TRIED_ANSWER;
    }
    if (line && line->granted)
        line->granted(line->arg);
    *n += take(line, rqs, *n);
    for (int i = 0; i < *n; i++)
        memset(&rqs[i]->out, 0, sizeof(rqs[i]->out));
    if (read.result != SALE_OK) {
        sale_set_all(rqs, *n, read.result, read.msg);
        release_alone(&g);   /* nothing to write */
        return TRIED_ANSWER;
    }
    return serve_batches(&g, read.stock, rqs, n, line) == STORE_AGAIN ? TRIED_AGAIN
                                                                       : TRIED_ANSWERED;
}

/* The sales rqs[0..n) are of one item, the first's (taken from the line with it).
 * Should the write find the store not ready for it (a restarted Redis without its
 * script), the batch in hand is sold again under a new grant, once. */
void sale_serve(struct sale_request *first, long wait_ms, const struct sale_line *line)
{
    struct sale_request *rqs[SALE_BATCH_MAX] = { first };
    char item[ITEM_MAX + 1];   /* every batch's; first may be answered (and freed) early */
    enum tried tried = TRIED_AGAIN;
    int n = 1;

    memset(&first->out, 0, sizeof(first->out));
    snprintf(item, sizeof(item), "%s", first->item);
    if (first->idem_key && svc_store->ops->bind_key(svc_store, first) != 0)
        tried = TRIED_ANSWER;   /* the key was used for another item, or no store to say */
    for (int attempt = 0; attempt < 2 && tried == TRIED_AGAIN; attempt++)
        tried = try_grant(rqs, &n, item, wait_ms, line);
    if (tried == TRIED_AGAIN)
        sale_set_all(rqs, n, SALE_STORE_DOWN, NULL);
    if (tried != TRIED_ANSWERED && line)
        line->answer(line->arg, rqs, n);
}
