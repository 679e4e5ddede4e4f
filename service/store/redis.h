/* redis.h - The Redis store's parts (service/store/redis*.c): its state, its keys and how
 * its scripts' replies become outcomes. Only those files include it. */
#ifndef STORE_REDIS_H
#define STORE_REDIS_H

#include <stdatomic.h>

#include "service/store/store.h"

/* The store: the Redis client (lent to the lock) and what the sale's writes need. */
struct redis_store {
    struct store base;           /* base.state points back here */
    char instance[64];           /* this instance's name: in the ledger and kept answers */
    long idem_ttl_ms;            /* how long an idempotency key's first answer is kept */
    int replicas;                /* a write counts once this many replicas have it (WAIT) */
    long replicas_wait_ms;       /* how long WAIT may take */
    int cluster;                 /* a Redis Cluster: sharded channels (SPUBLISH, SSUBSCRIBE) */
    char label[256];             /* "HOST:PORT", "sentinel master NAME", "cluster ...": logs */
    atomic_llong unreplicated;   /* sales answered outcome_unknown for want of replicas */
};

static inline struct redis_store *redis_of(struct store *s)
{
    return s->state;
}

/* --- redis_keys.c: every key of the stock, formatted there and nowhere else --- */

/* An item's keys share its hash tag {I}: one script may touch them all (one slot). */
enum rs_key {
    RS_STOCK,       /* stock:{I}     the stock, an integer string */
    RS_SOLD,        /* sold:{I}      units sold */
    RS_ORDERS,      /* orders:{I}    the ledger, a stream: an entry per sale */
    RS_WRITTEN,     /* written:{I}   the fenced write's last writer (token, batch) */
    RS_PROBE,       /* probe:{I}     --faults: who is inside the critical section */
    RS_OVERLAPS,    /* overlaps:{I}  --faults: entries while another was inside */
    RS_EVENTS       /* events:{I}    the live page's channel */
};
#define RS_KEY_MAX (ITEM_MAX + IDEM_KEY_MAX + 16)
/* kind's key of item, into buf; returns buf. */
const char *rs_key(char (*buf)[RS_KEY_MAX], enum rs_key kind, const char *item);
/* An idempotency key K's first answer, beside the item: idem:{I}:K (the item's slot). */
const char *rs_idem_key(char (*buf)[RS_KEY_MAX], const char *item, const char *key);
/* The item K was first used for: idem-item:K (a key of K's own, in another slot). */
const char *rs_idem_item_key(char (*buf)[RS_KEY_MAX], const char *key);

/* --- redis_answer.c: the sale scripts' replies, as the requests' outcomes --- */

/* The stock's reply (GET stock:{I}) into *read: SALE_OK with the stock, or why not. */
void rs_stock_of(const struct rd_reply *r, const char *item, struct store_read *read);
/* The write's reply r for b->k sales onto b's requests (NULL: none came; sent: the write
 * went out, so it may have run), then the WAIT's (waited: one was sent; wait: its reply,
 * NULL when none came); b->stock goes down by what was written. Returns how many it sold,
 * or -1 when the write failed or too few replicas have it (the outcomes say why). */
long long rs_write_answered(struct redis_store *rs, const struct rd_reply *r, int sent,
                            const struct rd_reply *wait, int waited, struct store_batch *b);
/* The atomic script's reply (and WAIT's, as above) onto the group's requests. */
void rs_atomic_answered(struct redis_store *rs, const struct rd_reply *r,
                        const struct rd_reply *wait, int waited, struct store_group *gr);
/* A round trip that failed (err: why, NULL for a write's; sent: whether any of it went
 * out) as every outcome of rqs: outcome_unknown when it was sent (it may have run), else
 * the store is down (or, err saying another fault than the connection's, an error). */
void rs_trip_failed(const struct rd_error *err, int sent, struct sale_request **rqs, int n);
/* Appends WAIT (replicas, replicas_wait_ms) to b; its index in b, or -1 without
 * --replicas (nothing added). Not added (a full batch): no reply will confirm. */
int rs_wait_add(struct redis_store *rs, struct rd_batch *b);

/* --- redis.c: the store, opened on what the configuration names --- */
struct store *redis_store_open(const struct service_config *cfg, struct error *err);

/* --- redis_sell.c, redis_atomic.c, redis_events.c: the operations --- */
int rs_grant(struct store *s, struct lock_client *lc, const char *item, long wait_ms,
             struct lock_grant *g, struct store_read *read, struct error *err);
enum store_sold rs_sell(struct store *s, struct lock_client *lc, struct store_batch *b,
                        int release, int *released);
void rs_sell_atomic(struct store *s, struct store_group **groups, int n);
void rs_publish(struct store *s, const struct store_message *msgs, int n, long long *heard);
struct store_sub *rs_subscribe(struct store *s, const char *item, struct error *err);
enum store_heard rs_sub_read(struct store_sub *sub, long idle_ms, char **text);
void rs_sub_shutdown(struct store_sub *sub);
void rs_sub_close(struct store_sub *sub);

#endif
