/* pipeline.h - The atomic sale on an event loop (see pipeline.c). */
#ifndef PIPELINE_H
#define PIPELINE_H

#include <microhttpd.h>

#include "service/service.h"

/* A sale whose connection is suspended until the pipeline has answered it. Allocated by
 * the HTTP handler, freed when libmicrohttpd says the request is complete. Atomic sales
 * go to the pipeline thread; locked ones (--combine N) to their item's worker. */
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
    struct sale_job *next;        /* the pipeline's queue */
};

/* Starts and stops the pipeline's thread; start returns -1 when it cannot. */
int pipeline_start(void);
void pipeline_stop(void);
/* Queues j (its connection already suspended); the thread resumes it when answered. */
void pipeline_submit(struct sale_job *j);

#endif
