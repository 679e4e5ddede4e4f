/* zk.h - The ZooKeeper store's parts (service/store/zk*.c): its state and its paths. Only
 * those files include it.
 *
 * The paths are a contract (tests and other clients read them):
 *   /inventory/I/stock    the stock, decimal text and nothing else
 *   /inventory/I/sold     units sold, decimal text, set in the same multi as the stock
 *   /inventory/I/lock     the lock's parent (v11's nodes, as Apache Curator names them)
 *   /inventory/I/orders   the ledger: buckets b00..bff, in each an entry per sale, named by
 *                         the sale's idempotency key ("k" and its hex) or its request id
 *                         ("r", its hex, "-" and a number of this instance's); its data
 *                         the sale's answer ("STATUS REMAINING TOKEN INSTANCE REQUEST"),
 *                         or "tombstone" (a lost sale settled: it never happened)
 *   /inventory-keys/K     an idempotency key (hex) bound to the item it was first used for
 */
#ifndef STORE_ZK_H
#define STORE_ZK_H

#include <stdatomic.h>

#include "service/store/store.h"
#include "zk/zk.h"

struct zk_store {
    struct store base;           /* base.state points back here */
    char instance[64];           /* this instance's name: in the ledger's answers */
    char instance_id[16];        /* the first characters of its id: in the entries' names */
    atomic_llong entries;        /* entries named by this instance (their number) */
    atomic_llong settled_sold, settled_unsold, unsettled;   /* lost answers, settled */
    atomic_llong retries;        /* multis run again after a version moved */
};

static inline struct zk_store *zk_of(struct store *s)
{
    return s->state;
}

/* --- zk_paths.c: every path of the stock, formatted there and nowhere else --- */
enum zs_path { ZS_ITEM, ZS_STOCK, ZS_SOLD, ZS_ORDERS };
/* kind's path of item into buf; returns buf. */
const char *zs_path(char (*buf)[ZK_PATH_MAX], enum zs_path kind, const char *item);
/* The ledger entry's path of a sale (key: its idempotency key, else id: its request id
 * and n: a number of this instance's), and its bucket's. */
const char *zs_entry(char (*buf)[ZK_PATH_MAX], char (*bucket)[ZK_PATH_MAX], const char *item,
                     const char *key, const char *id, const char *instance, long long n);
/* An idempotency key's binding: /inventory-keys/K (hex). */
const char *zs_key(char (*buf)[ZK_PATH_MAX], const char *key);
/* The ledger bucket b (0..255) of item. */
const char *zs_bucket(char (*buf)[ZK_PATH_MAX], const char *item, int b);
enum { ZS_BUCKETS = 256 };
/* The prefix of the entries' names of request id (to find them in its bucket), and the
 * bucket's number. */
int zs_id_prefix(char (*buf)[ZK_PATH_MAX], const char *id);
/* Makes path and its missing parents (persistent); ZK_OK when it exists after. */
int zs_make_path(struct zk_session *s, const char *path, struct zk_error *err);

/* --- zk_sell.c: a locked sale and the atomic one --- */
int zs_grant(struct store *s, struct lock_client *lc, const char *item, long wait_ms,
             struct lock_grant *g, struct store_read *read, struct error *err);
enum store_sold zs_sell(struct store *s, struct lock_client *lc, struct store_batch *b,
                        int release, int *released);
void zs_sell_atomic(struct store *s, struct store_group **groups, int n);

/* --- zk.c --- */
struct store *zk_store_open(const struct service_config *cfg, struct error *err);

#endif
