/* load_target.c - The requests of a run: one GET head per item (item= of the URL replaced
 * or added), and the choice of the next one, round robin or by Zipf weight. */
#include "loadtest/load_target.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/item.h"

/* query_item: returns the value of the first item= parameter of query (after '?'), or
 * ITEM_DEFAULT (common/item.h) when there is none, as a copy the caller frees; NULL when
 * out of memory. */
static char *query_item(const char *query)
{
    const char *p = query;

    while (p && *p) {
        size_t len = strcspn(p, "&");
        if (strncmp(p, "item=", 5) == 0)
            return strndup(p + 5, len - 5);
        p = p[len] ? p + len + 1 : NULL;
    }
    return strdup(ITEM_DEFAULT);
}

/* query_without_item: query (after '?') without its item= parameters, in out (size n,
 * at least strlen(query) + 1). */
static void query_without_item(const char *query, char *out, size_t n)
{
    const char *p = query;
    size_t o = 0;

    out[0] = '\0';
    while (p && *p) {
        size_t len = strcspn(p, "&");
        if (len > 0 && strncmp(p, "item=", 5) != 0)
            o += (size_t)snprintf(out + o, n - o, "%s%.*s", o ? "&" : "", (int)len, p);
        p = p[len] ? p + len + 1 : NULL;
    }
}

/* target_set: t's head for path and query (query with no item, or NULL to use the URL as
 * it is). Returns 0, or -1 when out of memory. */
static int target_set(struct load_target *t, const struct load_opts *o, const char *base,
                      const char *query)
{
    int n;

    if (t->item == NULL)
        return -1;
    if (query == NULL)
        n = asprintf(&t->head, "GET %s HTTP/1.1\r\nHost: %s\r\n", o->path, o->host);
    else
        n = asprintf(&t->head, "GET %s?%s%sitem=%s HTTP/1.1\r\nHost: %s\r\n", base, query,
                     *query ? "&" : "", t->item, o->host);
    if (n < 0) {
        t->head = NULL;
        return -1;
    }
    t->head_len = (size_t)n;
    return 0;
}

/* targets_set: the targets of ts (ts->n of them, allocated) for o. Returns 0, or -1 when
 * out of memory. */
static int targets_set(struct load_targets *ts, const struct load_opts *o)
{
    size_t n = strlen(o->path) + 1;
    char *base = malloc(n), *query = malloc(n), *q;
    int rc = 0;

    if (base == NULL || query == NULL) {
        rc = -1;
        goto out_free;
    }
    memcpy(base, o->path, n);
    q = strchr(base, '?');
    if (q)
        *q++ = '\0';
    if (o->n_items == 0) {
        ts->t[0].item = query_item(q);
        rc = target_set(&ts->t[0], o, base, NULL);
        goto out_free;
    }
    query_without_item(q, query, n);
    for (int i = 0; i < o->n_items && rc == 0; i++) {
        ts->t[i].item = strdup(o->items[i]);
        rc = target_set(&ts->t[i], o, base, query);
    }
out_free:
    free(base);
    free(query);
    return rc;
}

/* clock_seed: a seed from the monotonic clock and the pid, never 0. */
static unsigned long long clock_seed(void)
{
    struct timespec ts;
    unsigned long long s;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    s = (unsigned long long)((long long)ts.tv_sec * 1000000000 + ts.tv_nsec) ^
        (unsigned long long)getpid() << 32;
    return s ? s : 1;
}

/* zipf_build: with --zipf, the cumulative weights of the targets. 0, or -1 (memory). */
static int zipf_build(struct load_targets *ts, const struct load_opts *o)
{
    double sum = 0;

    if (o->zipf <= 0)
        return 0;
    if ((ts->zipf_cdf = malloc(sizeof(double) * (size_t)ts->n)) == NULL)
        return -1;
    for (int i = 0; i < ts->n; i++)
        ts->zipf_cdf[i] = sum += 1.0 / pow(i + 1, o->zipf);
    ts->rng = o->seed ? o->seed : clock_seed();
    return 0;
}

int load_targets_build(struct load_targets *ts, const struct load_opts *o)
{
    ts->n = o->n_items ? o->n_items : 1;
    ts->t = calloc((size_t)ts->n, sizeof(*ts->t));
    if (ts->t == NULL || targets_set(ts, o) != 0)
        return -1;
    return zipf_build(ts, o);
}

/* zipf_pick: a target drawn by its Zipf weight (a binary search of the cumulative
 * weights, with xorshift64*'s next number). */
static int zipf_pick(struct load_targets *ts)
{
    double u;
    int lo = 0, hi = ts->n - 1;

    ts->rng ^= ts->rng >> 12;
    ts->rng ^= ts->rng << 25;
    ts->rng ^= ts->rng >> 27;
    u = (double)((ts->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0 *
        ts->zipf_cdf[ts->n - 1];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ts->zipf_cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

int load_targets_next(struct load_targets *ts)
{
    return ts->zipf_cdf ? zipf_pick(ts) : (int)(ts->next++ % (unsigned long)ts->n);
}

void load_targets_free(struct load_targets *ts)
{
    for (int i = 0; ts->t && i < ts->n; i++) {
        free(ts->t[i].item);
        free(ts->t[i].head);
    }
    free(ts->t);
    free(ts->zipf_cdf);
    *ts = (struct load_targets){ 0 };
}
