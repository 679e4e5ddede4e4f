/* lock.h - The lock library: eight versions of a lock behind one table of operations.
 *
 * A version is found by name ("v6") or alias ("lua-release") with lock_find(). A
 * process creates one lock_client for the version it runs; every thread that takes
 * locks passes its own redisContext (a redisContext is not thread-safe: one per thread).
 *
 * Library code never prints and never aborts on bad input: every call returns a
 * lock_status and, on LOCK_ERROR, fills a caller-supplied struct lock_error.
 */
#ifndef LOCK_H
#define LOCK_H

#include <stdatomic.h>
#include <hiredis/hiredis.h>

#define LOCK_OWNER_MAX 96
#define LOCK_KEY_MAX 160

enum lock_status {
    LOCK_OK = 0,      /* done: the lock is held (acquire) or given back (release) */
    LOCK_TIMEOUT,     /* acquire: not had within the wait limit */
    LOCK_NOT_OWNER,   /* release: the lock was no longer ours (expired or taken); nothing deleted */
    LOCK_ERROR        /* Redis failed or answered something unexpected; see lock_error */
};

struct lock_error {
    int io;           /* 1 when the connection failed: the caller should reconnect */
    char msg[128];    /* one line, no newline */
};

/* Process-wide settings of a lock_client, copied by lock_client_create(). */
struct lock_config {
    const char *redis_host;   /* for the watchdog's own connection (v8) */
    int redis_port;
    long ttl_ms;              /* lease length; 0 means the default, 30000 */
    long retry_ms;            /* sleep between tries while waiting; 0 means 10 */
    const char *instance_id;  /* unique per process (a uuid); prefix of every owner id */
};

struct lock_lease;            /* v8: the watchdog's entry for a held lock (private) */

/* What acquire hands back, and release takes. Lives on the caller's stack. */
struct lock_grant {
    char key[LOCK_KEY_MAX];       /* the Redis key (or local name) that was locked */
    char owner[LOCK_OWNER_MAX];   /* "<instance uuid>:<thread id>" */
    long long token;              /* fencing token; 0 for versions without one */
    long long acquired_ms;        /* monotonic time of the grant */
    long long valid_until_ms;     /* monotonic end of the lease; 0 when it never expires */
    long long waited_ms;          /* how long acquire waited */
    int depth;                    /* reentrant versions: hold count after this acquire */
    long release_gap_ms;          /* teaching fault: sleep inside release, between its steps */
    struct lock_lease *lease;     /* v8: set while the watchdog renews this lock */
    void *local;                  /* v1/v2: the process-local mutex that is held */
};

struct lock_client;

/* One version: its names and its operations. Each lock/vN_*.c ends with one of these. */
struct lock_ops {
    const char *name;     /* "v6" */
    const char *alias;    /* "lua-release" */
    const char *title;    /* the technique, one line */
    const char *flaw;     /* its known flaw, one line */
    int uses_redis;       /* 0 for the process-local versions */
    int is_atomic;        /* 1: no lock at all, the sale runs as one script (baseline) */
    /* Optional set-up and tear-down of the version's process-wide state. */
    int (*init)(struct lock_client *lc, struct lock_error *err);
    void (*destroy)(struct lock_client *lc);
    /* Tries once; LOCK_OK when granted, LOCK_TIMEOUT when held by someone else.
     * lock_acquire() calls it again after retry_ms until the wait limit. */
    int (*try_acquire)(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                       struct lock_error *err);
    /* Optional: waits by itself up to wait_ms (a local mutex, later a notification);
     * when set, lock_acquire() calls it instead of polling try_acquire. */
    int (*acquire_wait)(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                        long wait_ms, struct lock_error *err);
    int (*release)(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                   struct lock_error *err);
};

/* A running version. Created once per process; shared by all threads. */
struct lock_client {
    const struct lock_ops *ops;
    struct lock_config cfg;       /* strings owned by the client */
    void *state;                  /* the version's process-wide state */
    /* Counters, read by the service's /metrics. Updated atomically by any thread. */
    atomic_llong acquisitions;    /* grants */
    atomic_llong timeouts;        /* acquires that gave up */
    atomic_llong renewals;        /* v8: successful renewals */
    atomic_llong lost_leases;     /* leases found lost: renewal refused, or release not owner */
    atomic_llong stolen;          /* release found the lock gone or foreign while our lease
                                     still ran: someone else deleted it */
};

/* Finds a version by name or alias; NULL when there is none. */
const struct lock_ops *lock_find(const char *name);
/* All versions in order, NULL-terminated. */
const struct lock_ops *const *lock_versions(void);

/* Creates a client for ops; NULL with err filled on failure. Free with lock_client_destroy. */
struct lock_client *lock_client_create(const struct lock_ops *ops, const struct lock_config *cfg,
                                       struct lock_error *err);
void lock_client_destroy(struct lock_client *lc);

/* Fills owner with "<instance id>:<n>", n unique per thread for the process's life. */
void lock_owner_id(const struct lock_client *lc, char *owner, size_t size);

/* Takes the lock on key for owner, trying until wait_ms has passed (never forever).
 * Returns LOCK_OK (g filled), LOCK_TIMEOUT or LOCK_ERROR. */
int lock_acquire(struct lock_client *lc, redisContext *c, const char *key, const char *owner,
                 long wait_ms, struct lock_grant *g, struct lock_error *err);
/* Gives the lock back. LOCK_OK, LOCK_NOT_OWNER (it had expired or been taken) or LOCK_ERROR. */
int lock_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                 struct lock_error *err);
/* 1 when the lease is known to be lost (v8: renewal refused, or its time ran out). */
int lock_grant_is_lost(const struct lock_grant *g);

/* --- Lua scripts, embedded at build time, loaded with SCRIPT LOAD, run with EVALSHA. --- */
struct lock_script {
    const char *name;     /* file name without .lua */
    const char *source;   /* the script text */
    char sha[41];         /* written once, by the first load, before loaded is set */
    atomic_int loaded;    /* 1 once sha is known */
};

/* Runs script with nkeys keys then args (argv has nkeys + nargs strings). Loads it when
 * its sha is unknown and again after NOSCRIPT (a restarted Redis forgets scripts).
 * Returns the reply (caller frees with freeReplyObject) or NULL with err filled. An
 * error reply from the script itself is returned as a reply of type REDIS_REPLY_ERROR. */
redisReply *lock_script_eval(redisContext *c, struct lock_script *s, int nkeys, int nargs,
                             const char **argv, struct lock_error *err);

/* Sets err from a failed context or reply; returns LOCK_ERROR. */
int lock_fail(struct lock_error *err, redisContext *c, const char *what);

/* Monotonic milliseconds. */
long long lock_now_ms(void);
/* Sleeps ms milliseconds (restarted after signals). */
void lock_sleep_ms(long ms);

#endif
