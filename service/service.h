/* service.h - The service's shared pieces: configuration, logging, the stock in Redis,
 * the sale's types, parsing and metrics. Each section names the file that defines it. */
#ifndef SERVICE_H
#define SERVICE_H

#include "common/item.h"
#include "lock/lock.h"

/* --- config.c: the configuration, from the flags. Set once by main() before any other
 * thread starts; read-only afterwards. --- */
struct service_config {
    char bind[64];
    int port;
    char redis_host[256];
    int redis_port;
    const struct lock_ops *ops;  /* the lock; `none` for the atomic baseline */
    const char *version;         /* the name answers and metrics show ("v8", "atomic") */
    int atomic;                  /* the atomic baseline: the whole sale is one script */
    int event_loop;              /* sales are queued to an engine: batch.c (atomic) or
                                    workers.c (--combine) */
    enum lock_wait wait;         /* as asked (LOCK_WAIT_DEFAULT: the version's) */
    int combine;                 /* sales served under one grant, at most (1: off) */
    int workers;                 /* --combine: worker threads, at most */
    const char *lock_masters;    /* redlock's masters, "HOST:PORT,..." (argv; NULL: none) */
    const char *sentinels;       /* --sentinel: ask these where the master is (NULL: none) */
    const char *cluster;         /* --redis-cluster: these seed nodes (NULL: no cluster) */
    const char *sentinel_master; /* its name, as the sentinels know it */
    const char *sentinel_user;   /* from SENTINEL_USER (NULL: the default user) */
    char sentinel_password[513]; /* from --sentinel-password-file or SENTINEL_PASSWORD */
    char redis_label[256];       /* "HOST:PORT" or "sentinel master NAME", for logs */
    int replicas;                /* WAIT for this many replicas before a grant or a
                                    sale's write counts */
    const char *redis_user;      /* from REDIS_USER (NULL: the default user) */
    char redis_password[513];    /* from --redis-password-file or REDIS_PASSWORD; "" none */
    long ttl_ms, wait_ms, retry_ms;
    long idem_ttl_ms;            /* how long an idempotency key's first answer is kept */
    int faults;                  /* teaching faults and the mutual-exclusion probe allowed */
    int max_conns;
    int max_streams;             /* /events streams at once */
    int no_events;               /* --no-events: nothing published for the live page */
    char name[64];               /* instance name, shown in answers and the ledger */
    char instance_id[33];        /* random hex, prefix of every lock owner id */
};
extern struct service_config svc;
extern struct rd_client *svc_redis;    /* the data Redis; created by main(), shared */
extern struct lock_client *svc_lock;   /* created by main(); shared by all threads */

/* Fills svc from argv, or prints why not (or --help, --list-versions) and exits. */
void config_parse(int argc, char **argv);

/* --- log.c: one line per event on stderr: time, level, instance, message. --- */
void log_event(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- store.c: the stock and the data Redis's health, through the Redis layer. --- */

/* rd_config.on_state for the data Redis: one log line when it goes, one when it is back. */
void store_log_state(void *arg, int up, const char *why);
/* 1 when Redis answers PING on this thread's connection. */
int store_ping(void);


/* --- parse.c: what the service parses itself (fuzzed by tests/fuzz_parse.c). --- */
/* A whole decimal 0..max (no sign, no space) into *out; 0, or -1 (out untouched). */
int parse_bounded(const char *s, long max, long *out);
/* A whole decimal integer, optional '-', as Redis keeps stock; 0, or -1. */
int parse_integer(const char *s, long long *out);
/* 1 when s is 1 to max characters, each a letter, a digit or one of extra; else 0. */
int token_is_valid(const char *s, size_t max, const char *extra);
/* An idempotency key's first answer, "STATUS REMAINING TOKEN INSTANCE [REQUEST]", with
 * STATUS 200 or 409; 0, or -1. */
int parse_record(const char *s, int *status, long long *remaining, long long *token,
                 char (*instance)[64]);

/* --- the sale's types; results.c maps each result to its answer. --- */
enum sale_result {
    SALE_OK, SALE_SOLD_OUT, SALE_LOCK_TIMEOUT, SALE_LOCK_UNAVAILABLE, SALE_REDIS_DOWN, SALE_UNKNOWN_ITEM,
    SALE_BAD_STOCK, SALE_LEASE_LOST, SALE_OUTCOME_UNKNOWN, SALE_KEY_REUSED, SALE_ERROR,
    SALE_RESULTS
};
/* Each result's answer and metric label, in one table. */
struct sale_result_info {
    unsigned http_status;
    const char *error;      /* the answer's "error" (NULL for a sale) */
    const char *metric;     /* inventory_sales_total{result=...} */
};
extern const struct sale_result_info sale_results[SALE_RESULTS];

/* store.c: reads stock and sold (GET /inventory); SALE_OK, SALE_UNKNOWN_ITEM,
 * SALE_BAD_STOCK or SALE_REDIS_DOWN; msg says why. */
enum sale_result store_read(const char *item, long long *stock, long long *sold, char *msg,
                            size_t msg_size);

struct sale_outcome {
    enum sale_result result;
    long long remaining;
    long long token;
    int lease_lost;         /* the lock said our lease was gone by the time we released */
    int replayed;           /* the first answer to this idempotency key, given again */
    int unreplicated;       /* outcome_unknown because fewer than --replicas replicas
                               acknowledged the write in time (replicas.c) */
    char instance[64];      /* replayed: the instance that sold it */
    char message[192];
};
enum { IDEM_KEY_MAX = 64, REQUEST_ID_MAX = 64 };
struct sale_request {
    const char *item;
    const char *idem_key;   /* Idempotency-Key (NULL: none): the sale is done at most once */
    const char *request_id; /* X-Request-Id, or the instance's own: in the ledger and logs */
    long work_ms;           /* fault: sleep between reading and writing stock */
    long release_gap_ms;    /* fault: sleep inside release */
    int nested;             /* fault: take the same lock again inside the sale */
    struct sale_outcome out;
};

/* --- results.c: from what Redis or the lock said to an outcome. --- */
/* Sets every request's result (and message, when not NULL). */
void sale_set_all(struct sale_request **rqs, int n, enum sale_result res, const char *msg);
/* A failed acquire (st, err) as every request's outcome. */
void sale_acquire_failed(int st, const struct lock_error *err, struct sale_request **rqs, int n);
/* A sale script's own error (lease_lost, key_reused ITEM, unknown_item, bad_stock; by its
 * code) or its replayed first answer, as rqs' outcomes: 1 when r was one of them. */
int sale_script_answer(const struct rd_reply *r, struct sale_request **rqs, int n);
/* GET stock:{item}'s reply: SALE_OK with *stock set, or why not (msg says). */
enum sale_result sale_stock_of(const struct rd_reply *r, const char *item, long long *stock,
                               char *msg, size_t msg_size);

/* --- sale.c: a sale under the lock. --- */
/* Serves rq alone, on the calling thread (thread per connection). */
void sale_run(struct sale_request *rq);

/* Where the sales of one item come from while a grant is held, and where they go once
 * answered: a worker's line (workers.c, --combine). Called on the serving thread. */
enum { SALE_BATCH_MAX = 256 };
struct sale_line {
    /* Takes up to room more waiting sales into rqs after the have already there; returns
     * how many. A sale with an idempotency key goes alone: never taken into a batch that
     * has one, nor one added to its. */
    int (*take)(void *arg, struct sale_request **rqs, int have, int room);
    /* 1 when sales are waiting to be taken, waiting for one until the monotonic time
     * until_ms (now or earlier: no wait). */
    int (*has_more)(void *arg, long long until_ms);
    /* rqs[0..n) have their outcomes: answer them. */
    void (*answer)(void *arg, struct sale_request **rqs, int n);
    /* 1 when a next batch is worth waiting linger_ms for: the line's sales come close
     * together (the next sale of one item among a thousand comes long after). */
    int (*lingers)(void *arg);
    void *arg;
    long hold_ms;        /* serve batch after batch under one grant at most this long */
    long linger_ms;      /* wait this long for a next batch before giving the grant back */
};
/* Takes the lock for first's item (waiting up to wait_ms) and serves first with up to
 * --combine - 1 sales taken from line, in one critical section: one read, one write.
 * While more sales wait and the grant is younger than line->hold_ms, serves them too,
 * batch after batch, without giving the lock back: the stock is the one this grant
 * wrote. Every batch goes to line->answer once sold. */
void sale_serve(struct sale_request *first, long wait_ms, const struct sale_line *line);

/* --- sale_write.c: the sale's write under the lock (service/scripts/sale_write*.lua). --- */
/* Makes sure Redis has the write scripts before a grant is taken: the write rides ahead
 * of the release, where a script Redis lacks could not be sent again. LOCK_OK or
 * LOCK_ERROR (cheap once loaded: the Redis layer remembers). */
int sale_write_prepare(const char *item, struct lock_error *err);
/* The write of k of the n sales rqs on stock read under g (batch: its number within the
 * grant), appended to b as one script call. LOCK_OK or LOCK_ERROR. */
int sale_write_add(struct rd_batch *b, const struct lock_grant *g, long long stock, long long k,
                   int batch, struct sale_request **rqs, int n, struct lock_error *err);
/* Maps the write's reply for k sales onto the batch; returns how many it sold (0 for a
 * replayed answer or a reused key), -1 when the write failed (the outcomes say why). */
long long sale_write_result(const struct rd_reply *r, long long k, struct sale_request **rqs,
                            int n);

/* --- idem.c: an Idempotency-Key's records --- */
/* Its first answer's key, beside the item (idem:{I}:K, the same hash slot). */
void sale_idem_record(const struct sale_request *rq, char (*record)[ITEM_MAX + IDEM_KEY_MAX + 16]);
/* Binds rq's key to rq's item (idem-item:K), before the sale: 0 when it is new or already
 * bound to this item; -1 with rq's outcome set when it was first used for another item
 * (key_reused) or Redis could not say. */
int sale_idem_bind(struct sale_request *rq);

/* --- sale_atomic.c: the atomic baseline, the whole sale in one script. --- */
/* The atomic script's call for the n sales rqs of one item (a sale with an idempotency
 * key goes alone), appended to b. LOCK_OK or LOCK_ERROR (too many sales, no memory). */
int sale_atomic_add(struct rd_batch *b, struct sale_request **rqs, int n, struct lock_error *err);
/* The outcomes of its reply. */
void sale_atomic_result(const struct rd_reply *r, struct sale_request **rqs, int n);
/* One atomic sale on the calling thread. */
void sale_atomic_run(struct sale_request *rq);

/* --- replicas.c: the sale's write confirmed by WAIT (--replicas N). --- */
/* Appends WAIT N (lock_replicas_wait_ms) to b, to be sent right after the write on the
 * same connection; returns its index in b (where it would be, had it not gone in: then no
 * reply confirms the write), or -1 without --replicas (nothing added). */
int sale_replicas_add(struct rd_batch *b);
/* After the round trip: when the WAIT at index at of b (-1: none) did not answer N or
 * more, every sold sale of rqs[0..n) answers outcome_unknown instead (marked unreplicated,
 * counted); others (sold out, ...) keep their outcome. Returns how many were turned. */
int sale_replicas_check(const struct rd_batch *b, int at, struct sale_request **rqs, int n);

/* --- probe.c: the mutual-exclusion probe (--faults): who is inside the critical section. */
/* Enter: id joins probe:{item}; an overlap is counted when someone else is inside. */
void probe_enter(const char *item, const char *id);
/* Leave: appends the command that takes id out of probe:{item} to b, the batch that
 * leaves the critical section (just before the write, before the lock is given back). */
int probe_leave_add(struct rd_batch *b, const char *item, const char *id, struct lock_error *err);

/* --- faults.c: the teaching faults, as hooks the sale calls at named points. --- */
/* Inside the critical section, between the read and the write, for the sale's lead
 * request: the nested acquire (nested=1), then the work (work_ms, when k > 0). 0, or -1
 * when the nested acquire failed (the lead's outcome says why). */
int faults_inside(const struct lock_grant *g, struct sale_request *lead, long long k);
/* The pause a release takes between its steps (release_gap_ms), or NULL for none. The
 * caller keeps *p alive until the release returns. */
const struct lock_pause *faults_release_pause(const struct sale_request *lead,
                                              struct lock_pause *p);

/* --- metrics.c: counters updated atomically by any thread. --- */
void metrics_sale(enum sale_result r);
void metrics_bad_request(void);
void metrics_in_flight(int delta);
long long metrics_in_flight_now(void);
void metrics_lock_wait(long long waited_ms);
/* A sale that waited in a worker's line to its wait limit (no acquire was tried). */
void metrics_line_timeout(void);
void metrics_batch(int n);
void metrics_replay(void);
/* n sales answered outcome_unknown: their write fell short of --replicas (replicas.c). */
void metrics_unreplicated(int n);
void metrics_sale_latency(long long us);
void metrics_overlap(void);
/* Renders the Prometheus text; the caller frees it. NULL when out of memory. */
char *metrics_render(size_t *len);

#endif
