/* request.h - A sale request and its outcome: what the HTTP side asks, what an engine
 * hands the store, and what the store answers. Below the sale, so that the store speaks of
 * requests without knowing the engines; each result's answer is service/sale/answer.h. */
#ifndef STORE_REQUEST_H
#define STORE_REQUEST_H

#include <stdio.h>

#include "common/item.h"

enum { IDEM_KEY_MAX = 64, REQUEST_ID_MAX = 64, SALE_BATCH_MAX = 256 };

enum sale_result {
    SALE_OK, SALE_SOLD_OUT, SALE_LOCK_TIMEOUT, SALE_LOCK_UNAVAILABLE, SALE_STORE_DOWN,
    SALE_UNKNOWN_ITEM, SALE_BAD_STOCK, SALE_LEASE_LOST, SALE_OUTCOME_UNKNOWN, SALE_KEY_REUSED,
    SALE_ERROR,
    SALE_RESULTS
};

struct sale_outcome {
    enum sale_result result;
    long long remaining;
    long long token;
    int lease_lost;         /* the lock said our lease was gone by the time we released */
    int replayed;           /* the first answer to this idempotency key, given again */
    int unreplicated;       /* outcome_unknown because fewer replicas than asked acknowledged
                               the write in time */
    char instance[64];      /* replayed: the instance that sold it */
    char message[192];
};

struct sale_request {
    const char *item;
    const char *idem_key;   /* Idempotency-Key (NULL: none): the sale is done at most once */
    const char *request_id; /* X-Request-Id, or the instance's own: in the ledger and logs */
    long work_ms;           /* fault: sleep between reading and writing stock */
    long release_gap_ms;    /* fault: sleep inside release */
    long write_gap_ms;      /* fault: sleep after the lease check, before the write */
    int nested;             /* fault: take the same lock again inside the sale */
    struct sale_outcome out;
};

/* Sets every request's result (and message, when not NULL). */
static inline void sale_set_all(struct sale_request **rqs, int n, enum sale_result res,
                                const char *msg)
{
    for (int i = 0; i < n; i++) {
        rqs[i]->out.result = res;
        if (msg)
            snprintf(rqs[i]->out.message, sizeof(rqs[i]->out.message), "%s", msg);
    }
}

#endif
