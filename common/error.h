/* error.h - The generic result of a call that can fail, shared by every layer.
 *
 * A call returns a status: 0 when done, -1 (RESULT_ERROR) when it failed; a layer's own
 * status enum keeps those two values and adds its own between (the lock's LOCK_TIMEOUT,
 * ...). On a failure it fills an error the caller supplied: the kind of failure, typed
 * where it was found (each client of a store has its own kinds and maps them to these at
 * its boundary: redis/redis.h's rd_error_map), a code (a script's own error code,
 * "lease_lost") and one line for a log. Nobody decides anything on the line's text.
 */
#ifndef COMMON_ERROR_H
#define COMMON_ERROR_H

enum result {
    RESULT_OK = 0,
    RESULT_ERROR = -1
};

/* The kind of a failure, as the layers above a store's client see it. */
enum fault {
    FAULT_NONE = 0,
    FAULT_CONNECT,      /* could not connect (or find the server to ask): nothing was sent */
    FAULT_CONNECTION,   /* the connection broke after a request was sent: it may or may
                           not have run */
    FAULT_TIMEOUT,      /* sent, and no answer within the timeout: it may still run */
    FAULT_AUTH,         /* the credentials were refused */
    FAULT_LOADING,      /* the server is loading its data: nothing ran */
    FAULT_READONLY,     /* the server takes no writes (a replica, a demoted master): nothing
                           ran */
    FAULT_NOREPLICAS,   /* refused for want of replicas to take the write: nothing ran */
    FAULT_MOVING,       /* the store cannot serve the key now (its place is moving, or a
                           failover is under way): nothing ran; it may serve it soon */
    FAULT_REPLY,        /* any other error answer; a script's own (its code in code) */
    FAULT_PROTOCOL,     /* an answer of a kind the caller did not expect */
    FAULT_USAGE,        /* the caller's mistake: a bad argument, a missing setting */
    FAULT_NOMEM,        /* out of memory, or a fixed table is full */
    FAULT_QUORUM        /* fewer servers answered than a quorum */
};

struct error {
    enum fault fault;
    char code[24];      /* FAULT_REPLY: the error's code, its first word ("lease_lost") */
    char msg[128];      /* one line for a log, no newline; never a password */
};

/* Fills err (when not NULL) with fault and the formatted line; returns RESULT_ERROR, so
 * that `return error_set(err, FAULT_USAGE, "...");` reads as one step. */
int error_set(struct error *err, enum fault fault, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 1 when the fault says the server is gone or not the one to write to (connection,
 * timeout, loading, readonly): the next call connects again, possibly elsewhere. */
int fault_is_io(enum fault fault);

/* "connection", "timeout", ...: the fault's name, for logs and metrics. */
const char *fault_name(enum fault fault);

#endif
