/* internal.h - What the ZooKeeper layer's files share: the client, its handles, the map
 * of the server's codes. Only zk/ includes it (and zookeeper.h). */
#ifndef ZK_INTERNAL_H
#define ZK_INTERNAL_H

#define THREADED
#include <zookeeper/zookeeper.h>
#include <pthread.h>
#include <stdatomic.h>

#include "zk/zk.h"

/* A caller waiting for a node to go (zk_wait_gone), listed in its handle while it waits;
 * woken through its own condition variable, under the client's mu, by the node's watch or
 * by any change of the session's state. */
struct zk_waiter {
    const char *path;
    int fired;                    /* the node went or changed */
    pthread_cond_t cv;
    struct zk_waiter *next;
};

/* One handle of the C client, and its session as the watcher saw it. Guarded by the
 * client's mu. The handle is also every watch's context: it outlives the C client's
 * calls (freed after zookeeper_close, which makes none after it returns). */
struct zk_handle {
    struct zk_client *zc;
    zhandle_t *zh;
    long long id;                 /* its number in the client: 1, 2, ... */
    int refs;                     /* callers inside it (zk_enter .. zk_leave) */
    int connected;                /* the session answers now */
    int expired;                  /* the ensemble expired it: its ephemeral nodes are gone */
    int retired;                  /* replaced: its last caller closes it */
    long long down_since_ms;      /* monotonic: since when it has not answered (0: it does) */
    struct zk_waiter *waiters;    /* the callers waiting on a node in this session */
};

struct zk_client {
    char *servers;
    long asked_ms;                /* the session timeout asked for */
    atomic_long session_ms;       /* the one the ensemble gave (read without mu) */
    long connect_wait_ms;
    void (*on_state)(void *arg, int up, const char *why);
    void *state_arg;
    atomic_int down;              /* 1 after on_state(0), until a session answers */
    pthread_mutex_t mu;           /* guards cur and every handle's fields */
    pthread_cond_t cv;            /* a session's state changed */
    struct zk_handle *cur;
    atomic_llong opened, expirations, disconnects;
};

/* client.c: zk_session_lost with zc->mu held. */
int zk_session_lost_locked(struct zk_client *zc, long long id);

/* ops.c: a request's answer rc (what zoo_* returned) as a fault; ZK_OK for ZOK, else
 * ZK_FAIL with err naming what (the request) and path. */
int zk_answer(int rc, const char *what, const char *path, struct zk_error *err);

#endif
