/* load_record.h - What a run of sale-load records: a history line per request, the counts
 * and latencies of its summary, and the summary itself. */
#ifndef LOADTEST_LOAD_RECORD_H
#define LOADTEST_LOAD_RECORD_H

#include "loadtest/load_hist.h"
#include "loadtest/load_opts.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The counts of the summary. */
struct load_stats {
    long long requests, no_answer, connect_failures;
    int connect_errno;              /* why the first connect failed */
    long long by_status[600];
    json_t *errors;                 /* "STATUS" -> {error: count}, non-200 answers; owned */
    struct load_hist lat;           /* answered requests by latency (lat.n: how many) */
};

/* The record of a run (all zero before load_record_open). Single thread: the run's. */
struct load_record {
    const struct load_opts *o;
    FILE *history;                  /* NULL without --history */
    int history_failed;             /* a write of it failed */
    struct load_stats st;
};

/* One request as it ended: what its history line says. */
struct load_request {
    int64_t start_ns, end_ns;       /* first byte written; answer complete (or given up) */
    int64_t due_ns;                 /* --rate: when it was due, its latency's start (0: none) */
    int status;                     /* 0: no answer */
    int retry_after;                /* 1: the answer said Retry-After */
    const char *body;               /* the answer's body (JSON or not), or NULL */
    size_t body_len;
    const char *item;
    const char *key;                /* its Idempotency-Key, or NULL (no --keys) */
    int conn;                       /* the connection (slot) it was sent on: a client */
};

/* load_record_open: rec ready for o's run, the history (--history) open. Returns 0, or 1
 * after printing why not. load_record_close frees it either way. */
int load_record_open(struct load_record *rec, const struct load_opts *o);

/* load_record_request: counts q and writes its history line. */
void load_record_request(struct load_record *rec, const struct load_request *q);

/* load_record_connect_failed: counts a connect that failed (err: why); nothing was sent. */
void load_record_connect_failed(struct load_record *rec, int err);

/* load_record_summary: prints the human summary, then one JSON line, on stdout. seconds:
 * the run's length. */
void load_record_summary(const struct load_record *rec, double seconds);

/* load_record_close: closes the history and frees rec's counts. Returns 0, or 1 after
 * printing why the history is not whole. */
int load_record_close(struct load_record *rec);

#endif
