/* load_hist.h - A latency histogram of fixed size: microsecond buckets up to 128 us, then 64
 * buckets per power of two (1.6 % wide), so that p50 and p99 of an hour's run take 25 KB. */
#ifndef LOADTEST_LOAD_HIST_H
#define LOADTEST_LOAD_HIST_H

#include <stdint.h>

enum { LOAD_HIST_SUB = 64, LOAD_HIST_BUCKETS = 2 * LOAD_HIST_SUB + 48 * LOAD_HIST_SUB };

/* The latencies counted so far: all zero when empty. */
struct load_hist {
    long long n;                                /* latencies counted */
    long long bucket[LOAD_HIST_BUCKETS];
};

/* load_hist_add: counts one latency of us microseconds. */
void load_hist_add(struct load_hist *h, uint64_t us);

/* load_hist_percentile_ms: returns the latency in ms below which the fraction p of those
 * counted fall (nearest rank, to within 1.6 %), -1 when none was counted. */
double load_hist_percentile_ms(const struct load_hist *h, double p);

#endif
