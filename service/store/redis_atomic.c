/* redis_atomic.c - The atomic sale on Redis: the whole sale of an item's waiting sales in
 * one script (service/store/scripts/sale_atomic.lua), no lock; every group's script of a
 * server in one write, all servers' sent before any is read. Its KEYS and ARGV are filled
 * by the names the script declares (build/script_args.h). */
#include "service/store/redis.h"

#include <stdio.h>
#include <string.h>

#include "lua_scripts.h"
#include "script_args.h"

enum { GROUPS_MAX = RD_BATCH_MAX };

/* The atomic script's call for the group's sales (a sale with an idempotency key goes
 * alone), appended to b. RD_OK, or RD_FAIL (too many sales, no memory). */
static int atomic_add(struct rd_batch *b, const struct redis_store *rs,
                      const struct store_group *gr, struct rd_error *err)
{
    const char *item = gr->rqs[0]->item;
    int keyed = gr->rqs[0]->idem_key != NULL, nkeys, nargs = SALE_ATOMIC_ARG_REQUESTS;
    char stock[RS_KEY_MAX], sold[RS_KEY_MAX], orders[RS_KEY_MAX], record[RS_KEY_MAX];
    char count[16], ttl[24];
    const char *argv[SALE_ATOMIC_KEYS + SALE_ATOMIC_ARGS + SALE_BATCH_MAX];
    const char **keys = argv, **args;

    if (gr->n > SALE_BATCH_MAX)
        return rd_fail(err, RD_E_USAGE, "too many sales for one script");
    snprintf(count, sizeof(count), "%d", gr->n);
    snprintf(ttl, sizeof(ttl), "%ld", keyed ? rs->idem_ttl_ms : 0L);
    keys[SALE_ATOMIC_KEY_STOCK] = rs_key(&stock, RS_STOCK, item);
    keys[SALE_ATOMIC_KEY_SOLD] = rs_key(&sold, RS_SOLD, item);
    keys[SALE_ATOMIC_KEY_ORDERS] = rs_key(&orders, RS_ORDERS, item);
    nkeys = SALE_ATOMIC_KEY_RECORD;
    if (keyed) {
        keys[SALE_ATOMIC_KEY_RECORD] = rs_idem_key(&record, item, gr->rqs[0]->idem_key);
        nkeys = SALE_ATOMIC_KEYS;
    }
    args = argv + nkeys;
    args[SALE_ATOMIC_ARG_INSTANCE] = rs->instance;
    args[SALE_ATOMIC_ARG_COUNT] = count;
    args[SALE_ATOMIC_ARG_IDEM_TTL] = ttl;
    for (int i = 0; i < gr->n; i++)
        args[nargs++] = gr->rqs[i]->request_id ? gr->rqs[i]->request_id : "";
    return rd_batch_add_eval(b, &lua_sale_atomic, nkeys, nargs, argv, err);
}

/* One server's share of a round: its groups' scripts in one batch, and with --replicas
 * one WAIT after them (it covers the share's writes). */
struct share {
    int server;                   /* the items' server (rd_key_server; -1: none now) */
    struct store_group *groups[GROUPS_MAX];
    int ng, wait_at;
    struct rd_batch b, confirm;
    struct rd_error err;
};

/* Appends one script per group of sh; RD_OK, or RD_FAIL with sh->err (nothing is sent). */
static int share_build(struct share *sh, const struct redis_store *rs)
{
    int st = RD_OK;

    memset(&sh->b, 0, sizeof(sh->b));
    memset(&sh->confirm, 0, sizeof(sh->confirm));
    for (int g = 0; g < sh->ng && st == RD_OK; g++)
        st = atomic_add(&sh->b, rs, sh->groups[g], &sh->err);
    sh->wait_at = st == RD_OK ? rs_wait_add((struct redis_store *)rs, &sh->confirm) : -1;
    return st;
}

/* Every sale's outcome from its share's replies. Groups with no reply after an error say
 * outcome_unknown when their scripts were sent (they may have run), redis_unavailable
 * when nothing was. A sale its share's WAIT does not confirm answers outcome_unknown. */
static void share_answer(struct share *sh, struct redis_store *rs)
{
    for (int g = 0; g < sh->ng; g++) {
        struct store_group *gr = sh->groups[g];
        if (g < sh->b.n && sh->b.reply[g])
            rs_atomic_answered(rs, sh->b.reply[g],
                               sh->wait_at >= 0 ? sh->confirm.reply[sh->wait_at] : NULL,
                               sh->wait_at >= 0, gr);
        else
            rs_trip_failed(&sh->err, sh->b.sent, gr->rqs, gr->n);
    }
    rd_batch_reset(&sh->confirm);
    rd_batch_reset(&sh->b);
}

/* The groups into shares by their items' server; how many shares. */
static int shares_of(struct store *s, struct store_group **groups, int n, struct share *shares)
{
    char key[RS_KEY_MAX];
    struct rd_error ignored;   /* no server: its share's trip says why */
    int ns = 0;

    for (int g = 0, sh; g < n; g++) {
        int server = rd_key_server(s->redis, rs_key(&key, RS_STOCK, groups[g]->rqs[0]->item),
                                   &ignored);
        for (sh = 0; sh < ns && shares[sh].server != server; sh++)
            ;
        if (sh == ns) {
            shares[ns].server = server;
            shares[ns].err = (struct rd_error){ 0 };
            shares[ns++].ng = 0;
        }
        shares[sh].groups[shares[sh].ng++] = groups[g];
    }
    return ns;
}

void rs_sell_atomic(struct store *s, struct store_group **groups, int n)
{
    static struct share shares[GROUPS_MAX];   /* the atomic engine's thread's alone */
    struct redis_store *rs = redis_of(s);
    struct rd_trip trips[GROUPS_MAX];
    int ns, nt = 0, of[GROUPS_MAX];          /* of[t]: the share of trips[t] */

    for (int done = 0; done < n; done += GROUPS_MAX) {
        int part = n - done < GROUPS_MAX ? n - done : GROUPS_MAX;
        ns = shares_of(s, groups + done, part, shares);
        nt = 0;
        for (int sh = 0; sh < ns; sh++)
            if (share_build(&shares[sh], rs) == RD_OK) {
                trips[nt] = (struct rd_trip){ .main = &shares[sh].b,
                                              .after = shares[sh].confirm.n ? &shares[sh].confirm : NULL };
                of[nt++] = sh;
            }
        rd_round_trips(s->redis, trips, nt);
        for (int t = 0; t < nt; t++)
            if (trips[t].status != RD_OK)
                shares[of[t]].err = trips[t].err;
        for (int sh = 0; sh < ns; sh++)
            share_answer(&shares[sh], rs);
    }
}
