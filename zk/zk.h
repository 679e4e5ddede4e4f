/* zk.h - The ZooKeeper layer: the only code that includes zookeeper.h.
 *
 * A struct zk_client stands for one ensemble and holds one session (one zhandle_t of the
 * official multi-threaded C client) for the whole instance: the lock (v11) and the store
 * share it. The C client runs its own I/O and completion threads; its watcher only notes
 * what happened (nothing blocks there). A caller enters the current session (zk_enter),
 * which it keeps open while it works, and leaves it (zk_leave). When the server expires
 * the session, the next zk_enter opens a new one; the old handle is closed only after its
 * last caller has left. Every ephemeral node of an expired session is gone: a lease ends
 * with its session.
 *
 * Every call returns ZK_OK or ZK_FAIL and, on failure, fills a caller-supplied struct
 * zk_error with the layer's own kinds (the server's answer, or what became of the
 * session); zk_error_map gives the kinds the layers above share (common/error.h).
 */
#ifndef ZK_ZK_H
#define ZK_ZK_H

#include <stddef.h>

#include "common/error.h"

enum zk_status {
    ZK_OK = RESULT_OK,
    ZK_FAIL = RESULT_ERROR
};

enum zk_fault {
    ZK_E_NONE = 0,
    ZK_E_CONNECT,      /* no session answers now (no quorum reached): nothing was sent */
    ZK_E_LOST,         /* the connection was lost with the request out: it may have run */
    ZK_E_EXPIRED,      /* the session expired: its ephemeral nodes (its locks) are gone */
    ZK_E_NONODE,       /* a node it names does not exist (or a multi's check failed) */
    ZK_E_EXISTS,       /* the node to create exists */
    ZK_E_VERSION,      /* a version did not match: someone wrote since it was read */
    ZK_E_NOTEMPTY,     /* a node to delete has children */
    ZK_E_USAGE,        /* the caller's mistake: a bad argument, a path too long */
    ZK_E_NOMEM,
    ZK_E_OTHER         /* any other answer (its code in rc) */
};

struct zk_error {
    enum zk_fault fault;
    int rc;             /* ZooKeeper's own code (ZNONODE, ZCONNECTIONLOSS, ...) */
    char msg[128];      /* one line for a log */
};

/* Fills err (when not NULL); returns ZK_FAIL. */
int zk_fail(struct zk_error *err, enum zk_fault fault, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The boundary: from as the layers above see it (a lost connection FAULT_CONNECTION, no
 * session FAULT_CONNECT, an expired session FAULT_CONNECTION too: the caller asks
 * zk_session_lost for its locks; a refused condition FAULT_REPLY with its name in code). */
void zk_error_map(const struct zk_error *from, struct error *to);

/* --- the client and its session --- */

struct zk_config {
    const char *servers;        /* "HOST:PORT,HOST:PORT,..." */
    long session_ms;            /* the session timeout asked for; the ensemble clamps it to
                                   2 to 20 ticks (or its min/maxSessionTimeout) */
    long connect_wait_ms;       /* how long a caller waits for a session before ZK_E_CONNECT
                                   (0: a third of the session) */
    /* Optional, called on the caller's thread (never the client's): the ensemble stopped
     * (up 0, why) or started (up 1) answering, for the caller's log. */
    void (*on_state)(void *arg, int up, const char *why);
    void *state_arg;
    /* Optional: asked every few tens of ms while zk_client_create waits for the first
     * session, on the caller's thread; it must not block. Nonzero ends the wait at once
     * (the caller is stopping), as ZK_E_CONNECT. */
    int (*give_up)(void *arg);
    void *give_up_arg;
};

struct zk_client;

/* Opens the session and waits up to the session timeout for it (or until cfg->give_up);
 * NULL with err (naming the connect string) when the ensemble does not answer, the wait
 * was given up, or cfg is bad. */
struct zk_client *zk_client_create(const struct zk_config *cfg, struct zk_error *err);
/* Closes the session, once no other thread uses the client. */
void zk_client_destroy(struct zk_client *zc);
/* The session timeout the ensemble gave (every bound is counted on it), in ms. */
long zk_session_ms(const struct zk_client *zc);
/* Sessions opened, and expired, since the client was made; connections lost. */
long long zk_sessions(const struct zk_client *zc);
long long zk_expirations(const struct zk_client *zc);
long long zk_disconnects(const struct zk_client *zc);

/* Ends the current session from a second connection that takes it over and closes it,
 * as the ensemble ends a session it has not heard from in time (Curator's test utilities
 * do the same): every ephemeral node of it goes, and the client learns that it expired.
 * For tests and for showing an expiry. ZK_OK, or ZK_FAIL with err. */
int zk_expire(struct zk_client *zc, struct zk_error *err);

/* A session in use by one caller: enter it, work, leave it. */
struct zk_session {
    struct zk_client *zc;
    void *h_;                   /* the layer's: the handle held */
    long long id;               /* the session's number in this client (1, 2, ...) */
};
/* The current session (a new one when the last expired), waiting up to connect_wait_ms
 * for it to answer: ZK_OK, or ZK_FAIL with ZK_E_CONNECT (nothing can be sent now). */
int zk_enter(struct zk_client *zc, struct zk_session *s, struct zk_error *err);
void zk_leave(struct zk_session *s);
/* 1 when the session numbered id is over for its locks: expired, replaced, or cut off
 * from every server for a whole session timeout (the ensemble has expired it, or will
 * before anything of its could be written). */
int zk_session_lost(struct zk_client *zc, long long id);
/* 1 when the session numbered id is certainly over: the ensemble expired it, or a new
 * session replaced it (zk_session_lost's guess, a session long unanswered, is not). */
int zk_session_ended(struct zk_client *zc, long long id);

/* --- requests on a session (synchronous; each may block up to the session timeout) --- */

enum { ZK_PATH_MAX = 512 };
enum zk_mode {
    ZK_PERSISTENT = 0,
    ZK_EPHEMERAL_SEQUENTIAL,
    ZK_CONTAINER
};
/* Creates path with data (len bytes); made (may be NULL) gets the path made (with its
 * sequence number). */
int zk_create(struct zk_session *s, const char *path, const char *data, int len,
              enum zk_mode mode, char (*made)[ZK_PATH_MAX], struct zk_error *err);
/* Deletes path at version (-1: any). */
int zk_delete(struct zk_session *s, const char *path, int version, struct zk_error *err);
/* Reads path into buf (size bytes; *len set, the text NUL-terminated) and its version. */
int zk_get(struct zk_session *s, const char *path, char *buf, int size, int *len,
           int *version, struct zk_error *err);
/* One node read by zk_get_many: its path in, its text (NUL-terminated, cut to size - 1),
 * version and answer out. */
struct zk_read {
    const char *path;
    char *buf;
    int size;
    int len, version;
    int rc;                     /* ZooKeeper's answer for this node (0: read) */
};
/* Reads n nodes at once (all sent before any answer is awaited: one round trip). ZK_OK when
 * every answer came (each read's rc says whether it was there); ZK_FAIL with err when the
 * session failed (no rc is then to be trusted). */
int zk_get_many(struct zk_session *s, struct zk_read *reads, int n, struct zk_error *err);
/* Sets path's data at version (-1: any); *new_version (may be NULL) gets its next. */
int zk_set(struct zk_session *s, const char *path, const char *data, int len, int version,
           int *new_version, struct zk_error *err);

/* A node's children, as read. */
struct zk_children {
    int n;
    char **names;               /* the layer's; freed by zk_children_free */
};
int zk_get_children(struct zk_session *s, const char *path, struct zk_children *out,
                    struct zk_error *err);
void zk_children_free(struct zk_children *c);

/* Waits up to until_ms (monotonic) for path to go (deleted, or its session's end): ZK_OK
 * when it is gone or changed (look again), ZK_FAIL with ZK_E_NONE when the time ran out,
 * or with the request's error. A path that is already gone answers at once. */
int zk_wait_gone(struct zk_session *s, const char *path, long long until_ms,
                 struct zk_error *err);

/* One operation of a multi. */
enum zk_op_kind { ZK_OP_CHECK, ZK_OP_SET, ZK_OP_CREATE, ZK_OP_DELETE };
struct zk_op {
    enum zk_op_kind kind;
    const char *path;
    const char *data;           /* SET, CREATE */
    int len;
    int version;                /* CHECK, SET, DELETE: -1 any (CHECK: it exists) */
    int rc;                     /* after zk_multi: this operation's own answer (0: ok) */
};
enum { ZK_MULTI_MAX = 300 };
/* Runs ops[0..n) as one transaction: all or nothing. ZK_OK when it committed; ZK_FAIL with
 * err (the first operation that refused: its index in *failed, and each op's rc set), or
 * with the session's error (then no op's rc says anything). */
int zk_multi(struct zk_session *s, struct zk_op *ops, int n, int *failed, struct zk_error *err);

/* --- burst.c: the ensemble's ceiling, for the bench --- */
/* Sets path (it must exist) as fast as the client can with in_flight sets outstanding,
 * for ms: how many answered ZOK (*failed: how many did not). */
long long zk_set_burst(struct zk_session *s, const char *path, int in_flight, long ms,
                       long long *failed);

#endif
