/* sale.h - The locked sale: acquire (the stock read with the grant), decide, write and
 * release (the write with the release), for one sale or batch after batch of them. */
#ifndef SALE_SALE_H
#define SALE_SALE_H

#include "service/store/request.h"

/* Where the sales of one item come from while a grant is held, and where they go once
 * answered: a worker's line (sale/workers.c, --combine). Called on the serving thread. */
struct sale_line {
    /* Takes up to room more waiting sales into rqs after the have already there; returns
     * how many. A sale with an idempotency key goes alone: never taken into a batch that
     * has one, nor one added to its. */
    int (*take)(void *arg, struct sale_request **rqs, int have, int room);
    /* 1 when sales are waiting to be taken, waiting for one until the monotonic time
     * until_ms (now or earlier: no wait). */
    int (*has_more)(void *arg, long long until_ms);
    /* rqs[0..n) have their outcomes: answer them. */
    void (*answer)(void *arg, struct sale_request **rqs, int n);
    /* 1 when a next batch is worth waiting linger_ms for: the line's sales come close
     * together (the next sale of one item among a thousand comes long after). */
    int (*lingers)(void *arg);
    /* Optional: the lock for the line's item is held (once per sale_serve, however many
     * grants it takes): its calls go to the item's store server from now on. */
    void (*granted)(void *arg);
    void *arg;
    int batch_max;       /* sales in one critical section, at most (--combine) */
    long hold_ms;        /* serve batch after batch under one grant at most this long */
    long linger_ms;      /* wait this long for a next batch before giving the grant back */
};

/* Takes the lock for first's item (waiting up to wait_ms) and serves first, with up to
 * line->batch_max - 1 more sales taken from line (NULL: first alone), in one critical
 * section: one read, one write. While more sales wait and the grant is younger than
 * line->hold_ms, serves them too, batch after batch, without giving the lock back: the
 * stock is the one this grant wrote. Every batch goes to line->answer once sold; without
 * a line, first's outcome is set on return. */
void sale_serve(struct sale_request *first, long wait_ms, const struct sale_line *line);

#endif
