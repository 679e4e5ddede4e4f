/* engine.h - How sales are served: a table of operations, one entry per engine, chosen
 * once at start-up from the flags (engine_choose), as a lock version is by name. Nothing
 * else asks the flags again.
 *
 *   thread   a locked sale per connection, on the connection's own thread: each version's
 *            code stays a plain sequence of calls, and a wait blocks that thread alone
 *   workers  locked sales on an event loop (--combine N): an item's waiting sales served
 *            several under one grant, by at most --workers threads (sale/workers.c)
 *   atomic   the atomic sale on an event loop: no lock; the store sells each item's
 *            waiting sales whole (sale/atomic.c)
 */
#ifndef SALE_ENGINE_H
#define SALE_ENGINE_H

#include <stdio.h>

#include "lock/lock.h"
#include "service/store/request.h"

/* A sale whose connection is suspended until an engine has answered it. Allocated by
 * the HTTP handler, freed when the HTTP side says the request is complete. The engines
 * know the connection only as the HTTP side's pointer, handed back to its resume. */
struct sale_job {
    struct sale_request rq;
    char item[ITEM_MAX + 1];
    char idem_key[IDEM_KEY_MAX + 1];
    char request_id[REQUEST_ID_MAX + 1];
    long long started_us;         /* monotonic: when the request was read */
    void *conn;                   /* the HTTP side's suspended connection */
    void (*resume)(void *conn);   /* the HTTP side's: resumes conn, its answer ready */
    int done;                     /* rq.out is set; written before the resume */
    int answered;                 /* the handler queued its answer (http.c) */
    long long deadline_ms;        /* monotonic: a locked sale waits no longer */
    struct sale_job *next;        /* the engine's queue */
};

/* A sale whose item's store server is not answering (a spread store's item_silent) is
 * answered 503 at once, its connection resumed: 1 when j was answered so (j may then be
 * freed at once), else 0. Never blocks. */
int engine_answer_silent(struct sale_job *j);
/* 1 when item's store server is not answering now (a spread store's item_silent). */
int engine_item_silent(const char *item);
/* Answers j 503 (store down: its server is not answering, nothing sent) and resumes it. */
void engine_answer_down(struct sale_job *j);

/* Marks j answered (rq.out set) and resumes its connection; j may be freed at once. */
static inline void engine_resume(struct sale_job *j)
{
    j->done = 1;
    j->resume(j->conn);
}

struct engine {
    const char *name;             /* "thread", "workers", "atomic" */
    /* A sale that is no lock version says here what it is (--help, --list-versions); the
     * lock versions' entries leave these NULL (lock_ops says it). */
    const char *alias, *title, *flaw;
    int locked;                   /* 1: its sales take the lock (the teaching faults apply) */
    int event_loop;               /* 1: connections are suspended and sales queued (submit);
                                     0: each connection's thread serves its sale (run) */
    int (*start)(void);           /* 0, or -1 when its threads cannot start */
    void (*stop)(void);           /* answers what is queued; later sales answer at once */
    void (*run)(struct sale_request *rq);     /* thread: serves rq on the calling thread */
    void (*submit)(struct sale_job *j);       /* event loop: queues j (its connection
                                                 suspended); resumed once answered */
};

extern const struct engine engine_thread, engine_workers, engine_atomic;

/* The engine for --lock lock_name and --combine combine (wait: --wait, as asked), and
 * the lock version in *ops (NULL for a sale without a lock); NULL with why filled when
 * the flags do not go together. */
const struct engine *engine_choose(const char *lock_name, int combine, enum lock_wait wait,
                                   const struct lock_ops **ops, char *why, size_t size);
/* Prints every version the instance runs: the lock versions, then the sales without a
 * lock; tsv: one tab-separated line each (name, alias, technique, flaw). */
void engine_print_versions(FILE *out, int tsv);

#endif
