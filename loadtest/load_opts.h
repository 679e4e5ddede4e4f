/* load_opts.h - sale-load's command line: its options, checked (the URL, the network rule,
 * the item lists), or the usage. */
#ifndef LOADTEST_LOAD_OPTS_H
#define LOADTEST_LOAD_OPTS_H

#include <netinet/in.h>
#include <stdint.h>

enum {
    LOAD_MAX_CONNS = 1024,
    LOAD_MAX_ITEMS = 100000,
    LOAD_URL_MAX = 2048,            /* characters of --url */
    LOAD_DEFAULT_TIMEOUT_MS = 10000,
    LOAD_MAX_TIMEOUT_MS = 600000,
};

/* What the command line asked for. */
struct load_opts {
    struct in_addr addr;            /* the host, checked against the network rule */
    uint16_t port;
    char host[32];                  /* "A.B.C.D:PORT", the Host header */
    char path[LOAD_URL_MAX + 1];    /* the path and query of --url */
    const char *url;
    int conns, timeout_ms, keys;
    double seconds;
    const char *history;            /* NULL: no history */
    char *items_arg;                /* --items, cut into items[] in place */
    const char *items[LOAD_MAX_ITEMS];
    int n_items;
    int item_count;                 /* --item-count K: item0001 .. itemK (0: none) */
    double zipf;                    /* --zipf S: item of rank r with weight 1/r^S (0: none) */
    unsigned long long seed;        /* --seed: the Zipf choice's (0: from the clock) */
    double rate;                    /* --rate R: R requests a second on a fixed schedule
                                       (0: each connection sends again once answered) */
};

/* load_opts_parse: fills o (all zero before) from the command line. Returns 0 to run, 1
 * after printing --help, 2 after printing why the usage is bad. */
int load_opts_parse(int argc, char **argv, struct load_opts *o);

#endif
