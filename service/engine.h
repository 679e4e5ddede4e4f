/* engine.h - The two event-loop engines: sales whose connections libmicrohttpd has
 * suspended, served in batches instead of a thread each. batch.c sends the atomic sales
 * of a round as one script per item in one write; workers.c serves locked sales
 * (--combine N) several under one grant, on a bounded number of worker threads. */
#ifndef ENGINE_H
#define ENGINE_H

#include <microhttpd.h>

#include "service/service.h"

/* A sale whose connection is suspended until an engine has answered it. Allocated by
 * the HTTP handler, freed when libmicrohttpd says the request is complete. */
struct sale_job {
    struct sale_request rq;
    char item[ITEM_MAX + 1];
    char idem_key[IDEM_KEY_MAX + 1];
    char request_id[REQUEST_ID_MAX + 1];
    long long started_us;         /* monotonic: when the request was read */
    struct MHD_Connection *conn;
    int done;                     /* rq.out is set; written before the resume */
    int answered;                 /* the handler queued its answer (http.c) */
    long long deadline_ms;        /* monotonic: a locked sale waits no longer */
    struct sale_job *next;        /* the engine's queue */
};

/* Marks j answered (rq.out set) and resumes its connection; j may be freed at once. */
static inline void engine_resume(struct sale_job *j)
{
    j->done = 1;
    MHD_resume_connection(j->conn);
}

/* batch.c: the atomic sale. start returns -1 when it cannot. */
int batch_start(void);
void batch_stop(void);
/* Queues j (its connection already suspended); the thread resumes it when answered. */
void batch_submit(struct sale_job *j);

/* workers.c: locked sales, combined. */
int workers_start(void);
void workers_stop(void);
void workers_submit(struct sale_job *j);

#endif
