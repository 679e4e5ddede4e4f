/* redis.h - The Redis layer: the only code that includes hiredis.
 *
 * A struct rd_client stands for one Redis deployment (the data Redis, or one redlock
 * master). It owns one connection per calling thread (a hiredis context is not
 * thread-safe), made on first use with a connect timeout, authenticated, given a
 * command timeout, and made again after the server closed it or an error broke it.
 *
 * Commands go alone (rd_call) or in batches the caller builds and owns (struct
 * rd_batch): rd_round_trip sends a batch before, a main batch and a batch after in
 * one write and reads every reply, so that what travels together is visible in the
 * caller's arguments. Scripts are called by their SHA (computed at build time); the
 * one NOSCRIPT path loads a script and sends it again (with what follows it).
 *
 * Every error is typed where it is found (struct rd_error, below): an error reply by its code
 * (NOSCRIPT, READONLY, MOVED, ...), a broken or silent connection by what hiredis saw.
 *
 * Where a key's server is: a table of operations (struct rd_locator, as redis's
 * ConnectionType reaches every transport through one table): one address, Redis
 * Sentinel (ask the sentinels, confirm with ROLE, follow +switch-master), or Redis
 * Cluster (a slot map; MOVED, ASK and TRYAGAIN followed in the round trip). Each
 * command's keys are found as it is added to a batch: keys of two slots in one command
 * are refused before anything is sent, on one Redis as on a cluster, and a round trip
 * goes to the server of its first command with keys (on a cluster, the caller sends
 * what goes to other nodes in round trips of their own: rd_key_server).
 */
#ifndef REDIS_REDIS_H
#define REDIS_REDIS_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include "common/error.h"

/* --- errors: the layer's own kinds --- */

/* What a call did: the generic result's two values. */
enum rd_status {
    RD_OK = RESULT_OK,
    RD_FAIL = RESULT_ERROR
};

/* Why: the error codes Redis answers with (a reply "-NOSCRIPT ..." is RD_E_NOSCRIPT), or
 * what happened to the connection. */
enum rd_fault {
    RD_E_NONE = 0,
    RD_E_CONNECTION,  /* the connection broke (EOF, reset) after a command was sent: it
                         may or may not have run */
    RD_E_CONNECT,     /* could not connect (or find the master): nothing was sent */
    RD_E_TIMEOUT,     /* connected, but no answer within the command timeout */
    RD_E_AUTH,        /* NOAUTH, WRONGPASS, NOPERM: the credentials were refused */
    RD_E_LOADING,     /* LOADING: Redis is loading its data set */
    RD_E_READONLY,    /* READONLY: a replica (a demoted master) refused a write */
    RD_E_NOSCRIPT,    /* NOSCRIPT: Redis does not have the script (restarted, flushed) */
    RD_E_BUSY,        /* BUSY: a script runs past the busy limit */
    RD_E_NOREPLICAS,  /* NOREPLICAS: fewer replicas than min-replicas-to-write */
    RD_E_MOVED,       /* MOVED: (cluster) the key's slot lives on another node */
    RD_E_ASK,         /* ASK: (cluster) the key's slot is being migrated */
    RD_E_TRYAGAIN,    /* TRYAGAIN: (cluster) a multi-key command during a migration */
    RD_E_CLUSTERDOWN, /* CLUSTERDOWN: (cluster) the cluster cannot serve */
    RD_E_REPLY,       /* any other error reply; a script's own error (its code in
                         rd_error.code: "lease_lost", "key_reused", ...) */
    RD_E_PROTOCOL,    /* a reply of a type the caller did not expect */
    RD_E_USAGE,       /* the caller's mistake: a bad argument, a missing setting */
    RD_E_NOMEM        /* out of memory, or a fixed table is full */
};

/* Filled by a call that failed (the caller supplies it). */
struct rd_error {
    enum rd_fault fault;
    char code[24];      /* RD_E_REPLY: the error's code, its first word ("lease_lost") */
    char msg[128];      /* one line for a log, no newline; never a password */
};

/* Fills err (when not NULL); returns RD_FAIL. */
int rd_fail(struct rd_error *err, enum rd_fault fault, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 1 when the server is gone or not the one to write to (connection, connect, timeout,
 * loading, readonly): the caller's connection is dropped, the next call connects again. */
int rd_fault_is_io(enum rd_fault fault);
/* 1 when a cluster could not serve the command now (MOVED or ASK not followed, TRYAGAIN
 * past the layer's wait, CLUSTERDOWN): nothing of it ran; Redis may serve it soon. */
int rd_fault_is_cluster(enum rd_fault fault);
/* "connection", "noscript", ...: the fault's name. */
const char *rd_fault_name(enum rd_fault fault);
/* The boundary: from as the layers above see it (common/error.h): the connection's
 * faults as they are, a cluster's that could not serve as FAULT_MOVING, NOSCRIPT and BUSY
 * as FAULT_REPLY with their code; code and line copied. */
void rd_error_map(const struct rd_error *from, struct error *to);

/* --- replies --- */

enum rd_type { RD_STRING = 1, RD_ARRAY, RD_INTEGER, RD_NIL, RD_STATUS, RD_ERROR };
/* A set of reply types, for the calls that check one: RD_T(RD_INTEGER) | RD_T(RD_NIL). */
#define RD_T(type) (1 << (type))

/* One reply, as read. Freed with rd_reply_free by whoever received it. */
struct rd_reply {
    enum rd_type type;
    enum rd_fault fault;        /* RD_ERROR: its kind, typed from its code */
    long long integer;          /* RD_INTEGER */
    char *str;                  /* RD_STRING, RD_STATUS, RD_ERROR: NUL-terminated */
    size_t len;
    struct rd_reply **element;  /* RD_ARRAY */
    size_t elements;
};
void rd_reply_free(struct rd_reply *r);
/* Fills err from an RD_ERROR reply (fault, code, message) and returns RD_FAIL. */
int rd_reply_error(const struct rd_reply *r, struct rd_error *err);
/* r when its type is in types; else NULL with err filled (an error reply typed, another
 * type RD_E_PROTOCOL naming what), r freed. NULL in, NULL out (err untouched). */
struct rd_reply *rd_expect(struct rd_reply *r, int types, const char *what,
                           struct rd_error *err);

/* --- slots (Redis Cluster's: every key is in one of 16384) --- */

enum { RD_SLOTS = 16384, RD_SLOT_NONE = -1, RD_SLOT_CROSS = -2 };
/* CRC16 of the key's hash tag ({...}, when not empty) or of the whole key, mod 16384. */
unsigned rd_key_slot(const char *key, size_t len);
/* The slot of a command formatted in RESP (as redisFormatCommand writes it): of its keys,
 * found by the command's name; RD_SLOT_NONE for a command without keys (WAIT, PING,
 * SCRIPT ...), RD_SLOT_CROSS when its keys are in two slots. */
int rd_command_slot(const char *cmd, size_t len);

/* --- servers --- */

#define RD_SERVERS_MAX 9
struct rd_server {
    char host[256];
    int port;
};
/* Parses "HOST:PORT,HOST:PORT,..." into out (at most max): how many, or -1 when an entry
 * is malformed, a port is not 1 to 65535, or there are more than max. */
int rd_servers_parse(const char *list, struct rd_server *out, int max);

/* --- scripts --- */

/* A Lua script, embedded at build time with its SHA1 (build/lua_scripts.h). */
struct rd_script {
    const char *name;     /* file name without .lua */
    const char *source;
    const char *sha;      /* 40 hex digits */
};

/* --- clients --- */

struct rd_client;
/* Makes sure the server of key (NULL: the one the calling thread last used) has s
 * (SCRIPT LOAD on the calling thread's connection to it, once per connection, and again
 * after Redis said NOSCRIPT for it). For a script that will be sent before another
 * command in one round trip, where NOSCRIPT cannot be mended by sending it again.
 * RD_OK, or RD_FAIL with err typed. */
int rd_script_load(struct rd_client *rc, const struct rd_script *s, const char *key,
                   struct rd_error *err);

struct rd_client;
struct rd_locator;

/* Settings of a client, copied by rd_client_create. */
struct rd_config {
    const char *host;           /* the server (or the first of a deployment) */
    int port;
    const char *sentinels;      /* "HOST:PORT,...": ask these sentinels where the master
                                   named sentinel_master is, and follow its moves (host
                                   and port are then unused); NULL: none */
    const char *sentinel_master;
    const char *cluster;        /* "HOST:PORT,...": Redis Cluster, these its seed nodes
                                   (host and port are then unused); NULL: no cluster */
    const char *sentinel_user;  /* the sentinels' credentials; NULL: none */
    const char *sentinel_password;
    const char *user;           /* ACL user; NULL: the default user */
    const char *password;       /* NULL: none. Never logged; wiped when the client goes */
    long connect_timeout_ms;    /* 0: 1000 */
    long command_timeout_ms;    /* 0: 5000 */
    /* Optional: called on the calling thread when the deployment stops or starts
     * answering (up 0 with why, up 1 once again), for the caller's log. */
    void (*on_state)(void *arg, int up, const char *why);
    void *state_arg;
};

/* NULL with err filled when cfg cannot be used (a bad sentinel list, out of memory).
 * Connects lazily: a server that is down now is not an error here. With sentinels, a
 * move of the master shuts down (shutdown(2)) the connections other threads hold to the
 * old one, also while they write: the process must ignore SIGPIPE (the service does). */
struct rd_client *rd_client_create(const struct rd_config *cfg, struct rd_error *err);
/* Frees the client and the calling thread's connection. Call it once every other thread
 * that used the client has exited (their connections are freed as each exits). */
void rd_client_destroy(struct rd_client *rc);
/* The way this client finds its server: "single", "sentinel" or "cluster". */
const char *rd_client_locator(const struct rd_client *rc);
/* Connections dropped (an error broke it, the server closed it, or its master moved: the
 * next use connects again), since creation. */
long long rd_client_drops(const struct rd_client *rc);
/* What may have lost an answered write, counted since creation: connections dropped, a
 * server found unreachable, a master that moved (Sentinel). Never moves in a steady run. */
long long rd_client_changes(const struct rd_client *rc);
/* Connections opened, since creation: it moves whenever a thread connects again (after
 * an error, a failover, a restart of the server). */
long long rd_client_opens(const struct rd_client *rc);
/* What a cluster said since the client was made: replies that sent a command elsewhere
 * (MOVED, ASK) or asked it to wait (TRYAGAIN), the time spent waiting those out, and
 * how many times the slot map was read. */
struct rd_redirects {
    long long moved, ask, tryagain, tryagain_wait_ms, map_reads;
};
void rd_client_redirects(const struct rd_client *rc, struct rd_redirects *out);
/* A cluster node as this client has seen it (rd_client_health). */
struct rd_node_health {
    char node[272];               /* "HOST:PORT" */
    int down;                     /* marked down now: no answer in time, calls fail at once
                                     until a probe is answered */
    int inside, peak;             /* gated callers (rd_thread_gate) inside a call to it
                                     now, and the most at once */
    long long marked;             /* times it was marked down */
    long long refused_down, refused_full;   /* calls failed at once: marked down; its gate
                                               full and the node silent */
    long long waited;             /* gated callers that found its gate full and waited */
};
/* Server number server's health (rd_key_server's numbers, 0 up): RD_OK, or RD_FAIL when
 * the client has no such server or marks none down (not a cluster). */
int rd_client_health(struct rd_client *rc, int server, struct rd_node_health *out);
/* At most most of the gated threads (rd_thread_gate) inside a call to one cluster node at
 * once (0: no cap; the default). A gated caller that finds its node's cap reached waits
 * up to RD_SILENT_MS for a reply to free a place, else fails at once (RD_E_CONNECT, not
 * sent). */
void rd_client_gate(struct rd_client *rc, int most);
/* The number of the cluster node that serves key as far as the client's map says, asking
 * no one (rd_key_server's numbers); -1 when it does not know, and on one Redis. Never
 * blocks. */
int rd_key_node(struct rd_client *rc, const char *key);
/* 1 when the cluster node that serves key (as far as the client knows, asking no one)
 * is not answering: marked down, or a call has waited on it RD_SILENT_MS with no answer
 * from it meanwhile (a call for it now would wait too). 0 otherwise, and on one Redis.
 * Never blocks. */
enum { RD_SILENT_MS = 100 };
int rd_key_silent(struct rd_client *rc, const char *key);
/* Looks at every cluster node a call waits on: one silent for RD_SILENT_MS is given up
 * (marked down, the gated threads' connections to it shut down, so that their calls fail
 * now). For a thread that ticks (the service's reaper): a node that stops answering while
 * every caller waits on something is found without a new call. Never blocks. */
void rd_client_watch(struct rd_client *rc);
/* The calling thread is one of the callers the gate counts (1) or not (0: the default). */
void rd_thread_gate(int on);
/* Each gated round trip of the calling thread adds 1 to *trips as it ends, answered or failed
 * once sent (NULL: none; a call that sent nothing adds nothing): another thread can tell
 * that the caller's first trip of a task has come back. */
void rd_thread_trips(atomic_long *trips);
/* The calling thread's calls go to a node marked down all the same, each bounded by the
 * thread's deadline (rd_thread_deadline), and an answer marks the node up: a renewal
 * lane's (lock/keepalive.c). A node given up for a stall it came out of (a busy machine,
 * an fsync) must not cost the leases it holds while it answers again. */
void rd_thread_past_down(int on);
/* Forgets the calling thread's connection (after an error the layer did not see). */
void rd_drop(struct rd_client *rc);

/* --- batches: commands sent in one round trip, built and owned by the caller --- */

enum { RD_BATCH_MAX = 64 };
struct rd_batch {
    int n;
    char *buf;                          /* RESP commands, back to back */
    size_t len;
    size_t off[RD_BATCH_MAX + 1];       /* where command i starts in buf */
    const struct rd_script *script[RD_BATCH_MAX]; /* command i's script; NULL: plain */
    struct rd_reply *reply[RD_BATCH_MAX]; /* after a round trip: command i's reply (error
                                            replies typed), NULL when none came */
    int sent;                           /* 1 once handed to a connection: after an error,
                                           what has no reply may have been done */
    int keyed;                          /* 1 once a command with keys was added: */
    unsigned slot;                      /* the slot of the first such command's keys */
};
/* Appends one command (redisCommand's format: %s, %b, %d ...); RD_OK, or RD_FAIL
 * with err filled (full, out of memory, or keys of two slots in the command:
 * RD_E_USAGE, what Redis Cluster would refuse as CROSSSLOT). */
int rd_batch_add(struct rd_batch *b, struct rd_error *err, const char *fmt, ...);
int rd_batch_vadd(struct rd_batch *b, struct rd_error *err, const char *fmt, va_list ap);
/* Appends one command given as argc strings. */
int rd_batch_add_argv(struct rd_batch *b, int argc, const char **argv, struct rd_error *err);
/* Appends EVALSHA of s with nkeys keys then nargs arguments (argv has nkeys + nargs). */
int rd_batch_add_eval(struct rd_batch *b, const struct rd_script *s, int nkeys, int nargs,
                      const char **argv, struct rd_error *err);
/* Frees the commands and the replies: b is empty again. */
void rd_batch_reset(struct rd_batch *b);

/* Sends before (may be NULL), main and after (may be NULL) in one write, in that order,
 * on the calling thread's connection to the server of their slot, and reads every reply
 * into the batches. The one NOSCRIPT path: a script of main that Redis did not have is
 * loaded and sent again, with all of after (which ran before it could see the script's
 * effect); before is never sent twice. On a cluster, commands that were redirected
 * (MOVED, ASK) or told to wait (TRYAGAIN) are sent again where Redis says, when none
 * after them ran (else their replies stay as Redis gave them: nothing of theirs ran);
 * TRYAGAIN for at most RD_TRYAGAIN_MS. RD_OK when every reply came (each may be an
 * error reply: look at them), else RD_FAIL with err typed (the connection is dropped;
 * replies that came are kept). */
enum { RD_TRYAGAIN_MS = 1000 };
int rd_round_trip(struct rd_client *rc, struct rd_batch *before, struct rd_batch *main,
                  struct rd_batch *after, struct rd_error *err);

/* Several round trips at once (rd_round_trip's contract for each, status and err its
 * own): every trip is sent, to the server of its first command's keys, before any is
 * read, so that trips to a cluster's nodes overlap (one to each, say). */
struct rd_trip {
    struct rd_batch *before, *main, *after;
    int status;                   /* RD_OK or RD_FAIL, as rd_round_trip returns */
    struct rd_error err;
    int slot_, server_;           /* the layer's */
    int deadline_;                /* the layer's: sent under the thread's deadline */
    struct rd_conn *cn_;
};
void rd_round_trips(struct rd_client *rc, struct rd_trip *trips, int n);

/* Sets a deadline (monotonic ms, clock_now_ms's; 0: none) for the calling thread's
 * commands from now on: each waits for its reply no longer than the time left (a
 * watchdog renewing a lease must not wait on one server past the lease). A command that
 * misses it fails as a timeout, and its connection is closed (its late reply would be
 * read as the answer to the next command). */
void rd_thread_deadline(long long until_ms);

/* --- one command --- */

/* Runs the one command of b, with before and after (either may be NULL) around it in
 * one round trip. Returns its reply when its type is in types (caller frees), else NULL
 * with err typed (what names the command in it). b is reset; before and after keep
 * their replies. */
struct rd_reply *rd_call_batch(struct rd_client *rc, struct rd_batch *before, struct rd_batch *b,
                               struct rd_batch *after, int types, const char *what,
                               struct rd_error *err);
/* Runs one command (redisCommand's format). Returns its reply when its type is in
 * types (caller frees with rd_reply_free), else NULL with err typed. */
struct rd_reply *rd_call(struct rd_client *rc, int types, struct rd_error *err,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same for a script: nkeys keys then nargs arguments. */
struct rd_reply *rd_eval(struct rd_client *rc, const struct rd_script *s, int types, int nkeys,
                         int nargs, const char **argv, struct rd_error *err);
/* Sends the one command of b to each of n clients at once, then reads each reply within
 * that client's command timeout: replies[i] is client i's (an error reply typed), or NULL
 * when it could not be reached or did not answer (its connection is dropped). A script
 * that a server did not have is loaded there and sent again. Returns how many answered. */
int rd_fanout(struct rd_client *const *rcs, int n, struct rd_batch *b, struct rd_reply **replies);

/* --- a connection of the caller's own (a subscriber's) --- */

struct rd_conn;
/* A new connection to the server of key (NULL: the client's server; the master, with
 * Sentinel; any master of a cluster), not shared with any thread's; NULL with err. */
struct rd_conn *rd_conn_open(struct rd_client *rc, const char *key, struct rd_error *err);
/* Sends one command without reading its reply (a subscriber's: it comes as a message). */
int rd_conn_send(struct rd_conn *cn, struct rd_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Waits up to timeout_ms for any of n connections to have a reply to read: its index,
 * or -1 when none has. */
int rd_conn_poll(struct rd_conn *const *cns, int n, long timeout_ms);
/* The server that serves key now, as a number that names it while the client lives
 * (0 but on a cluster: a node's), or -1 with err when none does. */
int rd_key_server(struct rd_client *rc, const char *key, struct rd_error *err);
/* A reply (a subscriber's) said MOVED: the slot map notes where the slot is now. */
void rd_client_moved(struct rd_client *rc, const struct rd_reply *r);
/* The number of the server that cn goes to (rd_key_server's). */
int rd_conn_server(const struct rd_conn *cn);
/* Sends one command and reads its reply (rd_call's contract); timeout_ms 0: block. */
struct rd_reply *rd_conn_call(struct rd_conn *cn, int types, long timeout_ms,
                              struct rd_error *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Reads the next reply pushed on it (a subscriber's message), blocking until one comes;
 * NULL when the connection ends, or is silent idle_ms, then idle_ms more after a PING
 * (a server behind a partition sends no reset; a subscriber's PING answer, ["pong", ""],
 * is returned like any message). idle_ms 0: no PING, wait for ever. */
struct rd_reply *rd_conn_read(struct rd_conn *cn, long idle_ms);
/* Ends a blocked rd_conn_read from another thread. */
void rd_conn_shutdown(struct rd_conn *cn);
void rd_conn_close(struct rd_conn *cn);

/* --- where a key's server is --- */

/* One way of finding the server that serves a key, as a table of operations (locate.c
 * has "single", sentinel.c "sentinel": ask, confirm with ROLE, follow +switch-master;
 * cluster.c "cluster": a slot map, read again on MOVED; rd_client_create picks one from
 * rd_config). A locator keeps its own state in the client. Servers are numbered (a
 * cluster's nodes; 0 for the others): a thread keeps a connection per number. */
struct rd_locator {
    const char *name;
    int (*init)(struct rd_client *rc, const struct rd_config *cfg, struct rd_error *err);
    void (*destroy)(struct rd_client *rc);
    /* Optional: the number of the server for slot (RD_SLOT_NONE: any), or -1 with err
     * when none serves it; without it, every slot is server 0's. */
    int (*route)(struct rd_client *rc, int slot, struct rd_error *err);
    /* Opens a connection (struct rd_conn) to server number server, authenticated, with
     * the connect timeout; NULL with err. */
    struct rd_conn *(*open)(struct rd_client *rc, int server, struct rd_error *err);
    /* Optional (cluster): Redis answered "MOVED slot host:port" (or, with moved 0, "ASK
     * slot host:port"): the number of that server (the slot map notes a MOVED), or -1. */
    int (*redirected)(struct rd_client *rc, const struct rd_reply *r, int moved);
    /* Optional: the server may have moved (an error, READONLY): forget where it was. */
    void (*forget)(struct rd_client *rc);
    /* Optional: 1 when cn goes to a server that no longer serves (it moved since). */
    int (*stale)(struct rd_client *rc, const struct rd_conn *cn);
    int check_each_use;   /* 1: ask before each use whether the server closed the
                             connection (the master may have moved) */
    int marks_down;       /* 1: a server that did not answer in time is marked down
                             (health.c: a cluster's nodes) */
    /* Optional: the server of slot by what is known now, never asking anyone (-1: none
     * known). */
    int (*peek)(struct rd_client *rc, int slot);
    /* Optional: server's "HOST:PORT" into buf; RD_OK, or RD_FAIL when there is none. */
    int (*describe)(struct rd_client *rc, int server, char *buf, size_t size);
};

#endif
