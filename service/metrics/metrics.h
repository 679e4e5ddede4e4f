/* metrics.h - The instance's counters for /metrics, updated atomically by any thread and
 * rendered in the Prometheus text format with the lock's, the store's and the live
 * page's own. */
#ifndef METRICS_METRICS_H
#define METRICS_METRICS_H

#include <stddef.h>

#include "service/store/request.h"

void metrics_sale(enum sale_result r);
void metrics_bad_request(void);
void metrics_in_flight(int delta);
long long metrics_in_flight_now(void);
void metrics_lock_wait(long long waited_ms);
/* A sale that waited in a worker's line to its wait limit (no acquire was tried). */
void metrics_line_timeout(void);
void metrics_batch(int n);
void metrics_replay(void);
void metrics_sale_latency(long long us);
/* A sale entered the critical section while another was inside (the --faults probe). */
void metrics_overlap(void);
/* A write_gap_ms fault began (--faults). */
void metrics_write_gap(void);
/* Renders the Prometheus text; the caller frees it. NULL when out of memory. */
char *metrics_render(size_t *len);

#endif
