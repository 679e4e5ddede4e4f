/* ops.c - Requests on a session, synchronous: create, delete, get, set, children, the wait
 * for a node to go, and a multi; every answer typed where it is found. */
#include "zk/internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

int zk_answer(int rc, const char *what, const char *path, struct zk_error *err)
{
    enum zk_fault fault;

    switch (rc) {
    case ZOK:
        return ZK_OK;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
        fault = ZK_E_LOST;
        break;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
        fault = ZK_E_EXPIRED;
        break;
    case ZNONODE:
        fault = ZK_E_NONODE;
        break;
    case ZNODEEXISTS:
        fault = ZK_E_EXISTS;
        break;
    case ZBADVERSION:
        fault = ZK_E_VERSION;
        break;
    case ZNOTEMPTY:
        fault = ZK_E_NOTEMPTY;
        break;
    case ZBADARGUMENTS:
        fault = ZK_E_USAGE;
        break;
    case ZMARSHALLINGERROR:
        fault = ZK_E_NOMEM;
        break;
    default:
        fault = ZK_E_OTHER;
    }
    return zk_fail(err, fault, rc, "%s %.80s: %s", what, path, zerror(rc));
}

/* The handle a session holds. */
static zhandle_t *zh_of(const struct zk_session *s)
{
    return ((struct zk_handle *)s->h_)->zh;
}

int zk_create(struct zk_session *s, const char *path, const char *data, int len,
              enum zk_mode mode, char (*made)[ZK_PATH_MAX], struct zk_error *err)
{
    int flags = mode == ZK_EPHEMERAL_SEQUENTIAL ? ZOO_EPHEMERAL_SEQUENTIAL
              : mode == ZK_CONTAINER            ? ZOO_CONTAINER
                                                : ZOO_PERSISTENT;
    char buf[ZK_PATH_MAX];
    int rc = zoo_create(zh_of(s), path, data, data ? len : -1, &ZOO_OPEN_ACL_UNSAFE, flags,
                        buf, sizeof(buf));

    if (rc == ZOK && made)
        memcpy(*made, buf, sizeof(buf));
    return zk_answer(rc, "create", path, err);
}

int zk_delete(struct zk_session *s, const char *path, int version, struct zk_error *err)
{
    return zk_answer(zoo_delete(zh_of(s), path, version), "delete", path, err);
}

int zk_get(struct zk_session *s, const char *path, char *buf, int size, int *len,
           int *version, struct zk_error *err)
{
    struct Stat stat;
    int n = size - 1, rc = zoo_get(zh_of(s), path, 0, buf, &n, &stat);

    if (rc != ZOK)
        return zk_answer(rc, "get", path, err);
    n = n < 0 ? 0 : n;
    buf[n] = '\0';
    if (len)
        *len = n;
    if (version)
        *version = stat.version;
    return ZK_OK;
}

/* The reads of one zk_get_many in flight, counted down by the completions. */
struct reads {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left;
};
struct read_ctx {
    struct reads *all;
    struct zk_read *r;
};

/* On the completion thread: one read's answer, copied into its buffer. */
static void read_done(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    const struct read_ctx *c = data;
    struct zk_read *r = c->r;

    r->rc = rc;
    if (rc == ZOK) {
        r->len = len < 0 ? 0 : len < r->size - 1 ? len : r->size - 1;
        memcpy(r->buf, value ? value : "", (size_t)r->len);
        r->buf[r->len] = '\0';
        r->version = stat ? stat->version : -1;
    }
    pthread_mutex_lock(&c->all->mu);
    if (--c->all->left == 0)
        pthread_cond_signal(&c->all->cv);
    pthread_mutex_unlock(&c->all->mu);
}

int zk_get_many(struct zk_session *s, struct zk_read *reads, int n, struct zk_error *err)
{
    struct reads all = { .left = n };
    struct read_ctx ctx[16];
    int rc = ZOK, sent = 0;

    if (n < 1 || n > 16)
        return zk_fail(err, ZK_E_USAGE, 0, "a read of %d nodes (1 to 16)", n);
    pthread_mutex_init(&all.mu, NULL);
    pthread_cond_init(&all.cv, NULL);
    for (; sent < n && rc == ZOK; sent++) {
        ctx[sent] = (struct read_ctx){ .all = &all, .r = &reads[sent] };
        reads[sent].rc = ZSYSTEMERROR;
        rc = zoo_aget(zh_of(s), reads[sent].path, 0, read_done, &ctx[sent]);
    }
    pthread_mutex_lock(&all.mu);
    all.left -= n - sent + (rc != ZOK);   /* what was never sent is owed nothing */
    while (all.left > 0)
        pthread_cond_wait(&all.cv, &all.mu);
    pthread_mutex_unlock(&all.mu);
    pthread_cond_destroy(&all.cv);
    pthread_mutex_destroy(&all.mu);
    if (rc != ZOK)
        return zk_answer(rc, "get", reads[sent - 1].path, err);
    for (int i = 0; i < n; i++)
        if (reads[i].rc != ZOK && reads[i].rc != ZNONODE)
            return zk_answer(reads[i].rc, "get", reads[i].path, err);
    return ZK_OK;
}

int zk_set(struct zk_session *s, const char *path, const char *data, int len, int version,
           int *new_version, struct zk_error *err)
{
    struct Stat stat;
    int rc = zoo_set2(zh_of(s), path, data, len, version, &stat);

    if (rc == ZOK && new_version)
        *new_version = stat.version;
    return zk_answer(rc, "set", path, err);
}

int zk_get_children(struct zk_session *s, const char *path, struct zk_children *out,
                    struct zk_error *err)
{
    struct String_vector v = { 0 };
    int rc = zoo_get_children(zh_of(s), path, 0, &v);

    out->n = 0;
    out->names = NULL;
    if (rc != ZOK)
        return zk_answer(rc, "children", path, err);
    out->n = v.count;
    out->names = v.data;   /* taken: freed as the client's vector (zk_children_free) */
    return ZK_OK;
}

void zk_children_free(struct zk_children *c)
{
    struct String_vector v = { .count = c->n, .data = c->names };

    if (c->names)
        deallocate_String_vector(&v);
    c->n = 0;
    c->names = NULL;
}

/* The watch of zk_wait_gone, on the C client's completion thread; its context is the
 * handle. The C client calls a watch once for its node's event, and again for every change
 * of the session's state (those are the session watcher's); a watch whose waiter gave up
 * finds no one. */
static void node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    struct zk_handle *h = ctx;

    (void)zh, (void)state;
    if (type == ZOO_SESSION_EVENT || path == NULL)
        return;
    pthread_mutex_lock(&h->zc->mu);
    for (struct zk_waiter *w = h->waiters; w; w = w->next)
        if (strcmp(w->path, path) == 0) {
            w->fired = 1;
            pthread_cond_signal(&w->cv);
        }
    pthread_mutex_unlock(&h->zc->mu);
}

int zk_wait_gone(struct zk_session *s, const char *path, long long until_ms,
                 struct zk_error *err)
{
    struct zk_client *zc = s->zc;
    struct zk_handle *h = s->h_;
    struct zk_waiter w = { .path = path }, **p;
    struct Stat stat;
    char data[64];
    int len = sizeof(data), rc, fired, lost;

    clock_cond_init_monotonic(&w.cv);
    pthread_mutex_lock(&zc->mu);
    w.next = h->waiters;   /* listed first: an event that comes before the answer counts */
    h->waiters = &w;
    pthread_mutex_unlock(&zc->mu);
    /* A get, not an exists: on a node already gone it leaves no watch behind (Curator's
     * LockInternals does the same). */
    rc = zoo_wget(h->zh, path, node_watcher, h, data, &len, &stat);
    pthread_mutex_lock(&zc->mu);
    while (rc == ZOK && !w.fired && clock_now_ms() < until_ms &&
           !zk_session_lost_locked(zc, s->id))
        clock_cond_wait_until(&w.cv, &zc->mu, until_ms < clock_now_ms() + 200 ? until_ms
                                                                          : clock_now_ms() + 200);
    fired = w.fired;
    lost = zk_session_lost_locked(zc, s->id);
    for (p = &h->waiters; *p != &w; p = &(*p)->next)
        ;
    *p = w.next;
    pthread_mutex_unlock(&zc->mu);
    pthread_cond_destroy(&w.cv);
    if (rc == ZNONODE || (rc == ZOK && fired))
        return ZK_OK;
    if (rc != ZOK)
        return zk_answer(rc, "get", path, err);
    if (lost)
        return zk_fail(err, ZK_E_EXPIRED, ZSESSIONEXPIRED, "waiting on %.80s: the session is lost", path);
    return zk_fail(err, ZK_E_NONE, 0, "waiting on %.80s: the time ran out", path);
}

/* The C client's operation for o. */
static void op_init(zoo_op_t *zo, struct zk_op *o)
{
    if (o->kind == ZK_OP_CHECK)
        zoo_check_op_init(zo, o->path, o->version);
    else if (o->kind == ZK_OP_SET)
        zoo_set_op_init(zo, o->path, o->data, o->len, o->version, NULL);
    else if (o->kind == ZK_OP_CREATE)
        zoo_create_op_init(zo, o->path, o->data, o->data ? o->len : -1, &ZOO_OPEN_ACL_UNSAFE,
                           ZOO_PERSISTENT, NULL, 0);
    else
        zoo_delete_op_init(zo, o->path, o->version);
    o->rc = 0;
}

int zk_multi(struct zk_session *s, struct zk_op *ops, int n, int *failed, struct zk_error *err)
{
    zoo_op_t zo[ZK_MULTI_MAX];
    zoo_op_result_t res[ZK_MULTI_MAX];
    int rc;

    *failed = -1;
    if (n <= 0 || n > ZK_MULTI_MAX)
        return zk_fail(err, ZK_E_USAGE, 0, "a multi of %d operations (1 to %d)", n, ZK_MULTI_MAX);
    for (int i = 0; i < n; i++)
        op_init(&zo[i], &ops[i]);
    memset(res, 0, sizeof(res[0]) * (size_t)n);
    rc = zoo_multi(zh_of(s), n, zo, res);
    if (rc == ZOK)
        return ZK_OK;
    if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
        rc == ZINVALIDSTATE || rc == ZMARSHALLINGERROR || rc == ZBADARGUMENTS)
        return zk_answer(rc, "multi", ops[0].path, err);
    for (int i = 0; i < n; i++) {
        ops[i].rc = res[i].err;
        if (*failed < 0 && res[i].err != ZOK && res[i].err != ZRUNTIMEINCONSISTENCY)
            *failed = i;
    }
    return zk_answer(rc, "multi", *failed >= 0 ? ops[*failed].path : ops[0].path, err);
}
