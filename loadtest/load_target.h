/* load_target.h - The requests of a run: one GET head per item, and which goes next
 * (round robin, or drawn by Zipf weight). */
#ifndef LOADTEST_LOAD_TARGET_H
#define LOADTEST_LOAD_TARGET_H

#include "loadtest/load_opts.h"

#include <stddef.h>

/* One item's request: its name and the head of its GET up to the headers that vary. */
struct load_target {
    char *item;                     /* as sent (the URL's item= is not checked); owned */
    char *head;                     /* "GET ... HTTP/1.1\r\nHost: ...\r\n"; owned */
    size_t head_len;
};

/* The targets and the choice among them. Single thread: the run's. */
struct load_targets {
    struct load_target *t;          /* n of them; owned */
    int n;
    unsigned long next;             /* round robin over t, per request */
    double *zipf_cdf;               /* --zipf: cumulative weight of t[0..i]; owned */
    unsigned long long rng;         /* xorshift64* state, for the Zipf choice */
};

/* load_targets_build: one target per item of o (--items, --item-count), or one for the
 * URL as given, into ts (all zero before); with --zipf, their weights. Returns 0, or -1
 * when out of memory. load_targets_free frees ts either way. */
int load_targets_build(struct load_targets *ts, const struct load_opts *o);

/* load_targets_next: returns the index in ts->t of the next request's target. */
int load_targets_next(struct load_targets *ts);

/* load_targets_free: frees what load_targets_build made. */
void load_targets_free(struct load_targets *ts);

#endif
