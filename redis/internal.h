/* internal.h - What the Redis layer's files share: the connection, the client, the
 * reply reader. Only redis/ includes it (and hiredis). */
#ifndef REDIS_INTERNAL_H
#define REDIS_INTERNAL_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>

#include "redis/redis.h"

enum { RD_SCRIPTS_KNOWN = 16, RD_SERVERS_KNOWN = 64 };

/* One connection: a calling thread's (kept in the client's thread key) or a caller's
 * own (rd_conn_open). */
struct rd_conn {
    redisContext *c;
    int server;                   /* the locator's number of its server */
    long long used_ms;            /* monotonic: when it was last handed out */
    unsigned generation;          /* the locator's, when it was made (sentinel: the
                                     master's moves seen so far) */
    struct rd_client *listed;     /* in this client's list of connections (else NULL) */
    struct rd_conn *prev, *next;
    int deadline_set;             /* its timeout is a thread deadline's (rd_conn_deadline) */
    atomic_int gated;             /* a gated thread's (health.c may cut it loose) */
    /* Scripts loaded on this connection's server since it was made (SCRIPT LOAD), until
     * it said NOSCRIPT for one. Only the connection's thread uses it. */
    const struct rd_script *known[RD_SCRIPTS_KNOWN];
};

/* A calling thread's connections, one per server (a cluster's nodes), in the client's
 * thread key. */
struct rd_thread {
    struct rd_client *rc;
    int at;                       /* the server of the connection last handed out */
    /* health.c: the servers this thread's call entered, counted at their gate, probes */
    unsigned long long inside, called, gated, probe;
    struct rd_conn *conn[RD_SERVERS_KNOWN];
};

/* health.c: what one server (a cluster node) has shown this client. */
struct rd_health {
    atomic_int inside, peak;      /* gated callers inside a trip to it now, the most at
                                     once */
    atomic_llong stalled_ms;      /* a gated wait for it gave up then */
    atomic_llong answered_ms;     /* monotonic: its last answer */
    atomic_int calls;             /* callers inside a call to it now, gated or not */
    atomic_llong busy_ms;         /* when calls last went from 0 to 1 */
    atomic_llong down_ms;         /* marked down then (no answer in time); 0: up */
    atomic_llong probe_ms;        /* a probe may go from then */
    atomic_int probing;           /* a probe is under way */
    atomic_llong marked, refused_down, refused_full, waited;
};

struct rd_client {
    const struct rd_locator *locator;
    void *locator_state;          /* the locator's own (sentinel: struct sentinel) */
    char *host;
    int port;
    char *user, *password;
    long connect_timeout_ms, command_timeout_ms;
    void (*on_state)(void *arg, int up, const char *why);
    void *state_arg;
    pthread_key_t key;            /* the calling thread's struct rd_thread */
    atomic_int down;              /* 1 after on_state(0) was called, until a connect works */
    atomic_llong drops;
    atomic_llong changes;         /* drops, servers found unreachable, masters moved */
    atomic_llong opens;           /* connections opened: moves on every reconnect */
    /* The threads' connections and those of rd_conn_open, so that another thread can cut
     * the stale ones (rd_client_cut_stale); a connection leaves the list as it closes. */
    pthread_mutex_t conns_mu;
    struct rd_conn *conns;
    /* A cluster's redirects (rd_client_redirects). */
    atomic_llong moved, ask, tryagain, tryagain_wait_ms, map_reads;
    /* health.c: each server's state, and the gate (0: none) of the gated threads. */
    struct rd_health health[RD_SERVERS_KNOWN];
    atomic_int gate;
    atomic_int watched;           /* rd_client_watch ticks: probes are its own threads */
    atomic_int probes;            /* probe threads running */
    atomic_int gate_waiters;      /* gated callers waiting for a place (or about to) */
    pthread_mutex_t gate_mu;      /* for those waiters only */
    pthread_cond_t gate_cv;       /* a gated caller left a server (CLOCK_MONOTONIC) */
};

/* locate.c, sentinel.c and cluster.c: the locators. */
extern const struct rd_locator rd_single_locator, rd_sentinel_locator, rd_cluster_locator;


/* health.c (its header says how a node is marked down, and the gate) */
/* The calling thread t enters server for a call: RD_OK, or RD_FAIL with err (RD_E_CONNECT:
 * nothing sent) when the server is marked down and no probe is due, or its gate stays
 * full. Entering a server the thread is already in is free. */
int rd_health_enter(struct rd_client *rc, struct rd_thread *t, int server, struct rd_error *err);
/* rd_thread_conn for a call: the server entered first (rd_health_enter: a server marked
 * down, or its gate full, gives NULL at once, nothing sent), a failed connect marking it
 * down (unless the thread's own deadline cut it short), the connection marked gated when
 * the thread is. */
struct rd_conn *rd_health_conn(struct rd_client *rc, int server, struct rd_error *err);
/* The server answered (it is up; leave 1: the calling thread's call is done with it);
 * it did not in time, or refused a connect (marked down). */
void rd_health_answered(struct rd_client *rc, int server, int leave);
void rd_health_failed(struct rd_client *rc, int server);
/* The calling thread's call to server waits for a reason of its own (WAIT for replicas):
 * it does not count as waiting on a silent server. */
void rd_health_blocking(struct rd_client *rc, int server);
/* 1 when server is marked down now, or silent (rd_key_silent). */
int rd_health_is_down(struct rd_client *rc, int server);
/* 1 when the calling thread is gated (rd_thread_gate), rc marks servers down, and no other
 * thread watches (rd_client_watch): its reads look for silence as they wait (call.c's
 * trips_read). Where another thread watches, the watch cuts a gated read loose. */
int rd_health_watching(const struct rd_client *rc);
/* The calling thread's call ends: it leaves every server it entered. */
void rd_health_leave(struct rd_client *rc);
/* The same, for a call that went out and came back (answered, or failed after sending):
 * counted in the thread's trips (rd_thread_trips). */
void rd_health_trip_leave(struct rd_client *rc);
/* The client goes: waits for its probe threads to end. */
void rd_health_end(struct rd_client *rc);

/* reply.c: the reply reader's functions, making struct rd_reply (error replies typed). */
extern redisReplyObjectFunctions rd_reply_functions;
/* The fault of a broken context (connection or timeout), into err; RD_FAIL. */
int rd_context_error(const redisContext *c, const char *what, struct rd_error *err);

/* conn.c */
/* Connects to host:port within the client's timeouts, authenticates with the client's
 * credentials: the new connection, or NULL with err typed. */
struct rd_conn *rd_conn_connect(struct rd_client *rc, const char *host, int port,
                                struct rd_error *err);
/* The same with other credentials (a sentinel's). */
struct rd_conn *rd_conn_connect_as(struct rd_client *rc, const char *host, int port,
                                   const char *user, const char *password, struct rd_error *err);
/* ROLE says master. */
int rd_conn_is_master(struct rd_conn *cn);
/* The server no longer serves as it did (READONLY, LOADING, an error): the locator
 * forgets what it learnt, and the calling thread's connection is dropped. */
void rd_conn_moved(struct rd_client *rc);
/* The calling thread's connection to server (made or made again as needed); NULL with
 * err. The calls use rd_health_conn (health.c), which asks the server's health first. */
struct rd_conn *rd_thread_conn(struct rd_client *rc, int server, struct rd_error *err);
/* The calling thread's connections (made when create is 1); NULL when it has none. */
struct rd_thread *rd_thread_of(struct rd_client *rc, int create);
/* 1 when the calling thread has a deadline (rd_thread_deadline). */
int rd_thread_has_deadline(void);
/* Before a command on cn (one of the calling thread's): its timeout becomes what is left
 * of the thread's deadline (rd_thread_deadline), at most the command timeout, or the
 * command timeout again when the thread has none. RD_FAIL with err (RD_E_TIMEOUT) when
 * the deadline has passed: the command must not be sent. */
int rd_conn_deadline(struct rd_client *rc, struct rd_conn *cn, struct rd_error *err);
/* How long the calling thread may wait for a reply now: the command timeout, or what is
 * left of its deadline when that is less (<= 0: nothing). */
long rd_wait_left(const struct rd_client *rc);
/* Makes server's connection the calling thread's current one (what rd_drop and
 * rd_conn_failed act on). */
void rd_thread_at(struct rd_client *rc, int server);
/* The server of slot (RD_SLOT_NONE: the one the calling thread last used, else any), or
 * -1 with err. */
int rd_route(struct rd_client *rc, int slot, struct rd_error *err);
/* Tells the client's on_state that the deployment stopped (up 0, why) or started (up 1)
 * answering, once per change. */
void rd_tell_state(struct rd_client *rc, int up, const char *why);
/* After an error that leaves the connection unusable: drops it, counts it, tells on_state,
 * and the locator forgets where the server was. */
void rd_conn_failed(struct rd_client *rc, const struct rd_error *why);
/* Closes a connection of the calling thread's (taking it out of the lists first). */
void rd_thread_conn_close(struct rd_client *rc, struct rd_conn *cn);
/* Closes every connection of a thread's (when it ends, or the client goes). */
void rd_thread_free(struct rd_thread *t);
/* The master moved (the locator's stale() says so of the connections made before): every
 * thread's connection to the old one is shut down, so that a command waiting there for
 * an answer that a partition will never let through fails now, not at its timeout, and
 * its thread connects to the new master. Returns how many were cut. Any thread. */
int rd_client_cut_stale(struct rd_client *rc);
/* One command on a connection, blocking within its timeout. */
struct rd_reply *rd_conn_command(struct rd_conn *cn, int types, struct rd_error *err,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
