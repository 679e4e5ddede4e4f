/* v11_zookeeper.c - v11: ZooKeeper's lock recipe: an ephemeral sequential node, the lowest
 * holds, each waiter watches its predecessor (first come, first served); the session's end
 * ends the lease. No flaw by design: the stock lives in ZooKeeper too, its write one multi
 * that checks the lock node.
 *
 * Nodes are named as Apache Curator's InterProcessMutex names them, under the item's lock
 * path /inventory/I/lock (a container node: the server deletes it when it empties, and a
 * contender makes it again): "_c_<uuid>-lock-<sequence>", the uuid a new one for each
 * node. A contender is any child whose name ends in "-lock-" or "__lock__" (kazoo's) and a
 * sequence, sorted by that number (never by name), so that Curator's and kazoo's clients
 * and ours exclude each other on one path.
 *
 * One session serves the whole instance, so a node is never freed by time: every node the
 * instance made is tracked until a delete answers that it is gone (ZOK, ZNONODE), and a
 * thread retries the deletes that could not be answered (a cut, a lost answer), so that a
 * waiter that gave up never leaves a node that blocks the item for as long as the
 * instance lives. A create whose answer was lost is settled by finding its uuid among the
 * children once the session answers again; one that cannot be settled in time is doomed by
 * its uuid: the retrier looks for it (and deletes it) until a look has not found it for
 * LATE_MS, a create that reached a server just before the cut being applied late.
 * Reentrant for one owner, as v7 is: a nested grant counts up on the node it holds. */
#include "lock/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

enum { UUID_LEN = 36, RETRY_MS = 200, LATE_MS = 2000 };

/* A node this instance holds (by owner and item), or made and must still see gone. */
struct node {
    char item[LOCK_ITEM_MAX + 1];
    char owner[LOCK_OWNER_MAX];
    char path[ZK_PATH_MAX];
    long long session;            /* the session it lives in */
    long long seq;                /* its sequence number: the grant's token */
    int holds;                    /* grants on it not yet released (held list only) */
    char uuid[UUID_LEN + 1];      /* doomed by uuid (path: the lock path): not yet found */
    long long since_ms;           /* doomed by uuid: since when looks miss it (0: none yet) */
    struct node *next;
};

/* The version's state: the held nodes and the nodes to delete, under mu; the thread that
 * retries the deletes. */
struct v11 {
    struct zk_client *zk;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct node *held, *doomed;
    int stopping;
    pthread_t thread;
};

/* "/inventory/I/lock" into buf. */
static void lock_path(char (*buf)[ZK_PATH_MAX], const char *item)
{
    snprintf(*buf, sizeof(*buf), "/inventory/%s/lock", item);
}

/* parent "/" name into buf; names are short (a uuid and a sequence), paths bounded. */
static void child_path(char (*buf)[ZK_PATH_MAX], const char *parent, const char *name)
{
    snprintf(*buf, sizeof(*buf), "%.*s/%.*s", ZK_PATH_MAX / 2, parent, ZK_PATH_MAX / 2 - 2, name);
}

/* The sequence number of a contender's name ("...-lock-0000000042", "...__lock__0000000042"),
 * or -1 for a child that is no contender. */
static long long contender_seq(const char *name)
{
    size_t n = strlen(name);
    const char *digits = name + (n >= 10 ? n - 10 : 0);
    char *end;
    long long seq;

    if (n < 10 + 6 || (strncmp(digits - 6, "-lock-", 6) != 0 &&
                       (n < 10 + 8 || strncmp(digits - 8, "__lock__", 8) != 0)))
        return -1;
    seq = strtoll(digits, &end, 10);
    return *end == '\0' && seq >= 0 ? seq : -1;
}

/* A new uuid's text into buf (Curator's "_c_" protection). */
static void uuid_new(char (*buf)[UUID_LEN + 1])
{
    unsigned char b[16] = { 0 };

    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (unsigned char)rand();
    b[6] = (b[6] & 0x0f) | 0x40, b[8] = (b[8] & 0x3f) | 0x80;
    snprintf(*buf, sizeof(*buf), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* --- the nodes to delete, retried until they are gone --- */

/* Keeps path (of session) to be deleted; the retrier deletes it. */
static void doom(struct v11 *v, const char *path, long long session)
{
    struct node *d = calloc(1, sizeof(*d));

    if (d == NULL)
        return;   /* out of memory: the node goes with its session at the latest */
    snprintf(d->path, sizeof(d->path), "%s", path);
    d->session = session;
    pthread_mutex_lock(&v->mu);
    d->next = v->doomed;
    v->doomed = d;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
}

/* Keeps the node of uuid under the lock path parent (of session), whose create's answer
 * was lost, to be found and deleted by the retrier. */
static void doom_uuid(struct v11 *v, const char *parent, const char *uuid, long long session)
{
    struct node *d = calloc(1, sizeof(*d));

    if (d == NULL)
        return;
    snprintf(d->path, sizeof(d->path), "%s", parent);
    snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
    d->session = session;
    d->since_ms = 0;   /* set by the first look that misses it */
    pthread_mutex_lock(&v->mu);
    d->next = v->doomed;
    v->doomed = d;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
}

static int node_find(struct v11 *v, struct zk_session *s, const char *parent, const char *uuid,
                     struct node *node);

/* One doomed entry, in session s: 1 when it is done with (gone, or found and deleted, or
 * by uuid not found for LATE_MS), 0 to try again. */
static int delete_one(struct v11 *v, struct zk_session *s, struct node *d)
{
    struct zk_error err;
    struct node found = { .path = "" };
    int st;

    if (d->uuid[0] == '\0')
        return zk_delete(s, d->path, -1, &err) == ZK_OK || err.fault == ZK_E_NONODE;
    if ((st = node_find(v, s, d->path, d->uuid, &found)) < 0)
        return 0;
    if (st == 0 && d->since_ms == 0)
        d->since_ms = clock_now_ms();
    if (st == 0)
        return clock_now_ms() - d->since_ms >= LATE_MS;
    if (zk_delete(s, found.path, -1, &err) != ZK_OK && err.fault != ZK_E_NONODE)
        return 0;
    return 1;
}

/* Deletes what is doomed: each is dropped once the server says it is gone, or once its
 * session is over (the server deleted it with the session). */
static void delete_doomed(struct v11 *v)
{
    struct zk_session s;
    struct zk_error err;
    struct node *list, *d, *next, *keep = NULL;

    pthread_mutex_lock(&v->mu);
    list = v->doomed;
    v->doomed = NULL;
    pthread_mutex_unlock(&v->mu);
    if (list == NULL)
        return;
    int in = zk_enter(v->zk, &s, &err) == ZK_OK;
    for (d = list; d; d = next) {
        next = d->next;
        if (in && (d->session != s.id || delete_one(v, &s, d))) {
            free(d);   /* gone, or its session (and so the node) is over */
            continue;
        }
        d->next = keep;
        keep = d;
    }
    if (in)
        zk_leave(&s);
    pthread_mutex_lock(&v->mu);
    for (d = keep; d; d = next) {
        next = d->next;
        d->next = v->doomed;
        v->doomed = d;
    }
    pthread_mutex_unlock(&v->mu);
}

/* The retrier: deletes what is doomed every RETRY_MS while anything is. */
static void *retrier_main(void *arg)
{
    struct v11 *v = arg;

    pthread_mutex_lock(&v->mu);
    while (!v->stopping) {
        if (v->doomed == NULL)
            pthread_cond_wait(&v->cv, &v->mu);
        else
            clock_cond_wait_until(&v->cv, &v->mu, clock_now_ms() + RETRY_MS);
        if (v->stopping)
            break;
        pthread_mutex_unlock(&v->mu);
        delete_doomed(v);
        pthread_mutex_lock(&v->mu);
    }
    pthread_mutex_unlock(&v->mu);
    return NULL;
}

/* --- making a node, and waiting for it to be the lowest --- */

/* Makes the item's lock path when it is missing (its parents persistent, itself a
 * container, as Curator makes it); what exists already is fine. */
static void parents_make(struct zk_session *s, const char *item)
{
    char path[ZK_PATH_MAX];
    struct zk_error err;

    zk_create(s, "/inventory", NULL, 0, ZK_PERSISTENT, NULL, &err);
    snprintf(path, sizeof(path), "/inventory/%s", item);
    zk_create(s, path, NULL, 0, ZK_PERSISTENT, NULL, &err);
    lock_path(&path, item);
    zk_create(s, path, NULL, 0, ZK_CONTAINER, NULL, &err);
}

/* Finds the node of uuid among the lock path's children (a create whose answer was lost);
 * 1 with *node set when it is there, 0 when not, -1 when the children cannot be read. A
 * second node of the same uuid (should a create have run twice) is doomed. */
static int node_find(struct v11 *v, struct zk_session *s, const char *parent, const char *uuid,
                     struct node *node)
{
    struct zk_children c;
    struct zk_error err;
    int found = 0;

    if (zk_get_children(s, parent, &c, &err) != ZK_OK)
        return err.fault == ZK_E_NONODE ? 0 : -1;
    for (int i = 0; i < c.n; i++) {
        char path[ZK_PATH_MAX];
        if (strncmp(c.names[i], "_c_", 3) != 0 || strncmp(c.names[i] + 3, uuid, UUID_LEN) != 0)
            continue;
        child_path(&path, parent, c.names[i]);
        if (found)
            doom(v, path, s->id);
        else
            snprintf(node->path, sizeof(node->path), "%s", path), found = 1;
    }
    zk_children_free(&c);
    return found;
}

/* Makes g's node (ephemeral, sequential) in session s: ZK_OK with node set, or ZK_FAIL. A
 * missing parent is made. A lost answer is settled by looking for the uuid, again until
 * the session answers (or is over, or deadline); not found, the create is made again
 * under a new uuid (the old one doomed: its create may still be applied); not settled,
 * the uuid is doomed and ZK_FAIL. */
static int node_make(struct v11 *v, struct zk_session *s, const struct lock_grant *g,
                     long long deadline, struct node *node, struct zk_error *err)
{
    char parent[ZK_PATH_MAX], prefix[ZK_PATH_MAX + 64], uuid[UUID_LEN + 1];
    char made[ZK_PATH_MAX];
    int st, found;

    lock_path(&parent, g->item);
    for (int tries = 0; tries < 3; tries++) {
        if (tries == 0 || err->fault == ZK_E_LOST)
            uuid_new(&uuid);
        snprintf(prefix, sizeof(prefix), "%s/_c_%s-lock-", parent, uuid);
        st = zk_create(s, prefix, g->owner, (int)strlen(g->owner), ZK_EPHEMERAL_SEQUENTIAL,
                       &made, err);
        if (st == ZK_OK) {
            snprintf(node->path, sizeof(node->path), "%s", made);
            break;
        }
        if (err->fault == ZK_E_NONODE) {
            parents_make(s, g->item);
            continue;
        }
        if (err->fault != ZK_E_LOST)
            return ZK_FAIL;
        while ((found = node_find(v, s, parent, uuid, node)) < 0 &&
               !zk_session_lost(v->zk, s->id) && clock_now_ms() < deadline)
            clock_sleep_ms(50);
        if (found > 0)
            break;
        doom_uuid(v, parent, uuid, s->id);   /* not found yet, or not settled */
        if (found < 0)
            return ZK_FAIL;
    }
    if (st != ZK_OK && node->path[0] == '\0')
        return ZK_FAIL;
    node->session = s->id;
    node->seq = contender_seq(strrchr(node->path, '/') + 1);
    return ZK_OK;
}

/* The contender just before seq among the lock path's children, into pred; 0 when seq is
 * the lowest (the lock is held), 1 with pred set, -1 when the children cannot be read. */
static int predecessor(struct zk_session *s, const char *parent, long long seq,
                       char (*pred)[ZK_PATH_MAX], struct zk_error *err)
{
    struct zk_children c;
    long long best = -1, q;
    int at = -1;

    if (zk_get_children(s, parent, &c, err) != ZK_OK)
        return -1;
    for (int i = 0; i < c.n; i++)
        if ((q = contender_seq(c.names[i])) >= 0 && q < seq && q > best)
            best = q, at = i;
    if (at >= 0)
        child_path(pred, parent, c.names[at]);
    zk_children_free(&c);
    return at >= 0;
}

/* Waits, in session s, until node is the lowest contender or until deadline: LOCK_OK,
 * LOCK_TIMEOUT, or LOCK_ERROR (the session lost: the node is gone with it). A connection
 * lost while the session lives (a server gone, a leader elected) is waited out: the node
 * keeps its place. */
static int wait_lowest(struct v11 *v, struct zk_session *s, const struct node *node,
                       long long deadline, struct error *err)
{
    char parent[ZK_PATH_MAX], pred[ZK_PATH_MAX];
    struct zk_error why;
    int ahead;

    snprintf(parent, sizeof(parent), "%.*s", (int)(strrchr(node->path, '/') - node->path),
             node->path);
    for (;;) {
        why = (struct zk_error){ 0 };
        if ((ahead = predecessor(s, parent, node->seq, &pred, &why)) == 0)
            return LOCK_OK;
        if (clock_now_ms() >= deadline)
            return LOCK_TIMEOUT;
        /* Only the predecessor is watched: one waiter is woken per release, in arrival
         * order; when it fires, the children are read again (it may have gone because its
         * session expired, with ours still waiting behind another). */
        if (ahead > 0 && zk_wait_gone(s, pred, deadline, &why) == ZK_OK)
            continue;
        if (ahead > 0 && why.fault == ZK_E_NONE)
            return LOCK_TIMEOUT;
        if (why.fault != ZK_E_LOST || zk_session_lost(v->zk, s->id)) {
            zk_error_map(&why, err);
            return LOCK_ERROR;
        }
        clock_sleep_ms(50);
    }
}

/* --- the version's operations --- */

/* The node owner holds on item in a live session; NULL when none. With v->mu held. */
static struct node *held_by(struct v11 *v, const char *item, const char *owner)
{
    for (struct node *h = v->held; h; h = h->next)
        if (strcmp(h->item, item) == 0 && strcmp(h->owner, owner) == 0 &&
            !zk_session_lost(v->zk, h->session))
            return h;
    return NULL;
}

/* The grant of node h (its holds counted up). With v->mu held. */
static void grant_of(struct lock_grant *g, struct node *h)
{
    h->holds++;
    g->depth = h->holds;
    g->token = h->seq + 1;   /* a token is 1 or more: the sequence counts from 0 */
    g->priv = h;
    g->valid_until_ms = 0;   /* no time lease: the session's */
}

/* Holds node for g's owner and item (a new entry of the held list). */
static int hold(struct v11 *v, struct lock_grant *g, const struct node *node, struct error *err)
{
    struct node *h = malloc(sizeof(*h));

    if (h == NULL) {
        doom(v, node->path, node->session);
        return error_set(err, FAULT_NOMEM, "out of memory");
    }
    *h = *node;
    snprintf(h->item, sizeof(h->item), "%s", g->item);
    snprintf(h->owner, sizeof(h->owner), "%s", g->owner);
    h->holds = 0;
    pthread_mutex_lock(&v->mu);
    h->next = v->held;
    v->held = h;
    grant_of(g, h);
    pthread_mutex_unlock(&v->mu);
    return LOCK_OK;
}

/* One contention in one session: a node made, waited on until it is the lowest or the
 * deadline; a node not granted is doomed (deleted by the retrier). */
static int contend(struct v11 *v, struct zk_session *s, struct lock_grant *g, long long deadline,
                   struct error *err)
{
    struct node node = { .path = "" };
    struct zk_error why = { 0 };
    int st;

    if (node_make(v, s, g, deadline, &node, &why) != ZK_OK) {
        zk_error_map(&why, err);
        return LOCK_ERROR;
    }
    if ((st = wait_lowest(v, s, &node, deadline, err)) == LOCK_OK)
        return hold(v, g, &node, err);
    doom(v, node.path, node.session);   /* a waiter that gave up leaves no node */
    return st;
}

/* One acquire, waiting up to wait_ms in ZooKeeper's queue: reentrant for an owner that
 * holds the item; a session lost while it waits joins the queue again in a new one. */
static int v11_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_trip *trip, struct error *err)
{
    struct v11 *v = lc->store_state;
    long long deadline = clock_now_ms() + wait_ms;
    struct zk_session s;
    struct zk_error why;
    struct node *h;
    int st;

    (void)trip;   /* nothing rides: the store reads after the grant */
    pthread_mutex_lock(&v->mu);
    if ((h = held_by(v, g->item, g->owner)) != NULL) {
        grant_of(g, h);   /* the holder asks again: reentrant */
        pthread_mutex_unlock(&v->mu);
        return LOCK_OK;
    }
    pthread_mutex_unlock(&v->mu);
    do {
        if (zk_enter(v->zk, &s, &why) != ZK_OK) {
            zk_error_map(&why, err);
            return LOCK_ERROR;
        }
        st = contend(v, &s, g, deadline, err);
        zk_leave(&s);
        /* The session expired while it waited: its node went with it; join the queue
         * again at its back, in a new session. */
    } while (st == LOCK_ERROR && zk_session_lost(v->zk, s.id) && clock_now_ms() < deadline);
    return st;
}

/* Gives one hold back; the last deletes the node (tracked until the delete is answered).
 * LOCK_NOT_OWNER when the node was gone already (its session expired). */
static int v11_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                       struct error *err)
{
    struct v11 *v = lc->store_state;
    struct node *h = g->priv, **p;
    struct zk_session s;
    struct zk_error why = { 0 };
    int st = LOCK_OK;

    lock_pause_here(lc, trip, &(struct error){ 0 });
    pthread_mutex_lock(&v->mu);
    if (--h->holds > 0) {
        pthread_mutex_unlock(&v->mu);
        return LOCK_OK;
    }
    for (p = &v->held; *p && *p != h; p = &(*p)->next)
        ;
    if (*p)
        *p = h->next;
    pthread_mutex_unlock(&v->mu);
    g->priv = NULL;
    if (zk_session_lost(v->zk, h->session)) {
        /* The lease is over for us; the node went with the session, unless the session
         * was only long unanswered (a guess): then it is deleted once it answers. */
        if (!zk_session_ended(v->zk, h->session))
            doom(v, h->path, h->session);
        st = LOCK_NOT_OWNER;
    } else if (zk_enter(v->zk, &s, &why) != ZK_OK) {
        doom(v, h->path, h->session);   /* deleted once a session answers */
        st = LOCK_ERROR;
    } else {
        if (s.id != h->session)
            st = LOCK_NOT_OWNER;   /* a new session: the old one, and the node, are over */
        else if (zk_delete(&s, h->path, -1, &why) != ZK_OK && why.fault == ZK_E_NONODE)
            st = LOCK_NOT_OWNER;
        else if (why.fault != ZK_E_NONE)
            doom(v, h->path, h->session), st = LOCK_ERROR;
        zk_leave(&s);
    }
    if (st == LOCK_ERROR)
        zk_error_map(&why, err);
    free(h);
    return st;
}

/* The sale's multi deleted g's node (its last hold), or may have (sure 0: its answer was
 * lost, unsettled): forgotten; a node that may still be there is doomed (the retrier
 * deletes it, or finds it gone). */
static void v11_forget(struct lock_client *lc, struct lock_grant *g, int sure)
{
    struct v11 *v = lc->store_state;
    struct node *h = g->priv, **p;

    if (!sure)
        doom(v, h->path, h->session);

    pthread_mutex_lock(&v->mu);
    for (p = &v->held; *p && *p != h; p = &(*p)->next)
        ;
    if (*p)
        *p = h->next;
    pthread_mutex_unlock(&v->mu);
    g->priv = NULL;
    free(h);
}

/* 1 when g's node is over: its session lost (or g already given back). */
static int v11_lost(struct lock_client *lc, const struct lock_grant *g)
{
    struct v11 *v = lc->store_state;
    const struct node *h = g->priv;

    return h == NULL || zk_session_lost(v->zk, h->session);
}

/* g's node: what the sale's multi checks (or deletes, giving g back). */
static const char *v11_guard(const struct lock_grant *g)
{
    const struct node *h = g->priv;

    return h ? h->path : NULL;
}

/* Stops the retrier (a last try at what it still holds) and frees the state. */
static void v11_destroy(struct lock_client *lc)
{
    struct v11 *v = lc->store_state;

    pthread_mutex_lock(&v->mu);
    v->stopping = 1;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
    pthread_join(v->thread, NULL);
    delete_doomed(v);   /* a last try; the rest goes with the session */
    for (struct node *n = v->doomed, *next; n; n = next)
        next = n->next, free(n);
    for (struct node *n = v->held, *next; n; n = next)
        next = n->next, free(n);
    pthread_cond_destroy(&v->cv);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

/* The state on the ZooKeeper client the config lends (lock_config.zk), and the retrier. */
static int v11_init(struct lock_client *lc, struct error *err)
{
    struct v11 *v;

    if (lc->cfg.zk == NULL)
        return error_set(err, FAULT_USAGE, "v11 keeps its lock in ZooKeeper: --zookeeper HOST:PORT,...");
    if ((v = calloc(1, sizeof(*v))) == NULL)
        return error_set(err, FAULT_NOMEM, "out of memory");
    v->zk = lc->cfg.zk;
    pthread_mutex_init(&v->mu, NULL);
    clock_cond_init_monotonic(&v->cv);
    if (pthread_create(&v->thread, NULL, retrier_main, v) != 0) {
        pthread_cond_destroy(&v->cv);
        pthread_mutex_destroy(&v->mu);
        free(v);
        return error_set(err, FAULT_NOMEM, "cannot start the node retrier");
    }
    lc->store_state = v;
    return LOCK_OK;
}

/* ZooKeeper's recipe, as Curator's InterProcessMutex: first come, first served; a lease
 * is the session's; the write is guarded by the store (the holder's node, checked in the
 * sale's multi), so no token is needed to fence it (the node's sequence is given as one). */
const struct lock_ops lock_v11 = {
    .name = "v11",
    .alias = "zookeeper",
    .title = "ZooKeeper's recipe: an ephemeral sequential node, the lowest holds, a waiter watches its predecessor",
    .flaw = "none by design: the stock is in ZooKeeper too, its write one multi that checks the lock node",
    .remote = 0,
    .init = v11_init,
    .destroy = v11_destroy,
    .try_acquire = v11_try_acquire,
    .release = v11_release,
    .wait = LOCK_WAIT_LOCAL,
    .lost = v11_lost,
    .guard = v11_guard,
    .forget = v11_forget,
};
