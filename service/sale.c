/* sale.c - One sale under the lock, in the order it happens: acquire (the stock's read
 * rides with the granting try), decide, write, release (the write rides with it).
 * One grant serves one sale, or batch after batch of them (--combine: workers.c gathers
 * them). The atomic baseline is sale_atomic.c; the teaching faults are faults.c. */
#include "service/service.h"
#include "service/events.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* What a batch's sell step did. */
enum sell_step {
    SELL_KEPT,        /* sold (or answered 409); the grant is still held */
    SELL_FAILED,      /* the write failed, or fewer than --replicas replicas have it
                         (outcomes say why); the grant is still held */
    SELL_UNSURE,      /* the write timed out: it may still run, so the grant is abandoned
                         (its lease runs out), never released on another connection */
    SELL_RELEASED,    /* the write rode with the release: the grant is given back */
    SELL_AGAIN        /* released, nothing written: Redis did not have the write script */
};

/* The live page's view of a release: how it ended. */
static void event_released(const struct lock_grant *g, int st)
{
    event_emit(g->item, g->owner, "released", "\"result\":\"%s\"",
               st == LOCK_OK ? "ok" : st == LOCK_EXPIRED ? "expired" : st == LOCK_STOLEN ? "stolen"
                                                                      : "error");
}

/* The live page's view of a write the fence refused (the grant's token is stale). */
static void event_if_fenced(const struct lock_grant *g, struct sale_request **rqs)
{
    if (g->token > 0 && rqs[0]->out.result == SALE_LEASE_LOST)
        event_emit(g->item, g->owner, "fenced", "\"token\":%lld", g->token);
}

/* The live page's view of an acquire: the grant (its lease left, 0 for none), or a
 * timeout. */
static void event_acquired(const char *item, const struct lock_grant *g, int st)
{
    const char *thread = strrchr(g->owner, ':');   /* "<instance id>:<thread>" */

    if (st == LOCK_OK)
        event_emit(item, g->owner, "acquired",
                   "\"owner\":\"%.8s%s\",\"token\":%lld,\"depth\":%d,\"lease_ms\":%lld,"
                   "\"waited_ms\":%lld", g->owner, thread ? thread : "", g->token, g->depth,
                   g->valid_until_ms ? g->valid_until_ms - lock_now_ms() : 0, g->waited_ms);
    else if (st == LOCK_TIMEOUT)
        event_emit(item, g->owner, "timeout", "\"waited_ms\":%lld", g->waited_ms);
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

/* Inside the critical section, between the read and the write: the probe enters
 * (--faults), the faults run, then the decision. A fenced grant (one with a token) whose
 * lease is known lost writes nothing: its sales answer lease_lost. Returns 1 when there
 * is a write to send (a sale with an idempotency key is written even when sold out: its
 * answer is kept), and k, what it sells. */
static int critical_section(const struct lock_grant *g, long long stock, long long *k,
                            struct sale_request **rqs, int n, const char *probe_id)
{
    struct sale_request *lead = rqs[0];
    int lost, write;

    *k = decide(stock, n);
    if (probe_id)
        probe_enter(lead->item, probe_id);
    if (faults_inside(g, lead, *k) != 0) {
        sale_set_all(rqs, n, lead->out.result, lead->out.message);
        *k = 0;
    }
    lost = lock_grant_is_lost(svc_lock, g);
    if ((*k > 0 || lead->idem_key) && g->token > 0 && lost) {
        sale_set_all(rqs, n, SALE_LEASE_LOST,        /* fenced: stop before writing */
                     "the lease was lost before the write: nothing was sent");
        event_emit(g->item, g->owner, "refused", "\"token\":%lld", g->token);
        *k = 0;
    }
    write = (*k > 0 || lead->idem_key) && lead->out.result == SALE_OK;
    mark_sold(g, stock, *k, lost, rqs, n);
    return write;
}

/* What leaves the critical section, in one batch: the probe's leave (--faults), then the
 * write (its index in *at; -1 for none, and then LOCK_ERROR when the outcomes say why). */
static int leaving(struct rd_batch *b, int *at, const struct lock_grant *g, long long stock,
                   long long k, int write, int batch, struct sale_request **rqs, int n,
                   const char *probe_id)
{
    struct lock_error err = { 0 };

    *at = -1;
    if (probe_id)
        probe_leave_add(b, rqs[0]->item, probe_id, &err);   /* it only counts: no failure */
    if (!write)
        return LOCK_OK;
    if (sale_write_add(b, g, stock, k, batch, rqs, n, &err) != LOCK_OK) {
        sale_set_all(rqs, n, SALE_ERROR, err.msg);
        return LOCK_ERROR;
    }
    *at = b->n - 1;
    return LOCK_OK;
}

/* The write sent alone (at: its index in writes, -1 for none), the grant kept for the
 * next batch: the stock goes down by what was sold. A write sent whose reply never came
 * answers outcome_unknown. With --replicas, WAIT rides right after it as the round
 * trip's after (sent again behind the write, should Redis want the script loaded first);
 * a write it does not confirm answers outcome_unknown and ends the grant: the next batch
 * is not built on it. */
static enum sell_step write_alone(struct rd_batch *writes, int at, long long *stock, long long k,
                                  struct sale_request **rqs, int n)
{
    struct lock_error err = { 0 };
    struct rd_batch confirm = { 0 };
    int wait_at = at >= 0 ? sale_replicas_add(&confirm) : -1;
    enum sell_step step = SELL_KEPT;
    long long sold;

    if (rd_round_trip(svc_redis, NULL, writes, confirm.n ? &confirm : NULL, &err) != LOCK_OK &&
        at >= 0 && writes->reply[at] == NULL) {
        sale_set_all(rqs, n, writes->sent ? SALE_OUTCOME_UNKNOWN : SALE_REDIS_DOWN, NULL);
        step = writes->sent && err.fault == LOCK_E_TIMEOUT ? SELL_UNSURE : SELL_FAILED;
    } else if (at >= 0 && (sold = sale_write_result(writes->reply[at], k, rqs, n)) < 0) {
        step = SELL_FAILED;
    } else if (at >= 0) {
        *stock -= sold;
        if (sale_replicas_check(&confirm, wait_at, rqs, n) > 0)
            step = SELL_FAILED;
    }
    if (wait_at >= 0)
        rd_batch_reset(&confirm);
    return step;
}

/* The write (at: its index in writes, -1 for none) rides with the release: its own reply
 * decides; without one, it was sent with the release and may be done. With --replicas,
 * WAIT goes between the write and the release, on the same connection: Redis runs
 * nothing more of this connection's until WAIT answers, so the lock is held until the
 * write is on the replicas (or WAIT gave up). Released first, the next holder could read
 * the stock this write left and sell on top of a write that a failover may still undo. */
static enum sell_step write_and_release(struct lock_grant *g, struct rd_batch *writes, int at,
                                        long long k, struct sale_request **rqs, int n)
{
    struct lock_error err = { 0 };
    struct lock_pause pause;
    struct rd_reply *r;
    int wait_at = at >= 0 ? sale_replicas_add(writes) : -1;
    int st;

    event_emit(g->item, g->owner, "leave", NULL);   /* before the release is sent */
    st = lock_release(svc_lock, g, writes->n ? writes : NULL, faults_release_pause(rqs[0], &pause),
                      &err);
    event_released(g, st);

    if (st == LOCK_EXPIRED || st == LOCK_STOLEN)
        for (int i = 0; i < n; i++)
            rqs[i]->out.lease_lost = 1;
    if (at < 0)
        return SELL_RELEASED;
    if ((r = writes->reply[at]) == NULL) {
        sale_set_all(rqs, n, writes->sent ? SALE_OUTCOME_UNKNOWN : SALE_REDIS_DOWN, NULL);
    } else if (r->fault == LOCK_E_NOSCRIPT) {
        return SELL_AGAIN;   /* nothing ran; the layer has loaded it for the next grant */
    } else {
        sale_write_result(r, k, rqs, n);
        event_if_fenced(g, rqs);
        sale_replicas_check(writes, wait_at, rqs, n);
    }
    return SELL_RELEASED;
}

/* One batch under g: sell min(n, *stock) of the stock this grant read (or last wrote),
 * and write stock, sold and the ledger in one script. When last is set the write rides
 * with the release; else it goes alone and the grant stays held for the next batch
 * (batch counts them, from 1). The first request's faults apply to the whole batch. */
static enum sell_step sell_batch(struct lock_grant *g, long long *stock, struct sale_request **rqs,
                                 int n, int last, int batch)
{
    static atomic_llong seq;
    struct rd_batch writes = { 0 };
    enum sell_step step = last ? SELL_RELEASED : SELL_KEPT;
    char probe_id[LOCK_OWNER_MAX + 96], *probe = NULL;
    long long k;
    int at, write;

    metrics_batch(n);
    if (svc.faults) {
        snprintf(probe_id, sizeof(probe_id), "%s:%s:%lld", svc.name, g->owner,
                 (long long)atomic_fetch_add(&seq, 1));
        probe = probe_id;
    }
    write = critical_section(g, *stock, &k, rqs, n, probe);
    event_emit(g->item, g->owner, "sale", "\"stock\":%lld,\"n\":%d,\"sold\":%lld,\"lost\":%d",
               *stock, n, write ? k : 0, rqs[0]->out.lease_lost);
    leaving(&writes, &at, g, *stock, k, write, batch, rqs, n, probe);   /* at -1: no write */
    if (last)
        step = write_and_release(g, &writes, at, k, rqs, n);
    else if (writes.n && (step = write_alone(&writes, at, stock, k, rqs, n)) == SELL_FAILED)
        event_if_fenced(g, rqs);
    rd_batch_reset(&writes);
    return step;
}

/* Gives the grant back with nothing riding (no more sales, or a failed batch). */
static void release_alone(struct lock_grant *g)
{
    struct lock_error err = { 0 };

    event_emit(g->item, g->owner, "leave", NULL);
    event_released(g, lock_release(svc_lock, g, NULL, NULL, &err));
}

static long long min_ll(long long a, long long b)
{
    return a < b ? a : b;
}

/* Takes up to room more sales from line into rqs; 0 without a line. */
static int take(const struct sale_line *line, struct sale_request **rqs, int have)
{
    int room = (svc.combine < SALE_BATCH_MAX ? svc.combine : SALE_BATCH_MAX) - have;
    int got = line && room > 0 ? line->take(line->arg, rqs, have, room) : 0;

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
    return line == NULL || lock_now_ms() - g->acquired_ms >= line->hold_ms ||
           lock_grant_is_lost(svc_lock, g) ||
           (!may_linger(g, line) && !line->has_more(line->arg, 0));
}

/* Batch after batch under one grant while sales come, the grant is young and its lease
 * sound; the last batch's write rides with the release. Between batches the grant
 * lingers for the next sales, if they come close together and no other process has
 * asked for the lock. Every
 * batch but the current one is answered; returns SELL_AGAIN when the current one,
 * rqs[0..*n), must be tried under a new grant. */
static enum sell_step serve_batches(struct lock_grant *g, long long stock, struct sale_request **rqs,
                                    int *np, const struct sale_line *line)
{
    int n = *np;

    for (int batch = 1;; batch++, *np = n) {
        enum sell_step step = sell_batch(g, &stock, rqs, n, is_last(g, line), batch);
        if (step == SELL_AGAIN)
            return step;
        if (line)
            line->answer(line->arg, rqs, n);
        if (step == SELL_RELEASED)
            return step;
        long long until = !may_linger(g, line)
                              ? 0 : min_ll(lock_now_ms() + line->linger_ms,
                                           g->acquired_ms + line->hold_ms);
        if (step == SELL_UNSURE) {
            event_emit(g->item, g->owner, "leave", NULL);
            event_emit(g->item, g->owner, "released", "\"result\":\"abandoned\"");
            lock_abandon(svc_lock, g);
            return SELL_RELEASED;
        }
        if (step == SELL_FAILED || !line->has_more(line->arg, until) ||
            (n = take(line, rqs, 0)) == 0) {
            release_alone(g);
            return SELL_RELEASED;
        }
    }
}

/* The sales rqs[0..n) are of one item, the first's (taken from the line with it).
 * Should the write find Redis without its script (a restart), the batch in hand is sold
 * again under a new grant, once. */
void sale_serve(struct sale_request *first, long wait_ms, const struct sale_line *line)
{
    struct sale_request *rqs[SALE_BATCH_MAX] = { first };
    char item[ITEM_MAX + 1];   /* every batch's; first may be answered (and freed) early */
    int n = 1;

    snprintf(item, sizeof(item), "%s", first->item);
    if (first->idem_key && sale_idem_bind(first) != 0)
        goto out_answer;   /* the key was used for another item, or Redis could not say */
    for (int attempt = 0; attempt < 2; attempt++) {
        struct rd_batch read = { 0 };
        struct lock_error err = { 0 };
        struct lock_grant g = { .owner = "" };
        long long stock = 0;
        char msg[160] = "";
        enum sale_result res = SALE_ERROR;
        int st = sale_write_prepare(item, &err);

        if (st == LOCK_OK)
            st = rd_batch_add(&read, &err, "GET stock:{%s}", item);
        if (st == LOCK_OK) {
            st = lock_acquire(svc_lock, item, wait_ms, &g, &read, &err);
            metrics_lock_wait(g.waited_ms);
            event_acquired(item, &g, st);
        }
        if (st == LOCK_OK) {
            n += take(line, rqs, n);
            for (int i = 0; i < n; i++)
                memset(&rqs[i]->out, 0, sizeof(rqs[i]->out));
            res = sale_stock_of(read.reply[0], item, &stock, msg, sizeof(msg));
        }
        rd_batch_reset(&read);
        if (st != LOCK_OK) {
            sale_acquire_failed(st, &err, rqs, n);
        } else if (res != SALE_OK) {
            sale_set_all(rqs, n, res, msg);
            release_alone(&g); /* nothing to write */
        } else if (serve_batches(&g, stock, rqs, &n, line) != SELL_AGAIN) {
            return;
        } else {
            continue;
        }
        goto out_answer;
    }
    sale_set_all(rqs, n, SALE_REDIS_DOWN, NULL);
out_answer:
    if (line)
        line->answer(line->arg, rqs, n);
}

void sale_run(struct sale_request *rq)
{
    memset(&rq->out, 0, sizeof(rq->out));
    if (svc.atomic)
        sale_atomic_run(rq);
    else
        sale_serve(rq, svc.wait_ms, NULL);
}
