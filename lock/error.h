/* error.h - The one error model of the lock library, its Redis layer and the service.
 *
 * Every call that can fail returns an enum lock_status and, on LOCK_ERROR (or
 * LOCK_UNAVAILABLE), fills a caller-supplied struct lock_error: what kind of failure it
 * was, typed where it was found (the Redis layer types every reply error and every I/O
 * failure), and one line for a log. Nobody decides anything on the line's text.
 */
#ifndef LOCK_ERROR_H
#define LOCK_ERROR_H

/* What a call did. */
enum lock_status {
    LOCK_OK = 0,      /* done: the lock is held (acquire) or given back (release) */
    LOCK_TIMEOUT,     /* acquire: not had within the wait limit */
    LOCK_EXPIRED,     /* release: not ours any more, and our lease had run out (or the
                         keep-alive had seen it go): nothing was deleted */
    LOCK_STOLEN,      /* release: not ours any more although our lease still ran: someone
                         deleted or took it before its time; nothing was deleted */
    LOCK_NOT_OWNER,   /* a store's release or renew: the lock was not (or no longer) ours;
                         nothing changed. lock_release() tells EXPIRED from STOLEN */
    LOCK_UNAVAILABLE, /* acquire: fewer lock masters answered than a quorum (redlock), or
                         fewer replicas acknowledged the grant than asked: fail fast */
    LOCK_ERROR        /* Redis failed or answered something unexpected: see lock_error */
};

/* Why: the kind of a failure. The Redis ones are the error codes Redis answers with
 * (a reply "-NOSCRIPT ..." is LOCK_E_NOSCRIPT), or what happened to the connection. */
enum lock_fault {
    LOCK_E_NONE = 0,
    LOCK_E_CONNECTION,  /* the connection broke (EOF, reset) after a command was sent:
                           it may or may not have run */
    LOCK_E_CONNECT,     /* could not connect (or find the master): nothing was sent */
    LOCK_E_TIMEOUT,     /* connected, but no answer within the command timeout */
    LOCK_E_AUTH,        /* NOAUTH, WRONGPASS, NOPERM: the credentials were refused */
    LOCK_E_LOADING,     /* LOADING: Redis is loading its data set */
    LOCK_E_READONLY,    /* READONLY: a replica (a demoted master) refused a write */
    LOCK_E_NOSCRIPT,    /* NOSCRIPT: Redis does not have the script (restarted, flushed) */
    LOCK_E_BUSY,        /* BUSY: a script runs past the busy limit */
    LOCK_E_NOREPLICAS,  /* NOREPLICAS: fewer replicas than min-replicas-to-write */
    LOCK_E_MOVED,       /* MOVED: (cluster) the key's slot lives on another node */
    LOCK_E_ASK,         /* ASK: (cluster) the key's slot is being migrated */
    LOCK_E_TRYAGAIN,    /* TRYAGAIN: (cluster) a multi-key command during a migration */
    LOCK_E_CLUSTERDOWN, /* CLUSTERDOWN: (cluster) the cluster cannot serve */
    LOCK_E_REPLY,       /* any other error reply; a script's own error (its code in
                           lock_error.code: "lease_lost", "key_reused", ...) */
    LOCK_E_PROTOCOL,    /* a reply of a type the caller did not expect */
    LOCK_E_USAGE,       /* the caller's mistake: a bad argument, a missing setting */
    LOCK_E_NOMEM,       /* out of memory, or a fixed table is full */
    LOCK_E_QUORUM       /* redlock: fewer lock masters answered than a quorum */
};

struct lock_error {
    enum lock_fault fault;
    char code[24];      /* LOCK_E_REPLY: the error's code, its first word ("lease_lost") */
    char msg[128];      /* one line for a log, no newline; never a password */
};

/* Fills err (when not NULL) with fault and the formatted line; returns LOCK_ERROR, so
 * that `return lock_fail(err, LOCK_E_USAGE, "...");` reads as one step. */
int lock_fail(struct lock_error *err, enum lock_fault fault, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 1 when the fault says the server is gone or not the one to write to (connection,
 * timeout, loading, readonly): the caller's connection is dropped and the next call
 * connects again, possibly elsewhere. */
int lock_fault_is_io(enum lock_fault fault);

/* 1 when a cluster could not serve the command now (MOVED or ASK not followed, TRYAGAIN
 * past the layer's wait, CLUSTERDOWN): nothing of it ran; Redis may serve it soon. */
int lock_fault_is_cluster(enum lock_fault fault);
/* "connection", "noscript", ...: the fault's name, for logs and metrics. */
const char *lock_fault_name(enum lock_fault fault);

#endif
