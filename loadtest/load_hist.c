/* load_hist.c - The load client's latency histogram: buckets and percentiles. */
#include "loadtest/load_hist.h"

/* bucket_index: returns the bucket of a latency of us microseconds. */
static int bucket_index(uint64_t us)
{
    int e, idx;

    if (us < 2 * LOAD_HIST_SUB)
        return (int)us;
    e = 63 - __builtin_clzll(us) - 6;            /* us >> e is in [64, 128) */
    idx = 2 * LOAD_HIST_SUB + (e - 1) * LOAD_HIST_SUB + (int)((us >> e) - LOAD_HIST_SUB);
    return idx < LOAD_HIST_BUCKETS ? idx : LOAD_HIST_BUCKETS - 1;
}

/* bucket_value_us: returns the middle of bucket idx, in microseconds. */
static double bucket_value_us(int idx)
{
    int e, m;

    if (idx < 2 * LOAD_HIST_SUB)
        return idx + 0.5;
    e = (idx - 2 * LOAD_HIST_SUB) / LOAD_HIST_SUB + 1;
    m = (idx - 2 * LOAD_HIST_SUB) % LOAD_HIST_SUB + LOAD_HIST_SUB;
    return ((double)m + 0.5) * (double)(1ULL << e);
}

void load_hist_add(struct load_hist *h, uint64_t us)
{
    h->n++;
    h->bucket[bucket_index(us)]++;
}

double load_hist_percentile_ms(const struct load_hist *h, double p)
{
    long long rank = (long long)(p * (double)h->n + 0.999999), seen = 0;

    if (h->n == 0)
        return -1;
    if (rank < 1)
        rank = 1;
    for (int i = 0; i < LOAD_HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank)
            return bucket_value_us(i) / 1000;
    }
    return bucket_value_us(LOAD_HIST_BUCKETS - 1) / 1000;
}
