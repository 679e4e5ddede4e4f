/* zk_sell.c - A sale on ZooKeeper, in one zoo_multi: under v11's grant it checks that the
 * holder's lock node still exists (a check at version -1 tests existence only), sets the
 * stock and sold at the versions it read, and creates each sale's ledger entry; all of it
 * commits or none does. A holder whose node (whose session) is gone cannot write: its
 * sales answer lease_lost, the guard named. A version that moved (ZBADVERSION) means read
 * again and retry. The last batch of a grant gives the lock back in the same multi: it
 * deletes the holder's node instead of checking it (a delete of a node that is gone fails
 * as the check does), one write less on the lock's path. The atomic sale is the same
 * multi without the check: ZooKeeper's compare-and-set, no lock, retried.
 *
 * A multi whose answer was lost is settled, not guessed: the first entry's path is created
 * as a tombstone. ZNODEEXISTS means the multi committed (its sales are sold); a tombstone
 * made means it never will (its create would now fail, and a multi fails whole): nothing
 * was sold. outcome_unknown only when the ensemble does not answer the tombstone either. */
#include "service/store/zk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "service/parse.h"

enum { TRIES = 16, ANSWER_MAX = 160, NUMBER_MAX = 24 };

/* What a grant read, kept for its batches on the thread that serves them: the stock and
 * sold with their versions (a grant's batches follow each other on one thread). */
static _Thread_local struct read_state {
    char item[ITEM_MAX + 1];
    long long token;
    long long stock, sold;
    int stock_v, sold_v;
} seen;

/* Reads item's stock and sold with their versions into r, both in one round trip; SALE_OK
 * or why not (msg). */
static enum sale_result read_both(struct zk_session *s, const char *item, struct read_state *r,
                                  char *msg, size_t size)
{
    char stock_path[ZK_PATH_MAX], sold_path[ZK_PATH_MAX];
    char stock[NUMBER_MAX + 1], sold[NUMBER_MAX + 1];
    struct zk_read reads[2] = {
        { .path = zs_path(&stock_path, ZS_STOCK, item), .buf = stock, .size = sizeof(stock) },
        { .path = zs_path(&sold_path, ZS_SOLD, item), .buf = sold, .size = sizeof(sold) },
    };
    struct zk_error err;

    if (zk_get_many(s, reads, 2, &err) != ZK_OK)
        return SALE_STORE_DOWN;
    if (reads[0].rc != 0) {
        snprintf(msg, size, "no stock node %.100s; set it with deploy/stock", stock_path);
        return SALE_UNKNOWN_ITEM;
    }
    if (parse_integer(stock, &r->stock) != 0) {
        snprintf(msg, size, "%.100s does not hold an integer", stock_path);
        return SALE_BAD_STOCK;
    }
    r->stock_v = reads[0].version;
    r->sold = 0;
    r->sold_v = -1;   /* no sold node yet: the multi creates it */
    if (reads[1].rc == 0 && parse_integer(sold, &r->sold) == 0)
        r->sold_v = reads[1].version;
    snprintf(r->item, sizeof(r->item), "%s", item);
    return SALE_OK;
}

/* The store's grant: v11's lock on item, then the stock and sold read for its batches
 * (kept in the thread's read state); a read that fails leaves the grant held, its result
 * in read. */
int zs_grant(struct store *s, struct lock_client *lc, const char *item, long wait_ms,
             struct lock_grant *g, struct store_read *read, struct error *err)
{
    struct zk_session zs;
    struct zk_error why;
    int st;

    read->asked = 1;
    if ((st = lock_acquire(lc, item, wait_ms, g, NULL, err)) != LOCK_OK)
        return st;
    if (zk_enter(s->zk, &zs, &why) != ZK_OK) {
        read->result = SALE_STORE_DOWN;
        return LOCK_OK;
    }
    read->result = read_both(&zs, item, &seen, read->msg, sizeof(read->msg));
    zk_leave(&zs);
    read->stock = seen.stock;
    seen.token = g->token;
    return LOCK_OK;
}

/* One multi's operations and their texts. */
struct multi {
    struct zk_op ops[ZK_MULTI_MAX];
    int n;
    int first_entry;              /* index of the first create (-1: none) */
    int tomb_v;                   /* a keyed entry's tombstone to replace: its version (-1: none) */
    char stock[NUMBER_MAX], sold[NUMBER_MAX];
    char paths[3][ZK_PATH_MAX];
    char entries[SALE_BATCH_MAX][ZK_PATH_MAX];
    char answers[SALE_BATCH_MAX][ANSWER_MAX];
};

/* Appends one operation. */
static void op(struct multi *m, enum zk_op_kind kind, const char *path, const char *data, int version)
{
    m->ops[m->n++] = (struct zk_op){ .kind = kind, .path = path, .data = data,
                                     .len = data ? (int)strlen(data) : 0, .version = version };
}

/* The multi of k of the n sales rqs, from r (stock, sold, versions), under guard (NULL:
 * none, the atomic sale): check (or, with release, delete) the guard, stock, sold, an
 * entry per sale sold (a keyed sale's even when it is sold out: its answer is kept). */
static void multi_build(struct multi *m, struct zk_store *zs, const struct read_state *r,
                        const char *guard, int release, long long k, long long token,
                        struct sale_request **rqs, int n)
{
    char bucket[ZK_PATH_MAX];
    int keyed = rqs[0]->idem_key != NULL;

    m->n = 0;
    m->first_entry = -1;
    if (guard)
        op(m, release ? ZK_OP_DELETE : ZK_OP_CHECK, guard, NULL, -1);
    snprintf(m->stock, sizeof(m->stock), "%lld", r->stock - k);
    snprintf(m->sold, sizeof(m->sold), "%lld", r->sold + k);
    op(m, ZK_OP_SET, zs_path(&m->paths[0], ZS_STOCK, r->item), m->stock, r->stock_v);
    if (r->sold_v >= 0)
        op(m, ZK_OP_SET, zs_path(&m->paths[1], ZS_SOLD, r->item), m->sold, r->sold_v);
    else
        op(m, ZK_OP_CREATE, zs_path(&m->paths[1], ZS_SOLD, r->item), m->sold, -1);
    for (int i = 0; i < n && (i < k || (keyed && i == 0)); i++) {
        snprintf(m->answers[i], ANSWER_MAX, "%d %lld %lld %s %s", i < k ? 200 : 409,
                 i < k ? r->stock - 1 - i : 0, token, zs->instance,
                 rqs[i]->request_id ? rqs[i]->request_id : "-");
        zs_entry(&m->entries[i], &bucket, r->item, rqs[i]->idem_key, rqs[i]->request_id ? rqs[i]->request_id : "",
                 zs->instance_id, atomic_fetch_add(&zs->entries, 1));
        /* A keyed sale settled as never written left a tombstone at its entry: replaced in
         * the same multi, so the path is never empty (the lost multi can still not land). */
        if (i == 0 && keyed && m->tomb_v >= 0)
            op(m, ZK_OP_DELETE, m->entries[0], NULL, m->tomb_v);
        if (m->first_entry < 0)
            m->first_entry = m->n;
        op(m, ZK_OP_CREATE, m->entries[i], m->answers[i], -1);
    }
}

/* What is at a ledger entry's path: 1 a tombstone (*version set), 0 a sale's record (text,
 * size bytes), -1 nothing or no answer. */
static int entry_read(struct zk_session *s, const char *path, char *text, int size, int *version)
{
    struct zk_error err;
    int len;

    if (zk_get(s, path, text, size, &len, version, &err) != ZK_OK)
        return -1;
    return strcmp(text, "tombstone") == 0;
}

/* A multi whose answer was lost, settled by the tombstone at its first entry's path:
 * 1 when it committed, 0 when it never will, 2 when another sale's record is there (the
 * same key, sold elsewhere: its first answer stands), -1 when nobody can say now. A
 * session is
 * waited for up to a session timeout and a second: the answer is often lost with the
 * session itself (a process paused past it), and a new one answers as soon as the client
 * hears that the old one expired. */
/* What the entry at path, found there, says of a multi whose first entry's record is ours:
 * 1 ours (it committed), 0 a tombstone (ours from an earlier try, or another's settling:
 * it never committed), 2 another sale's record, -1 unread. */
static int settled_by(struct zk_session *s, const char *path, const char *ours)
{
    char text[ANSWER_MAX];
    int version, st = entry_read(s, path, text, sizeof(text), &version);

    return st < 0 ? -1 : st == 1 ? 0 : strcmp(text, ours) == 0 ? 1 : 2;
}

static int settle(struct zk_store *zs, const struct multi *m)
{
    long long until = clock_now_ms() + zk_session_ms(zs->base.zk) + 1000;
    const char *entry = m->first_entry >= 0 ? m->ops[m->first_entry].path : NULL;
    char bucket[ZK_PATH_MAX];
    struct zk_session s;
    struct zk_error err;
    int committed = -1, hopeless = 0;

    if (entry == NULL)
        return -1;
    while (committed < 0 && !hopeless && clock_now_ms() < until) {
        if (zk_enter(zs->base.zk, &s, &err) != ZK_OK) {
            clock_sleep_ms(50);
            continue;
        }
        if (zk_create(&s, entry, "tombstone", 9, ZK_PERSISTENT, NULL, &err) == ZK_OK)
            committed = 0;
        else if (err.fault == ZK_E_EXISTS)   /* ours, a tombstone, or another's record */
            committed = settled_by(&s, entry, m->answers[0]);
        else if (err.fault == ZK_E_NONODE) {   /* its bucket not made yet: make it, again */
            snprintf(bucket, sizeof(bucket), "%.*s", (int)(strrchr(entry, '/') - entry), entry);
            hopeless = zs_make_path(&s, bucket, &err) != ZK_OK && err.fault != ZK_E_LOST &&
                       err.fault != ZK_E_EXPIRED;
        } else if (err.fault == ZK_E_LOST || err.fault == ZK_E_EXPIRED)
            clock_sleep_ms(50);   /* the old session, still taken for live: again */
        else
            hopeless = 1;
        zk_leave(&s);
    }
    atomic_fetch_add(committed == 1 ? &zs->settled_sold : committed < 0 ? &zs->unsettled
                                                                     : &zs->settled_unsold, 1);
    return committed;
}

/* Makes the buckets of m's entries (a ledger's first sales, or a bucket never used). */
static void buckets_make(struct zk_session *s, const struct multi *m)
{
    char bucket[ZK_PATH_MAX];
    struct zk_error err;

    for (int i = 0; i < m->n; i++)
        if (m->ops[i].kind == ZK_OP_CREATE) {
            const char *slash = strrchr(m->ops[i].path, '/');
            snprintf(bucket, sizeof(bucket), "%.*s", (int)(slash - m->ops[i].path), m->ops[i].path);
            zs_make_path(s, bucket, &err);
        }
}

/* What became of a multi. */
enum ran {
    RAN_COMMITTED,    /* written */
    RAN_GUARD,        /* the lock's node is gone: nothing written, the lease lost */
    RAN_VERSION,      /* the stock or sold moved since it was read: read again */
    RAN_REPLAY,       /* a keyed sale's entry exists: its first answer stands */
    RAN_NOT_SOLD,     /* a lost answer settled: nothing was written */
    RAN_UNKNOWN,      /* the answer lost, and nobody can say */
    RAN_DOWN,         /* no session: nothing was sent */
    RAN_ERROR         /* anything else (err says) */
};

/* What a multi's refusal means: which operation refused, and how. */
static enum ran refused(const struct multi *m, int failed, const struct zk_error *err, int guarded)
{
    if (m->ops[failed].kind == ZK_OP_CHECK || (guarded && failed == 0))
        return RAN_GUARD;   /* the guard's check, or its delete: the node is gone */
    if (m->ops[failed].kind == ZK_OP_DELETE)
        return RAN_VERSION;   /* the tombstone it replaces moved: look again */
    if (err->fault == ZK_E_VERSION || (m->ops[failed].kind == ZK_OP_CREATE && failed == (guarded ? 2 : 1)))
        return RAN_VERSION;   /* a version moved, or sold appeared since it was read */
    if (err->fault == ZK_E_EXISTS && m->first_entry >= 0 && m->ops[failed].path == m->entries[0])
        return RAN_REPLAY;
    return RAN_ERROR;
}

/* Runs m in a session of zs (buckets made when one is missing, once). */
static enum ran multi_run(struct zk_store *zs, struct multi *m, int guarded, struct zk_error *err)
{
    struct zk_session s;
    int failed, st;

    if (zk_enter(zs->base.zk, &s, err) != ZK_OK)
        return RAN_DOWN;
    st = zk_multi(&s, m->ops, m->n, &failed, err);
    if (st != ZK_OK && failed >= 0 && m->ops[failed].kind == ZK_OP_CREATE && err->fault == ZK_E_NONODE) {
        buckets_make(&s, m);
        st = zk_multi(&s, m->ops, m->n, &failed, err);
    }
    zk_leave(&s);
    if (st == ZK_OK)
        return RAN_COMMITTED;
    if (failed >= 0)
        return refused(m, failed, err, guarded);
    if (err->fault == ZK_E_EXPIRED)   /* the session's answer, not an operation's */
        return guarded ? RAN_GUARD : RAN_DOWN;
    if (err->fault != ZK_E_LOST)
        return RAN_ERROR;
    st = settle(zs, m);
    return st == 1 ? RAN_COMMITTED : st == 0 ? RAN_NOT_SOLD : st == 2 ? RAN_REPLAY : RAN_UNKNOWN;
}

/* The first answer kept at a keyed sale's entry, as rq's outcome (replayed). */
static void replay(struct zk_store *zs, const char *path, struct sale_request *rq)
{
    struct zk_session s;
    struct zk_error err;
    char text[ANSWER_MAX];
    int status = 0, len;

    rq->out.result = SALE_ERROR;
    snprintf(rq->out.message, sizeof(rq->out.message), "unreadable first answer");
    if (zk_enter(zs->base.zk, &s, &err) != ZK_OK) {
        rq->out.result = SALE_STORE_DOWN;
        return;
    }
    if (zk_get(&s, path, text, sizeof(text), &len, NULL, &err) == ZK_OK &&
        parse_record(text, &status, &rq->out.remaining, &rq->out.token, &rq->out.instance) == 0) {
        rq->out.result = status == 200 ? SALE_OK : SALE_SOLD_OUT;
        rq->out.message[0] = '\0';
        rq->out.replayed = 1;
    }
    zk_leave(&s);
}

/* Sold k' < k after a read that found less stock: the sales beyond it are sold out. */
static void fewer(struct sale_request **rqs, int n, long long k, long long stock)
{
    for (int i = 0; i < n; i++) {
        rqs[i]->out.result = i < k ? SALE_OK : SALE_SOLD_OUT;
        rqs[i]->out.remaining = i < k ? stock - 1 - i : 0;
    }
}

/* Reads the stock again into r (a version moved, or the thread's read is another
 * grant's); 0, or -1 with the sales' outcomes saying why. */
static int read_again(struct zk_store *zs, struct read_state *r, const char *item,
                      struct sale_request **rqs, int n)
{
    struct zk_session s;
    struct zk_error err;
    char msg[160] = "";
    enum sale_result res = SALE_STORE_DOWN;

    if (zk_enter(zs->base.zk, &s, &err) == ZK_OK) {
        res = read_both(&s, item, r, msg, sizeof(msg));
        zk_leave(&s);
    }
    if (res == SALE_OK)
        return 0;
    sale_set_all(rqs, n, res, msg[0] ? msg : NULL);
    return -1;
}

/* What a multi that did not commit means for the sales; the answer of the store_sold. */
static int ran_answer(struct zk_store *zs, enum ran ran, const struct multi *m, const char *guard,
                      const struct zk_error *err, struct sale_request **rqs, int n)
{
    char msg[192];

    switch (ran) {
    case RAN_GUARD:
        snprintf(msg, sizeof(msg), "ZooKeeper refused the write: the lock node %.90s is gone "
                 "(its session expired); nothing was written", guard ? guard : "?");
        sale_set_all(rqs, n, SALE_LEASE_LOST, msg);
        return STORE_FAILED;
    case RAN_REPLAY:
        replay(zs, m->entries[0], rqs[0]);
        return STORE_KEPT;
    case RAN_NOT_SOLD:
        sale_set_all(rqs, n, SALE_STORE_DOWN, "the write's answer was lost; settled: it was not "
                     "written, nothing was sold");
        return STORE_FAILED;
    case RAN_UNKNOWN:
        sale_set_all(rqs, n, SALE_OUTCOME_UNKNOWN, NULL);
        return STORE_UNSURE;
    case RAN_DOWN:
        sale_set_all(rqs, n, SALE_STORE_DOWN, NULL);
        return STORE_FAILED;
    default:
        snprintf(msg, sizeof(msg), "the sale's multi failed: %.120s", err->msg);
        sale_set_all(rqs, n, SALE_ERROR, msg);
        return STORE_FAILED;
    }
}

/* 1 with *version set when a tombstone is at path (a keyed sale settled as never
 * written), else 0. */
static int tombstone_at(struct zk_store *zs, const char *path, int *version)
{
    struct zk_session s;
    struct zk_error err;
    char text[ANSWER_MAX];
    int st = 0;

    if (zk_enter(zs->base.zk, &s, &err) == ZK_OK) {
        st = entry_read(&s, path, text, sizeof(text), version) == 1;
        zk_leave(&s);
    }
    return st;
}

/* Runs b's multi under guard, again while a version moved (at most TRIES times), reading
 * again before a retry, and before the first when the thread's read is another grant's:
 * what the stock no longer covers is sold out. How the last run went; *early >= 0 when
 * it ended before a run could answer (STORE_FAILED: a read failed; STORE_KEPT: sold out
 * meanwhile, nothing to write). */
static enum ran write_tries(struct zk_store *zs, struct store_batch *b, struct multi *m,
                            const char *guard, int release, struct zk_error *err, int *early)
{
    int fresh = seen.token == b->g->token && strcmp(seen.item, b->g->item) == 0;
    enum ran ran = RAN_VERSION;

    *early = -1;
    m->tomb_v = -1;
    for (int tries = 0; tries < TRIES && ran == RAN_VERSION; tries++) {
        if (tries > 0 || !fresh) {   /* a version moved, or the thread's read is another grant's */
            if (tries > 0)
                atomic_fetch_add(&zs->retries, 1);
            if (read_again(zs, &seen, b->g->item, b->rqs, b->n) != 0)
                return *early = STORE_FAILED, ran;
            if (seen.stock < b->k)
                b->k = seen.stock > 0 ? seen.stock : 0, fewer(b->rqs, b->n, b->k, seen.stock);
            if (b->k == 0 && !b->rqs[0]->idem_key)
                return *early = STORE_KEPT, ran;   /* sold out meanwhile: nothing to write */
        }
        multi_build(m, zs, &seen, guard, release, b->k, b->g->token, b->rqs, b->n);
        ran = multi_run(zs, m, guard != NULL, err);
        if (ran == RAN_REPLAY && tombstone_at(zs, m->entries[0], &m->tomb_v))
            ran = RAN_VERSION;   /* settled as never written: sold now, the tombstone replaced */
    }
    return ran;
}

/* Writes b: the multi under its grant's guard (write_tries). STORE_KEPT when written;
 * *gone 1 when the multi also deleted the guard (release asked, and the lock lets the
 * write give g back), 2 when it may have (its answer lost, unsettled). */
static int write_batch(struct zk_store *zs, struct lock_client *lc, struct store_batch *b,
                       struct multi *m, int release, int *gone)
{
    const char *guard = release ? lock_grant_guard_release(lc, b->g) : NULL;
    struct zk_error err = { 0 };
    enum ran ran;
    int early;

    release = guard != NULL;
    guard = guard ? guard : lock_grant_guard(lc, b->g);
    *gone = 0;
    ran = write_tries(zs, b, m, guard, release, &err, &early);
    if (early >= 0)
        return early;
    if (ran == RAN_NOT_SOLD && guard != NULL && lock_grant_is_lost(lc, b->g)) {
        /* The answer was lost with the session that held the lock: nothing was written,
         * and the lease is over. */
        sale_set_all(b->rqs, b->n, SALE_LEASE_LOST, "the write's answer was lost, and the lock's "
                     "session ended (its node with it); settled: nothing was written");
        return STORE_FAILED;
    }
    if (ran == RAN_UNKNOWN && release)
        *gone = 2;
    if (ran != RAN_COMMITTED)
        return ran_answer(zs, ran, m, guard, &err, b->rqs, b->n);
    seen.stock -= b->k, seen.sold += b->k;
    seen.stock_v++, seen.sold_v++;   /* a created sold node is at version 0 */
    b->stock = seen.stock;
    *gone = release;
    return STORE_KEPT;
}

/* Sells batch b under its grant (the store's sell): the multi, and with release the lock
 * given back, in the multi when it can be (its last batch) or after it. */
enum store_sold zs_sell(struct store *s, struct lock_client *lc, struct store_batch *b,
                        int release, int *released)
{
    struct zk_store *zs = zk_of(s);
    struct multi *m = b->write ? malloc(sizeof(*m)) : NULL;
    int wrote = b->write ? STORE_FAILED : STORE_KEPT, gone = 0;
    struct error err = { 0 };

    if (b->write && m == NULL)
        sale_set_all(b->rqs, b->n, SALE_ERROR, "out of memory");
    else if (b->write)   /* (a teaching pause sits in the release: that one goes alone) */
        wrote = write_batch(zs, lc, b, m, release && b->pause == NULL, &gone);
    free(m);
    if (!release)
        return (enum store_sold)wrote;
    *released = gone ? lock_release_done(lc, b->g, gone == 1)
                     : lock_release(lc, b->g, NULL, b->pause, &err);
    if (*released == LOCK_EXPIRED || *released == LOCK_STOLEN)
        for (int i = 0; i < b->n; i++)
            b->rqs[i]->out.lease_lost = 1;
    return STORE_RELEASED;
}

/* One group sold whole without a lock: read, decide, the multi at the versions read;
 * again while a version moved (another instance sold meanwhile). */
static void sell_group(struct zk_store *zs, struct multi *m, struct store_group *gr)
{
    struct read_state r;
    struct zk_error err = { 0 };
    enum ran ran = RAN_VERSION;
    long long k = 0;

    m->tomb_v = -1;

    for (int tries = 0; tries < TRIES * 4 && ran == RAN_VERSION; tries++) {
        if (tries > 0)
            atomic_fetch_add(&zs->retries, 1);
        if (read_again(zs, &r, gr->rqs[0]->item, gr->rqs, gr->n) != 0)
            return;
        k = r.stock <= 0 ? 0 : r.stock < gr->n ? r.stock : gr->n;
        fewer(gr->rqs, gr->n, k, r.stock);
        if (k == 0 && !gr->rqs[0]->idem_key)
            return;   /* sold out: nothing to write */
        multi_build(m, zs, &r, NULL, 0, k, 0, gr->rqs, gr->n);
        ran = multi_run(zs, m, 0, &err);
        if (ran == RAN_REPLAY && tombstone_at(zs, m->entries[0], &m->tomb_v))
            ran = RAN_VERSION;   /* settled as never written: sold now, the tombstone replaced */
    }
    if (ran != RAN_COMMITTED)
        ran_answer(zs, ran, m, NULL, &err, gr->rqs, gr->n);
}

void zs_sell_atomic(struct store *s, struct store_group **groups, int n)
{
    struct multi *m = malloc(sizeof(*m));

    for (int g = 0; g < n; g++) {
        if (m)
            sell_group(zk_of(s), m, groups[g]);
        else
            sale_set_all(groups[g]->rqs, groups[g]->n, SALE_ERROR, "out of memory");
    }
    free(m);
}
