/* lock.h - The lock library: eight versions of a distributed lock behind one table.
 *
 * A version is a store (try-acquire, release and renew: its Redis commands or scripts),
 * a wait policy (poll, a local mutex, or notification by pub/sub) and an optional
 * keep-alive (the watchdog, generic over any store that renews). Each lock/vN_*.c holds
 * only what that version adds and ends with its table; steps that two versions share
 * live in lock/steps.c, which both name.
 *
 * A process creates one lock_client for the version it runs and shares it between its
 * threads. The client owns its connections: one per calling thread to the data Redis
 * (the one that holds the item's stock, its lock and its fencing counter), plus the
 * watchdog's and the subscriber's. The caller names an item; the library derives the
 * keys `lock:{I}` and `fence:{I}` and the owner id `<instance id>:<thread number>`.
 *
 * Library code never prints and never aborts on bad input: every call returns a
 * lock_status and, on LOCK_ERROR, fills a caller-supplied struct lock_error.
 */
#ifndef LOCK_H
#define LOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

#define LOCK_ITEM_MAX 64
#define LOCK_OWNER_MAX 96
#define LOCK_KEY_MAX 96
#define LOCK_RIDER_MAX 4

enum lock_status {
    LOCK_OK = 0,      /* done: the lock is held (acquire) or given back (release) */
    LOCK_TIMEOUT,     /* acquire: not had within the wait limit */
    LOCK_EXPIRED,     /* release: not ours any more, and our lease had run out (or the
                         keep-alive had seen it go): nothing was deleted */
    LOCK_STOLEN,      /* release: not ours any more although our lease still ran: someone
                         deleted or took it before its time; nothing was deleted */
    LOCK_ERROR,       /* Redis failed or answered something unexpected; see lock_error */
    LOCK_UNAVAILABLE  /* acquire: fewer lock masters answered than a quorum (redlock), or
                         fewer replicas acknowledged the grant than lock_config.replicas:
                         no waiting could help; fail fast */
};

struct lock_error {
    int io;           /* 1 when the connection failed: the caller should reconnect */
    char msg[128];    /* one line, no newline */
};

/* How a waiter learns that the lock is free. */
enum lock_wait {
    LOCK_WAIT_DEFAULT = 0, /* the version's own choice (in lock_config: keep it) */
    LOCK_WAIT_POLL,        /* try, sleep retry_ms, try again (the seeds' loop) */
    LOCK_WAIT_LOCAL,       /* the store blocks by itself (a process-local mutex) */
    LOCK_WAIT_NOTIFY       /* release publishes on the lock's channel; one subscriber per
                              process wakes the waiters, who queue locally first come first
                              served: at most one thread per process and item asks Redis */
};

/* Process-wide settings of a lock_client, copied by lock_client_create(). */
struct lock_config {
    const char *redis_host;   /* the data Redis: lock:{I}, fence:{I}, the riders */
    int redis_port;
    long ttl_ms;              /* lease length; 0 means the default, 30000 */
    long retry_ms;            /* poll: sleep between tries; 0 means 10 */
    const char *instance_id;  /* unique per process (a uuid); prefix of every owner id */
    enum lock_wait wait;      /* LOCK_WAIT_DEFAULT: the version's */
    const char *lock_masters; /* redlock: its N independent masters, "HOST:PORT,..." */
    const char *redis_standby; /* "HOST:PORT,...": where the data Redis may be after a
                                  failover; a connection goes to the first of redis_host
                                  and these that says it is a master (ROLE); NULL: none */
    int replicas;             /* a first grant counts only once this many replicas of the
                                 data Redis acknowledged it (WAIT); 0: at once */
    const char *redis_user;   /* ACL user for every Redis (data, standbys, masters); NULL:
                                 the default user */
    const char *redis_password; /* its password; NULL: none. Never logged */
};

/* One Redis server of a list such as --lock-redis or --redis-standby. */
#define LOCK_SERVERS_MAX 9
struct lock_server {
    char host[256];
    int port;
};

/* Parses "HOST:PORT,HOST:PORT,..." into out (at most max): how many, or -1 when an entry
 * is malformed, a port is not 1 to 65535, or there are more than max. */
int lock_servers_parse(const char *list, struct lock_server *out, int max);

/* What acquire hands back, and release takes. Lives on the caller's stack. */
struct lock_grant {
    char item[LOCK_ITEM_MAX + 1];
    char key[LOCK_KEY_MAX];       /* "lock:{I}" */
    char owner[LOCK_OWNER_MAX];   /* "<instance id>:<thread number>" */
    long long token;              /* fencing token; 0 for versions without one */
    long long acquired_ms;        /* monotonic time the granting try was sent */
    long long valid_until_ms;     /* monotonic end of the lease; 0 when it never expires */
    long long waited_ms;          /* how long acquire waited */
    long long retry_in_ms;        /* a refused try: the holder's lease left, when known */
    int depth;                    /* hold count after this acquire (reentrant versions) */
    long release_gap_ms;          /* teaching fault: sleep inside release, between steps */
    void *priv;                   /* the version's own per-grant state (v1: its mutex) */
};

/* Commands that ride in the same round trip as the lock's own command, on the data
 * Redis: after the granting try (a read under the lock) or before the release (the
 * writes, applied before the lock is given back). Build with lock_rider_add(); after
 * the call, replies[i] holds the reply to command i (freed by lock_rider_reset). */
struct lock_rider {
    char *cmds;                   /* RESP-formatted commands, back to back */
    size_t len;
    int n;
    redisReply *replies[LOCK_RIDER_MAX];
};

struct lock_client;

/* One version: its names, its store, its wait policy and its keep-alive. Each
 * lock/vN_*.c ends with one of these. The store functions talk to Redis only through
 * lock_command() and lock_eval() (lock/internal.h), so that riders and connections are
 * the library's business, not the version's. */
struct lock_ops {
    const char *name;     /* "v6" */
    const char *alias;    /* "lua-release" */
    const char *title;    /* the technique, one line */
    const char *flaw;     /* its known flaw, one line */
    /* The store. */
    int remote;           /* 1: the lock lives in Redis; 0: in this process */
    int (*init)(struct lock_client *lc, struct lock_error *err);     /* optional */
    void (*destroy)(struct lock_client *lc);                          /* optional */
    /* One try: LOCK_OK (g->depth, g->valid_until_ms set) or LOCK_TIMEOUT (held by
     * another; g->retry_in_ms set when the store knows the holder's lease). A store
     * whose wait is LOCK_WAIT_LOCAL may block up to wait_ms; the others ignore it. */
    int (*try_acquire)(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                       struct lock_error *err);
    /* LOCK_OK, LOCK_NOT_OWNER (internal.h: it was not ours; nothing deleted), LOCK_ERROR. */
    int (*release)(struct lock_client *lc, struct lock_grant *g, struct lock_error *err);
    /* Optional: resets the lease to a full TTL while g->owner still holds it. LOCK_OK,
     * LOCK_NOT_OWNER or LOCK_ERROR. Needed by a keep-alive. */
    int (*renew)(struct lock_client *lc, const struct lock_grant *g, struct lock_error *err);
    /* The wait policy it uses unless lock_config.wait says otherwise. */
    enum lock_wait wait;
    /* 1: a watchdog renews every held lease each ttl/3 while it is held. */
    int keepalive;
};

/* A running version. Created once per process; shared by all threads. */
struct lock_client {
    const struct lock_ops *ops;
    struct lock_config cfg;       /* strings owned by the client; wait resolved */
    void *store_state;            /* the store's process-wide state (v1: its mutexes) */
    void *wait_state;             /* the wait policy's (notify: subscriber and queues) */
    void *keepalive_state;        /* the watchdog's */
    void *conns;                  /* the per-thread connections (lock/redis.c) */
    /* Counters, read by the service's /metrics. Updated atomically by any thread. */
    atomic_llong acquisitions;    /* grants */
    atomic_llong timeouts;        /* acquires that gave up */
    atomic_llong renewals;        /* keep-alive: successful renewals */
    atomic_llong lost_leases;     /* leases found lost: renewal refused, or release not owner */
    atomic_llong stolen;          /* release found the lock gone or foreign while our lease
                                     still ran: someone else deleted it */
    atomic_llong notifications;   /* notify: release messages received */
};

/* Finds a version by name or alias; NULL when there is none. */
const struct lock_ops *lock_find(const char *name);
/* All versions in order, NULL-terminated. */
const struct lock_ops *const *lock_versions(void);
/* "poll", "local", "notify"; and back (LOCK_WAIT_DEFAULT when unknown). */
const char *lock_wait_name(enum lock_wait w);
enum lock_wait lock_wait_parse(const char *name);

/* Creates a client for ops; NULL with err filled on failure (also when cfg->wait does
 * not suit the store). Free with lock_client_destroy. */
struct lock_client *lock_client_create(const struct lock_ops *ops, const struct lock_config *cfg,
                                       struct lock_error *err);
void lock_client_destroy(struct lock_client *lc);

/* Takes the lock on item for the calling thread, trying until wait_ms has passed (never
 * forever). Returns LOCK_OK (g filled), LOCK_TIMEOUT, LOCK_UNAVAILABLE or LOCK_ERROR. When rider is not
 * NULL its commands run right after the granting try, in the same round trip (or alone
 * right after the grant, for a lock kept in the process); its replies are there on
 * LOCK_OK. */
int lock_acquire(struct lock_client *lc, const char *item, long wait_ms, struct lock_grant *g,
                 struct lock_rider *rider, struct lock_error *err);
/* Gives the lock back. LOCK_OK, LOCK_EXPIRED, LOCK_STOLEN or LOCK_ERROR. When rider is
 * not NULL its commands run just before the release, in the same round trip. */
int lock_release(struct lock_client *lc, struct lock_grant *g, struct lock_rider *rider,
                 struct lock_error *err);
/* 1 when the lease is known to be lost: the keep-alive's renewal was refused, or the
 * lease's time ran out. */
int lock_grant_is_lost(struct lock_client *lc, const struct lock_grant *g);

/* 1 when a waiter in another process has asked for the lock since g was granted (it
 * was refused and said so on the lock's channel; notify only, else always 0). A holder
 * that serves more work under one grant gives it up early when asked. */
int lock_grant_is_wanted(struct lock_client *lc, const struct lock_grant *g);

/* The calling thread's connection to the data Redis, owned by the library (connected or
 * reconnected as needed); NULL with err filled when Redis is unreachable. Use it only on
 * this thread; call lock_redis_drop() after an I/O error on it. */
redisContext *lock_redis(struct lock_client *lc, struct lock_error *err);
void lock_redis_drop(struct lock_client *lc);

/* Appends one command (redisCommand's format) to r; -1 when r is full or out of memory. */
int lock_rider_add(struct lock_rider *r, const char *fmt, ...);
/* Appends one command given as argv; -1 when full or out of memory. */
int lock_rider_add_argv(struct lock_rider *r, int argc, const char **argv);
/* Frees the commands and the replies; r is empty again. */
void lock_rider_reset(struct lock_rider *r);

/* --- Lua scripts, embedded at build time, loaded with SCRIPT LOAD, run with EVALSHA. --- */
struct lock_script {
    const char *name;     /* file name without .lua */
    const char *source;   /* the script text */
    char sha[41];         /* written once, by the first load, before loaded is set */
    atomic_int loaded;    /* 1 once sha is known */
};

/* Runs script on c with nkeys keys then args (argv has nkeys + nargs strings). Loads it
 * when its sha is unknown and again after NOSCRIPT (a restarted Redis forgets scripts).
 * Returns the reply (caller frees with freeReplyObject) or NULL with err filled. An
 * error reply from the script itself is returned as a reply of type REDIS_REPLY_ERROR. */
redisReply *lock_script_eval(redisContext *c, struct lock_script *s, int nkeys, int nargs,
                             const char **argv, struct lock_error *err);
/* Loads s into the Redis behind c (SCRIPT LOAD) and records its sha. LOCK_OK or LOCK_ERROR. */
int lock_script_load(redisContext *c, struct lock_script *s, struct lock_error *err);

/* Sets err from a failed context or reply; returns LOCK_ERROR. */
int lock_fail(struct lock_error *err, redisContext *c, const char *what);

/* Monotonic milliseconds. */
long long lock_now_ms(void);
/* Sleeps ms milliseconds (restarted after signals). */
void lock_sleep_ms(long ms);

#endif
