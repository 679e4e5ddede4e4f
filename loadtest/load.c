/* load.c - sale-load: a keep-alive HTTP load client that records each sale request. */
/*
 * Usage: sale-load --url http://HOST:PORT/PATH[?QUERY] -c CONNS -d SECONDS
 *                  [--history FILE] [--keys] [--timeout-ms MS] [--items I1,I2,...]
 *
 * Why our own client: wrk's Lua cannot tell which connection an answer came on, so it
 * cannot time one request from its sending to its answer. This client can: CONNS
 * keep-alive HTTP/1.1 connections, each sending one GET, waiting for its answer and
 * sending the next, on one thread with edge-triggered epoll. With --history it writes
 * one JSON object a line per request, the input of loadtest/check-history:
 *
 *   {"start_ns":N,"end_ns":N,"status":200,"error":"...","remaining":R,"item":"I",
 *    "key":"...","instance":"..."}
 *
 * start_ns: CLOCK_MONOTONIC just before the write that sent the request's first byte;
 * end_ns: just after the read that completed its answer (so the interval holds the
 * moment the sale took effect). status 0: no answer (the connection was reset or
 * closed, or --timeout-ms passed; the connection is then closed and made again).
 * error, remaining and instance are copied from the JSON body when it has them; key
 * only with --keys. A request is recorded once its first byte was written: a connect
 * that fails sent nothing and sold nothing, so it is counted (connect_failures) but is
 * not a request; the connection waits 10 ms before it tries again.
 *
 * When SECONDS have passed (or at the first SIGINT or SIGTERM), no request is sent any
 * more; the answers still due are awaited up to --timeout-ms, the rest recorded as
 * status 0. Then a summary on stdout and, last, one JSON line: requests, by_status,
 * by_error, no_answer, rps (requests over the whole run), p50_ms, p99_ms (of the
 * answers, to within 1.6 %), seconds, connect_failures.
 *
 * The network rule of the project: load goes only to loopback (127.0.0.1) or to the
 * test hosts in 198.18.0.0/15; any other host is refused.
 *
 * Exit status: 0 the run was done (whatever the answers), 1 it could not be done (the
 * history cannot be written, no request could be sent), 2 bad usage.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <math.h>

#include <jansson.h>

enum {
    LOAD_MAX_CONNS = 1024,
    LOAD_MAX_ITEMS = 100000,
    LOAD_ITEM_MAX = 128,            /* characters of one --items name */
    LOAD_URL_MAX = 2048,            /* characters of --url */
    LOAD_ANSWER_MAX = 1 << 20,      /* bytes of one answer: more is a protocol error */
    LOAD_MAX_ERRORS = 64,           /* distinct error strings counted; more go to "other" */
    LOAD_EVENTS = 256,              /* epoll events taken at once */
    LOAD_DEFAULT_TIMEOUT_MS = 10000,
    LOAD_MAX_TIMEOUT_MS = 600000,
};
#define LOAD_BACKOFF_NS   10000000LL    /* a failed connection waits this long */
#define LOAD_DEFAULT_ITEM "inventory001" /* the service's item when the URL names none */

/* Latency histogram: microsecond buckets up to 128 us, then 64 buckets per power of two
 * (1.6 % wide), so that p50 and p99 of an hour's run take a fixed 25 KB. */
enum { LAT_SUB = 64, LAT_BUCKETS = 2 * LAT_SUB + 48 * LAT_SUB };

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
};

/* One item's request: its name and the head of its GET up to the headers that vary. */
struct load_target {
    char item[LOAD_ITEM_MAX + 1];
    char *head;                     /* "GET ... HTTP/1.1\r\nHost: ...\r\n"; owned */
    size_t head_len;
};

/* Where a connection is. IDLE: connected, its next request not yet sent. */
enum conn_state { CONN_CLOSED, CONN_BACKOFF, CONN_CONNECTING, CONN_IDLE, CONN_SENDING,
                  CONN_READING };

/* How an answer's body ends. */
enum body_kind { BODY_LENGTH, BODY_CHUNKED, BODY_UNTIL_CLOSE };

/* The parse state of the answer being read. */
struct load_answer {
    size_t scan;                    /* bytes searched for the end of the head */
    size_t head_len;                /* 0 until the whole head came */
    int status;
    int close;                      /* the server closes after this answer */
    enum body_kind kind;
    size_t length;                  /* Content-Length (BODY_LENGTH) */
    const char *body;               /* set when the answer is complete */
    size_t body_len;
};

/* One connection slot: it is made again after a close, with the same id. */
struct load_conn {
    int id, fd;
    uint32_t gen;                   /* bumped at each close: epoll events of old fds are stale */
    enum conn_state state;
    long long seq;                  /* requests sent by this slot */
    int target;                     /* the request in flight: its index in targets */
    char key[65];                   /* its Idempotency-Key (--keys) */
    char *req;                      /* the request's bytes; owned */
    size_t req_len, req_off, req_cap;
    int64_t start_ns;               /* first byte written */
    int64_t deadline_ns;            /* backoff end, connect or answer deadline */
    char *in;                       /* the answer's bytes so far; owned */
    size_t in_len, in_cap;
    struct load_answer ans;
};

/* The counts of the summary. */
struct load_stats {
    long long requests, answered, no_answer, connect_failures;
    int connect_errno;              /* why the first connect failed */
    long long by_status[600];
    json_t *errors;                 /* "STATUS" -> {error: count}, non-200 answers; owned */
    long long lat[LAT_BUCKETS];     /* answered requests by latency */
};

/* The whole run. Single thread: everything here belongs to it. */
struct load_run {
    const struct load_opts *o;
    struct load_target *targets;
    int n_targets;
    unsigned long next_target;      /* round robin over targets, per request */
    double *zipf_cdf;               /* --zipf: cumulative weight of targets 0..i; owned */
    unsigned long long rng;         /* xorshift64* state, for the Zipf choice */
    struct load_conn *conns;
    int epfd;
    FILE *history;                  /* NULL without --history */
    int history_failed;
    int64_t start_ns, stop_ns;
    int64_t timer_ns;               /* earliest deadline of any connection */
    int stopping, has_idle, in_flight;
    struct load_stats st;
};

/* Set by SIGINT or SIGTERM: end the run as if its duration were over. */
static volatile sig_atomic_t load_interrupted;

/* now_ns: CLOCK_MONOTONIC in nanoseconds. */
static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* usage: the --help text, on f. */
static void usage(FILE *f)
{
    fputs("Usage: sale-load --url http://HOST:PORT/PATH[?QUERY] -c CONNS -d SECONDS\n"
          "                 [--history FILE] [--keys] [--timeout-ms MS] [--items I1,I2,...]\n"
          "                 [--item-count K] [--zipf S [--seed N]]\n"
          "\n"
          "Loads the sale with CONNS keep-alive HTTP/1.1 connections for SECONDS, each sending\n"
          "one GET, waiting for its answer and sending the next; prints a summary and, last,\n"
          "one JSON line (requests, by_status, by_error, no_answer, rps, p50_ms, p99_ms,\n"
          "seconds, connect_failures).\n"
          "\n"
          "  --url URL          HOST is numeric IPv4: 127.0.0.1 or a test host in 198.18.0.0/15\n"
          "                     (load goes nowhere else)\n"
          "  -c CONNS           connections, 1..1024\n"
          "  -d SECONDS         how long to send requests, 0.1..3600\n"
          "  --history FILE     one JSON object a line per request (loadtest/check-history):\n"
          "                     {\"start_ns\":N,\"end_ns\":N,\"status\":200,\"error\":\"...\",\"remaining\":R,\n"
          "                      \"item\":\"I\",\"key\":\"...\",\"instance\":\"...\"}; monotonic ns of the\n"
          "                     first byte sent and of the whole answer; status 0: no answer\n"
          "  --keys             send a unique Idempotency-Key with each request (PID-CONN-SEQ)\n"
          "  --timeout-ms MS    wait at most MS for an answer, also after SECONDS (default 10000)\n"
          "  --items I1,I2,...  spread the requests round robin over these items (item= in the\n"
          "                     query is replaced or added; at most 100000)\n"
          "  --item-count K     the same over item0001 .. itemK (deploy/stock N --items K)\n"
          "  --zipf S           choose each request's item at random instead, the item of rank\n"
          "                     r (the r-th listed: item0001 is the hottest) with weight 1/r^S\n"
          "                     (S > 0; 1.1: a few hot items, a long tail)\n"
          "  --seed N           the random choice's seed (default: from the clock)\n"
          "  --help             this text\n"
          "\n"
          "Exit: 0 the run was done (whatever the answers), 1 it could not be done, 2 bad usage.\n",
          f);
}

/* bad_usage: prints why and a pointer to --help; returns 2, the exit status. */
static int bad_usage(const char *why, const char *arg)
{
    fprintf(stderr, "sale-load: %s%s%s\n", why, arg ? ": " : "", arg ? arg : "");
    fputs("Try 'sale-load --help'.\n", stderr);
    return 2;
}

static int is_test_net(uint32_t h) { return (h & 0xfffe0000u) == 0xc6120000u; }

/* in_test_host: 1 when an interface here has an address in 198.18.0.0/15 whose own
 * subnet holds h: this process runs in a test host (deploy/hosts run) and h is on its
 * link. Elsewhere that range is routed out like any other, and a load must not go there. */
static int in_test_host(uint32_t h)
{
    struct ifaddrs *all, *i;
    int yes = 0;

    if (getifaddrs(&all) != 0)
        return 0;
    for (i = all; i && !yes; i = i->ifa_next) {
        uint32_t a, m;
        if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET)
            continue;
        a = ntohl(((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr);
        m = ntohl(((struct sockaddr_in *)(void *)i->ifa_netmask)->sin_addr.s_addr);
        yes = is_test_net(a) && (a & m) == (h & m);
    }
    freeifaddrs(all);
    return yes;
}

/* host_refused: NULL for 127.0.0.1, and for 198.18.0.0/15 (the test hosts) from inside a
 * test host; else why not. */
static const char *host_refused(struct in_addr a)
{
    uint32_t h = ntohl(a.s_addr);

    if (h == 0x7f000001u)
        return NULL;
    if (!is_test_net(h))
        return "--url: host refused: load goes only to 127.0.0.1 or to test hosts in 198.18.0.0/15";
    if (!in_test_host(h))
        return "--url: 198.18.0.0/15 only from inside a test host, to a host on its link "
               "(deploy/hosts run H sale-load ...): from here it is routed out";
    return NULL;
}

/* url_parse: fills o->addr, port, host and path from o->url. Returns NULL or why not. */
static const char *url_parse(struct load_opts *o)
{
    const char *p = o->url, *end, *why;
    char host[16];
    unsigned long port = 80;

    if (strlen(p) > LOAD_URL_MAX)
        return "--url is too long";
    if (strncmp(p, "http://", 7) != 0)
        return "--url must start with http://";
    p += 7;
    end = p + strcspn(p, ":/?");
    if (end == p || (size_t)(end - p) >= sizeof(host))
        return "--url: the host must be a numeric IPv4 address";
    memcpy(host, p, (size_t)(end - p));
    host[end - p] = '\0';
    if (inet_pton(AF_INET, host, &o->addr) != 1)
        return "--url: the host must be a numeric IPv4 address";
    if ((why = host_refused(o->addr)) != NULL)
        return why;
    p = end;
    if (*p == ':') {
        char *e;
        errno = 0;
        port = isdigit((unsigned char)p[1]) ? strtoul(p + 1, &e, 10) : 0;
        if (port == 0 || port > 65535 || errno || (*e != '\0' && *e != '/' && *e != '?'))
            return "--url: the port must be 1..65535";
        p = e;
    }
    o->port = (uint16_t)port;
    snprintf(o->host, sizeof(o->host), "%s:%lu", host, port);
    snprintf(o->path, sizeof(o->path), "%s%s", *p == '/' ? "" : "/", p);
    return NULL;
}

/* item_is_valid: 1 when s needs no escaping in a query: 1..128 of A-Z a-z 0-9 _ . - */
static int item_is_valid(const char *s)
{
    size_t n = strlen(s);

    return n >= 1 && n <= LOAD_ITEM_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* items_parse: cuts o->items_arg at its commas into o->items. Returns NULL or why not. */
static const char *items_parse(struct load_opts *o)
{
    char *s = o->items_arg, *comma;

    for (;;) {
        comma = strchr(s, ',');
        if (comma)
            *comma = '\0';
        if (!item_is_valid(s))
            return "--items: each item is 1 to 128 characters of A-Z a-z 0-9 _ . -";
        if (o->n_items == LOAD_MAX_ITEMS)
            return "--items: at most 100000 items";
        o->items[o->n_items++] = s;
        if (comma == NULL)
            return NULL;
        s = comma + 1;
    }
}

/* items_number: o->items become item0001 .. item{item_count}. */
static void items_number(struct load_opts *o)
{
    static char names[LOAD_MAX_ITEMS][16];

    for (int i = 0; i < o->item_count; i++) {
        snprintf(names[i], sizeof(names[i]), "item%04d", i + 1);
        o->items[i] = names[i];
    }
    o->n_items = o->item_count;
}

/* number_arg: parses s as a number in lo..hi (whole when integer is set). 0 or -1. */
static int number_arg(const char *s, double lo, double hi, int integer, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= lo && v <= hi))
        return -1;
    if (integer && v != (double)(long)v)
        return -1;
    *out = v;
    return 0;
}

/* opts_check: the checks after getopt. Returns 0, or 2 after printing why. */
static int opts_check(struct load_opts *o, int have_c, int have_d)
{
    const char *why;

    if (o->url == NULL || !have_c || !have_d)
        return bad_usage("--url, -c and -d are required", NULL);
    why = url_parse(o);
    if (why)
        return bad_usage(why, o->url);
    if (o->items_arg && o->item_count)
        return bad_usage("--items or --item-count, not both", NULL);
    if (o->items_arg && (why = items_parse(o)) != NULL)
        return bad_usage(why, NULL);
    if (o->item_count)
        items_number(o);
    if (o->zipf > 0 && o->n_items < 2)
        return bad_usage("--zipf wants items to choose from (--items or --item-count)", NULL);
    return 0;
}

/* opts_parse: fills o from the command line. Returns 0 to run, 1 after --help, 2 after
 * printing why the usage is bad. */
static int opts_parse(int argc, char **argv, struct load_opts *o)
{
    static const struct option longs[] = {
        { "url", required_argument, NULL, 'u' }, { "history", required_argument, NULL, 'H' },
        { "keys", no_argument, NULL, 'k' }, { "timeout-ms", required_argument, NULL, 't' },
        { "items", required_argument, NULL, 'i' }, { "help", no_argument, NULL, 'h' },
        { "item-count", required_argument, NULL, 'n' }, { "zipf", required_argument, NULL, 'z' },
        { "seed", required_argument, NULL, 's' },
        { NULL, 0, NULL, 0 }
    };
    int opt, have_c = 0, have_d = 0;
    double v;

    o->timeout_ms = LOAD_DEFAULT_TIMEOUT_MS;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":c:d:h", longs, NULL)) != -1) {
        switch (opt) {
        case 'u': o->url = optarg; break;
        case 'H': o->history = optarg; break;
        case 'k': o->keys = 1; break;
        case 'i': o->items_arg = optarg; break;
        case 'n':
            if (number_arg(optarg, 1, LOAD_MAX_ITEMS, 1, &v) != 0)
                return bad_usage("--item-count must be a whole number in 1..100000", optarg);
            o->item_count = (int)v;
            break;
        case 'z':
            if (number_arg(optarg, 0.01, 10, 0, &v) != 0)
                return bad_usage("--zipf must be an exponent in 0.01..10", optarg);
            o->zipf = v;
            break;
        case 's':
            if (number_arg(optarg, 1, 1e15, 1, &v) != 0)
                return bad_usage("--seed must be a whole number in 1..1e15", optarg);
            o->seed = (unsigned long long)v;
            break;
        case 'h': usage(stdout); return 1;
        case 'c':
            if (number_arg(optarg, 1, LOAD_MAX_CONNS, 1, &v) != 0)
                return bad_usage("-c must be a whole number of connections in 1..1024", optarg);
            o->conns = (int)v, have_c = 1;
            break;
        case 'd':
            if (number_arg(optarg, 0.1, 3600, 0, &v) != 0)
                return bad_usage("-d must be seconds in 0.1..3600", optarg);
            o->seconds = v, have_d = 1;
            break;
        case 't':
            if (number_arg(optarg, 1, LOAD_MAX_TIMEOUT_MS, 1, &v) != 0)
                return bad_usage("--timeout-ms must be a whole number in 1..600000", optarg);
            o->timeout_ms = (int)v;
            break;
        case ':': return bad_usage("an option needs a value", argv[optind - 1]);
        default: return bad_usage("unknown option", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bad_usage("unexpected argument", argv[optind]);
    return opts_check(o, have_c, have_d);
}

/* query_item: the value of the first item= parameter of query (after '?'), copied into
 * out; LOAD_DEFAULT_ITEM when there is none. */
static void query_item(const char *query, char *out, size_t n)
{
    const char *p = query;

    while (p && *p) {
        size_t len = strcspn(p, "&");
        if (strncmp(p, "item=", 5) == 0) {
            snprintf(out, n, "%.*s", (int)(len - 5), p + 5);
            return;
        }
        p = p[len] ? p + len + 1 : NULL;
    }
    snprintf(out, n, "%s", LOAD_DEFAULT_ITEM);
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

    if (query == NULL)
        n = asprintf(&t->head, "GET %s HTTP/1.1\r\nHost: %s\r\n", o->path, o->host);
    else
        n = asprintf(&t->head, "GET %s?%s%sitem=%s HTTP/1.1\r\nHost: %s\r\n", base, query,
                     *query ? "&" : "", t->item, o->host);
    if (n < 0)
        return -1;
    t->head_len = (size_t)n;
    return 0;
}

/* targets_build: one target per item of --items, or one for the URL as given. Returns
 * 0, or -1 when out of memory (r->targets is freed by run_free either way). */
static int targets_build(struct load_run *r)
{
    const struct load_opts *o = r->o;
    size_t n = strlen(o->path) + 1;
    char *base = malloc(n), *query = malloc(n), *q;
    int rc = 0;

    r->n_targets = o->n_items ? o->n_items : 1;
    r->targets = calloc((size_t)r->n_targets, sizeof(*r->targets));
    if (base == NULL || query == NULL || r->targets == NULL) {
        rc = -1;
        goto out_free;
    }
    memcpy(base, o->path, n);
    q = strchr(base, '?');
    if (q)
        *q++ = '\0';
    if (o->n_items == 0) {
        query_item(q, r->targets[0].item, sizeof(r->targets[0].item));
        rc = target_set(&r->targets[0], o, base, NULL);
        goto out_free;
    }
    query_without_item(q, query, n);
    for (int i = 0; i < o->n_items && rc == 0; i++) {
        snprintf(r->targets[i].item, sizeof(r->targets[i].item), "%s", o->items[i]);
        rc = target_set(&r->targets[i], o, base, query);
    }
out_free:
    free(base);
    free(query);
    return rc;
}

/* --- latency --- */

/* lat_index: the histogram bucket of a latency of us microseconds. */
static int lat_index(uint64_t us)
{
    int e, idx;

    if (us < 2 * LAT_SUB)
        return (int)us;
    e = 63 - __builtin_clzll(us) - 6;            /* us >> e is in [64, 128) */
    idx = 2 * LAT_SUB + (e - 1) * LAT_SUB + (int)((us >> e) - LAT_SUB);
    return idx < LAT_BUCKETS ? idx : LAT_BUCKETS - 1;
}

/* lat_value_us: the middle of bucket idx, in microseconds. */
static double lat_value_us(int idx)
{
    int e, m;

    if (idx < 2 * LAT_SUB)
        return idx + 0.5;
    e = (idx - 2 * LAT_SUB) / LAT_SUB + 1;
    m = (idx - 2 * LAT_SUB) % LAT_SUB + LAT_SUB;
    return ((double)m + 0.5) * (double)(1ULL << e);
}

/* lat_percentile_ms: the latency in ms below which the fraction p of the answers fall
 * (nearest rank); -1 when nothing was answered. */
static double lat_percentile_ms(const struct load_stats *st, double p)
{
    long long rank = (long long)(p * (double)st->answered + 0.999999), seen = 0;

    if (st->answered == 0)
        return -1;
    if (rank < 1)
        rank = 1;
    for (int i = 0; i < LAT_BUCKETS; i++) {
        seen += st->lat[i];
        if (seen >= rank)
            return lat_value_us(i) / 1000;
    }
    return lat_value_us(LAT_BUCKETS - 1) / 1000;
}

/* --- recording --- */

/* errors_count: counts one answer of status with the body's error (non-200 answers). */
static void errors_count(struct load_stats *st, int status, const char *error)
{
    char code[8];
    json_t *per, *n;

    snprintf(code, sizeof(code), "%d", status);
    per = json_object_get(st->errors, code);
    if (per == NULL) {
        per = json_object();
        json_object_set_new(st->errors, code, per);
    }
    if (json_object_size(per) >= LOAD_MAX_ERRORS && json_object_get(per, error) == NULL)
        error = "other";
    n = json_object_get(per, error);
    if (n)
        json_integer_set(n, json_integer_value(n) + 1);
    else
        json_object_set_new(per, error, json_integer(1));
}

/* history_write: c's request as one history line (body: the answer's JSON or NULL). */
static void history_write(struct load_run *r, const struct load_conn *c, int status,
                          const json_t *body, int64_t end_ns)
{
    json_t *line = json_object(), *v;

    json_object_set_new(line, "start_ns", json_integer(c->start_ns));
    json_object_set_new(line, "end_ns", json_integer(end_ns));
    json_object_set_new(line, "status", json_integer(status));
    if (json_is_string(v = json_object_get(body, "error")))
        json_object_set(line, "error", v);
    if (json_is_integer(v = json_object_get(body, "remaining")))
        json_object_set(line, "remaining", v);
    json_object_set_new(line, "item", json_string(r->targets[c->target].item));
    if (r->o->keys)
        json_object_set_new(line, "key", json_string(c->key));
    if (json_is_string(v = json_object_get(body, "instance")))
        json_object_set(line, "instance", v);
    if (json_dumpf(line, r->history, JSON_COMPACT) != 0 || fputc('\n', r->history) == EOF)
        r->history_failed = 1;
    json_decref(line);
}

/* request_end: c's request is over: status 0 (no answer) or the answer's status and
 * JSON body (NULL when it had none). Counts it and writes its history line. */
static void request_end(struct load_run *r, struct load_conn *c, int status, const json_t *body,
                        int64_t end_ns)
{
    struct load_stats *st = &r->st;
    const json_t *error = json_object_get(body, "error");

    r->in_flight--;
    st->requests++;
    if (status == 0) {
        st->no_answer++;
    } else {
        st->answered++;
        st->by_status[status]++;
        st->lat[lat_index((uint64_t)(end_ns - c->start_ns) / 1000)]++;
        if (status != 200 && json_is_string(error))
            errors_count(st, status, json_string_value(error));
    }
    if (r->history)
        history_write(r, c, status, body, end_ns);
}

/* --- connections --- */

/* timer_note: the run's next timer is no later than at. */
static void timer_note(struct load_run *r, int64_t at)
{
    if (at < r->timer_ns)
        r->timer_ns = at;
}

/* conn_close: closes c's socket (its pending epoll events become stale). */
static void conn_close(struct load_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->gen++;
    c->state = CONN_CLOSED;
}

/* conn_backoff: closes c; it connects again after LOAD_BACKOFF_NS unless the run stops. */
static void conn_backoff(struct load_run *r, struct load_conn *c)
{
    conn_close(c);
    if (r->stopping)
        return;
    c->state = CONN_BACKOFF;
    c->deadline_ns = now_ns() + LOAD_BACKOFF_NS;
    timer_note(r, c->deadline_ns);
}

/* conn_idle: c is connected and free: the main loop sends its next request. */
static void conn_idle(struct load_run *r, struct load_conn *c)
{
    c->state = CONN_IDLE;
    r->has_idle = 1;
}

/* connect_failed: c's connect did not succeed (err: why); nothing was sent. */
static void connect_failed(struct load_run *r, struct load_conn *c, int err)
{
    if (r->st.connect_failures++ == 0)
        r->st.connect_errno = err;
    conn_backoff(r, c);
}

/* request_failed: c's request got no (usable) answer: status 0, and a new connection. */
static void request_failed(struct load_run *r, struct load_conn *c)
{
    request_end(r, c, 0, NULL, now_ns());
    conn_backoff(r, c);
}

/* conn_connect: opens c's socket and starts connecting. */
static void conn_connect(struct load_run *r, struct load_conn *c)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(r->o->port),
                              .sin_addr = r->o->addr };
    struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET };
    int one = 1;

    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        connect_failed(r, c, errno);
        return;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ev.data.u64 = (uint64_t)c->gen << 32 | (uint32_t)c->id;
    if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        connect_failed(r, c, errno);
        return;
    }
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        conn_idle(r, c);
    } else if (errno == EINPROGRESS) {
        c->state = CONN_CONNECTING;
        c->deadline_ns = now_ns() + (int64_t)r->o->timeout_ms * 1000000;
        timer_note(r, c->deadline_ns);
    } else {
        connect_failed(r, c, errno);
    }
}

/* conn_connected: c's connect finished, well or not. */
static void conn_connected(struct load_run *r, struct load_conn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0)
        connect_failed(r, c, err);
    else
        conn_idle(r, c);
}

/* --- the HTTP answer --- */

/* head_end: the length of the head (status line and headers, through the blank line)
 * when it is all in buf, else 0; *scan keeps how far the search got. */
static size_t head_end(const char *buf, size_t len, size_t *scan)
{
    size_t i = *scan > 3 ? *scan - 3 : 0;

    for (; i + 4 <= len; i++)
        if (buf[i] == '\r' && memcmp(buf + i, "\r\n\r\n", 4) == 0)
            return i + 4;
    *scan = len;
    return 0;
}

/* header_is: 1 when the header line (len bytes, no CRLF) is name: value, with *value
 * and *vlen set to the value without its surrounding blanks. */
static int header_is(const char *line, size_t len, const char *name, const char **value,
                     size_t *vlen)
{
    size_t n = strlen(name);

    if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
        return 0;
    *value = line + n + 1;
    *vlen = len - n - 1;
    while (*vlen && (**value == ' ' || **value == '\t'))
        (*value)++, (*vlen)--;
    while (*vlen && ((*value)[*vlen - 1] == ' ' || (*value)[*vlen - 1] == '\t'))
        (*vlen)--;
    return 1;
}

/* header_apply: what one header line says about the body and the connection. Returns 0,
 * or -1 on a Content-Length that is not a number within LOAD_ANSWER_MAX. */
static int header_apply(struct load_answer *a, const char *line, size_t len, int *has_length)
{
    const char *v;
    size_t vl;

    if (header_is(line, len, "Content-Length", &v, &vl)) {
        a->length = 0;
        for (size_t i = 0; i < vl; i++) {
            if (!isdigit((unsigned char)v[i]) || a->length > LOAD_ANSWER_MAX)
                return -1;
            a->length = a->length * 10 + (size_t)(v[i] - '0');
        }
        *has_length = vl > 0;
        return vl > 0 && a->length <= LOAD_ANSWER_MAX ? 0 : -1;
    }
    if (header_is(line, len, "Transfer-Encoding", &v, &vl))
        a->kind = vl >= 7 && strncasecmp(v + vl - 7, "chunked", 7) == 0 ? BODY_CHUNKED
                                                                        : BODY_UNTIL_CLOSE;
    else if (header_is(line, len, "Connection", &v, &vl) && vl == 5 &&
             strncasecmp(v, "close", 5) == 0)
        a->close = 1;
    else if (header_is(line, len, "Connection", &v, &vl) && vl == 10 &&
             strncasecmp(v, "keep-alive", 10) == 0)
        a->close = 0;
    return 0;
}

/* status_parse: the status of the status line "HTTP/1.x NNN ..." (buf holds at least
 * 16 bytes); -1 when it is not one. */
static int status_parse(const char *buf)
{
    int status = 0;

    if (strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
        return -1;
    for (int i = 9; i < 12; i++) {
        if (!isdigit((unsigned char)buf[i]))
            return -1;
        status = status * 10 + (buf[i] - '0');
    }
    return status >= 100 && status <= 599 ? status : -1;
}

/* head_parse: the status and how the body ends, from the head (len bytes through the
 * blank line). Returns 0, or -1 when it is not an HTTP/1.x answer we can read. */
static int head_parse(struct load_answer *a, const char *buf, size_t len)
{
    const char *p, *eol;
    int has_length = 0;

    if (len < 16 || (a->status = status_parse(buf)) < 0)
        return -1;
    a->close = buf[7] == '0';                   /* HTTP/1.0 closes unless it says keep-alive */
    a->kind = BODY_LENGTH;
    a->length = 0;
    p = (const char *)memchr(buf, '\n', len) + 1;
    while ((eol = memchr(p, '\n', (size_t)(buf + len - p))) != NULL && eol - p > 1) {
        if (header_apply(a, p, (size_t)(eol - p - 1), &has_length) != 0)
            return -1;
        p = eol + 1;
    }
    /* Neither length nor chunks: the body ends at the close (1xx, 204, 304 have none). */
    if (a->kind == BODY_LENGTH && !has_length && a->status >= 200 && a->status != 204 &&
        a->status != 304)
        a->kind = BODY_UNTIL_CLOSE;
    if (a->kind == BODY_UNTIL_CLOSE)
        a->close = 1;
    return 0;
}

/* trailer_end: the offset after the blank line that ends the chunked trailers, from
 * offset i of p (len bytes); 0 when it has not all come. */
static size_t trailer_end(const char *p, size_t len, size_t i)
{
    for (;;) {
        const char *nl = memchr(p + i, '\n', len - i);
        size_t l;

        if (nl == NULL)
            return 0;
        l = (size_t)(nl - (p + i));
        i += l + 1;
        if (l == 0 || (l == 1 && p[i - 2] == '\r'))
            return i;
    }
}

/* chunked_walk: walks a chunked body p (len bytes so far). When out is not NULL, copies
 * the data into it (out may be p: the copy only moves bytes back). Returns the bytes the
 * body took with *out_len set when it is complete, 0 when more must come, -1 when it is
 * malformed. */
static long chunked_walk(char *p, size_t len, char *out, size_t *out_len)
{
    size_t i = 0, o = 0, size, digits;
    const char *nl;

    for (;;) {
        for (size = 0, digits = 0; i < len && isxdigit((unsigned char)p[i]); i++, digits++) {
            if (size > LOAD_ANSWER_MAX)
                return -1;
            size = size * 16 + (size_t)(isdigit((unsigned char)p[i]) ? p[i] - '0'
                                                                      : (p[i] | 0x20) - 'a' + 10);
        }
        if ((nl = memchr(p + i, '\n', len - i)) == NULL)
            return 0;
        if (digits == 0)
            return -1;
        i = (size_t)(nl - p) + 1;               /* past any chunk extension */
        if (size == 0)
            break;
        if (len - i < size + 2)
            return 0;
        if (out)
            memmove(out + o, p + i, size);
        o += size;
        i += size;
        if (p[i] != '\r' || p[i + 1] != '\n')
            return -1;
        i += 2;
    }
    i = trailer_end(p, len, i);
    *out_len = o;
    return (long)i;
}

/* answer_parse: parses what came of c's answer so far. Returns 1 when it is complete
 * (c->ans.body set), 0 when more must come, -1 when it cannot be read. */
static int answer_parse(struct load_conn *c)
{
    struct load_answer *a = &c->ans;
    size_t blen;
    long n;

    if (a->head_len == 0) {
        size_t h = head_end(c->in, c->in_len, &a->scan);
        if (h == 0)
            return 0;
        if (head_parse(a, c->in, h) != 0)
            return -1;
        a->head_len = h;
    }
    a->body = c->in + a->head_len;
    blen = c->in_len - a->head_len;
    switch (a->kind) {
    case BODY_LENGTH:
        a->body_len = a->length;
        return blen >= a->length;
    case BODY_CHUNKED:
        n = chunked_walk(c->in + a->head_len, blen, NULL, &a->body_len);
        if (n > 0)
            chunked_walk(c->in + a->head_len, blen, c->in + a->head_len, &a->body_len);
        return n > 0 ? 1 : (int)n;
    default:
        return 0;                               /* complete at the close */
    }
}

/* answer_done: c's answer is complete: records it, then frees the connection for the
 * next request, or makes a new one when the server closes this one. */
static void answer_done(struct load_run *r, struct load_conn *c, int64_t end_ns)
{
    json_t *body = json_loadb(c->ans.body, c->ans.body_len, 0, NULL);

    request_end(r, c, c->ans.status, body, end_ns);
    json_decref(body);
    if (!c->ans.close) {
        conn_idle(r, c);
        return;
    }
    conn_close(c);
    if (!r->stopping)
        conn_connect(r, c);
}

/* conn_read: reads what has come on c; ends the request when its answer is complete,
 * unreadable, or the connection is gone. */
static void conn_read(struct load_run *r, struct load_conn *c)
{
    for (;;) {
        ssize_t n;
        int rc;

        if (c->in_len == c->in_cap) {
            if (c->in_cap >= LOAD_ANSWER_MAX) {
                request_failed(r, c);
                return;
            }
            c->in_cap = c->in_cap ? 2 * c->in_cap : 4096;
            c->in = realloc(c->in, c->in_cap);
            if (c->in == NULL) {
                fputs("sale-load: out of memory\n", stderr);
                exit(1);
            }
        }
        n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n == 0 && c->ans.head_len && c->ans.kind == BODY_UNTIL_CLOSE) {
            c->ans.body_len = c->in_len - c->ans.head_len;
            answer_done(r, c, now_ns());
            return;
        }
        if (n <= 0) {
            request_failed(r, c);
            return;
        }
        c->in_len += (size_t)n;
        rc = answer_parse(c);
        if (rc != 0) {
            if (rc > 0)
                answer_done(r, c, now_ns());
            else
                request_failed(r, c);
            return;
        }
    }
}

/* unsent: c's request never got a byte out (err why): it is not a request, and the
 * connection starts again after a pause, as after a failed connect. */
static void unsent(struct load_run *r, struct load_conn *c, int err)
{
    r->in_flight--;
    connect_failed(r, c, err);
}

/* conn_send: writes what is left of c's request; then reads its answer. */
static void conn_send(struct load_run *r, struct load_conn *c)
{
    while (c->req_off < c->req_len) {
        int64_t t = now_ns();
        ssize_t n = send(c->fd, c->req + c->req_off, c->req_len - c->req_off, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0 && c->req_off == 0) {
            unsent(r, c, n < 0 ? errno : EPIPE);
            return;
        }
        if (n <= 0) {
            request_failed(r, c);
            return;
        }
        if (c->req_off == 0) {
            c->start_ns = t;
            c->deadline_ns = t + (int64_t)r->o->timeout_ms * 1000000;
            timer_note(r, c->deadline_ns);
        }
        c->req_off += (size_t)n;
    }
    c->state = CONN_READING;
    conn_read(r, c);
}

/* zipf_pick: a target drawn by its Zipf weight (a binary search of the cumulative
 * weights, with xorshift64*'s next number). */
static int zipf_pick(struct load_run *r)
{
    double u;
    int lo = 0, hi = r->n_targets - 1;

    r->rng ^= r->rng >> 12;
    r->rng ^= r->rng << 25;
    r->rng ^= r->rng >> 27;
    u = (double)((r->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0 *
        r->zipf_cdf[r->n_targets - 1];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (r->zipf_cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* zipf_build: with --zipf, the cumulative weights of the targets. 0, or -1 (memory). */
static int zipf_build(struct load_run *r)
{
    double sum = 0;

    if (r->o->zipf <= 0)
        return 0;
    if ((r->zipf_cdf = malloc(sizeof(double) * (size_t)r->n_targets)) == NULL)
        return -1;
    for (int i = 0; i < r->n_targets; i++)
        r->zipf_cdf[i] = sum += 1.0 / pow(i + 1, r->o->zipf);
    r->rng = r->o->seed ? r->o->seed : (unsigned long long)now_ns() ^ (unsigned long long)getpid() << 32;
    if (r->rng == 0)
        r->rng = 1;
    return 0;
}

/* request_start: sends c's next request: the next target in turn, with its key. */
static void request_start(struct load_run *r, struct load_conn *c)
{
    const struct load_target *t;
    size_t need;

    c->target = r->zipf_cdf ? zipf_pick(r) : (int)(r->next_target++ % (unsigned long)r->n_targets);
    t = &r->targets[c->target];
    c->seq++;
    if (r->o->keys)
        snprintf(c->key, sizeof(c->key), "%ld-%d-%lld", (long)getpid(), c->id, c->seq);
    need = t->head_len + sizeof(c->key) + 24;
    if (need > c->req_cap) {
        free(c->req);
        c->req_cap = need;
        if ((c->req = malloc(need)) == NULL) {
            fputs("sale-load: out of memory\n", stderr);
            exit(1);
        }
    }
    memcpy(c->req, t->head, t->head_len);
    c->req_len = t->head_len;
    if (r->o->keys)
        c->req_len += (size_t)sprintf(c->req + c->req_len, "Idempotency-Key: %s\r\n", c->key);
    memcpy(c->req + c->req_len, "\r\n", 2);
    c->req_len += 2;
    c->req_off = 0;
    c->in_len = 0;
    c->ans = (struct load_answer){ 0 };
    c->deadline_ns = now_ns() + (int64_t)r->o->timeout_ms * 1000000;
    timer_note(r, c->deadline_ns);
    c->state = CONN_SENDING;
    r->in_flight++;
    conn_send(r, c);
}

/* conn_event: what epoll reported on c's socket. */
static void conn_event(struct load_run *r, struct load_conn *c, uint32_t events)
{
    switch (c->state) {
    case CONN_CONNECTING:
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            conn_connected(r, c);
        break;
    case CONN_SENDING:
        conn_send(r, c);
        break;
    case CONN_READING:
        conn_read(r, c);
        break;
    default:
        break;                                  /* idle: the main loop sends next */
    }
}

/* --- the run --- */

/* conn_expire: c's deadline has passed. */
static void conn_expire(struct load_run *r, struct load_conn *c)
{
    switch (c->state) {
    case CONN_BACKOFF:
        conn_connect(r, c);
        break;
    case CONN_CONNECTING:
        connect_failed(r, c, ETIMEDOUT);
        break;
    case CONN_SENDING:
        if (c->req_off == 0) {
            unsent(r, c, ETIMEDOUT);
            break;
        }
        request_failed(r, c);                   /* --timeout-ms passed */
        break;
    case CONN_READING:
        request_failed(r, c);
        break;
    default:
        break;
    }
}

/* run_scan: starts the idle connections' next requests (or closes them once the run
 * stops), handles the deadlines that have passed, and sets the next timer. */
static void run_scan(struct load_run *r, int64_t now)
{
    r->has_idle = 0;
    r->timer_ns = INT64_MAX;
    for (int i = 0; i < r->o->conns; i++) {
        struct load_conn *c = &r->conns[i];

        if (c->state == CONN_IDLE && r->stopping)
            conn_close(c);
        else if (c->state == CONN_IDLE)
            request_start(r, c);
        else if (c->state != CONN_CLOSED && now >= c->deadline_ns)
            conn_expire(r, c);
        if (c->state != CONN_CLOSED && c->state != CONN_IDLE)
            timer_note(r, c->deadline_ns);
    }
}

/* run_stop: the duration is over: no more requests; what is not in flight is closed. */
static void run_stop(struct load_run *r)
{
    r->stopping = 1;
    for (int i = 0; i < r->o->conns; i++) {
        struct load_conn *c = &r->conns[i];

        if (c->state != CONN_SENDING && c->state != CONN_READING)
            conn_close(c);
    }
}

/* run_wait_ms: how long epoll may wait: until the next timer or the end of the duration. */
static int run_wait_ms(const struct load_run *r, int64_t now)
{
    int64_t next = r->timer_ns;

    if (r->has_idle)
        return 0;
    if (!r->stopping && r->stop_ns < next)
        next = r->stop_ns;
    if (next <= now)
        return 0;
    next = (next - now + 999999) / 1000000;
    return next > 1000 ? 1000 : (int)next;
}

/* run_loop: the event loop, until the duration is over and no answer is due. Returns 0,
 * or -1 when epoll fails. */
static int run_loop(struct load_run *r)
{
    struct epoll_event ev[LOAD_EVENTS];

    for (int i = 0; i < r->o->conns; i++)
        conn_connect(r, &r->conns[i]);
    for (;;) {
        int64_t now = now_ns();
        int n;

        if (!r->stopping && (now >= r->stop_ns || load_interrupted))
            run_stop(r);
        if (r->has_idle || now >= r->timer_ns)
            run_scan(r, now);
        if (r->stopping && r->in_flight == 0)
            return 0;
        n = epoll_wait(r->epfd, ev, LOAD_EVENTS, run_wait_ms(r, now));
        if (n < 0 && errno != EINTR) {
            perror("sale-load: epoll_wait");
            return -1;
        }
        for (int i = 0; i < n; i++) {
            struct load_conn *c = &r->conns[(uint32_t)ev[i].data.u64];

            if ((uint32_t)(ev[i].data.u64 >> 32) == c->gen)
                conn_event(r, c, ev[i].events);
        }
    }
}

/* --- the summary --- */

/* status_print: one status's line of the summary, with its errors, which it also adds
 * into by_error. */
static void status_print(const struct load_stats *st, int status, json_t *by_error)
{
    char code[8];
    const json_t *per, *n;
    const char *error;
    int first = 1;

    snprintf(code, sizeof(code), "%d", status);
    printf("status %d: %lld", status, st->by_status[status]);
    per = json_object_get(st->errors, code);
    json_object_foreach((json_t *)per, error, n) {
        json_int_t sum = json_integer_value(json_object_get(by_error, error));

        printf("%s%s %lld", first ? " (" : ", ", error, (long long)json_integer_value(n));
        json_object_set_new(by_error, error, json_integer(sum + json_integer_value(n)));
        first = 0;
    }
    printf("%s\n", first ? "" : ")");
}

/* summary_print: the human summary, then one JSON line. seconds: the run's length. */
static void summary_print(const struct load_run *r, double seconds)
{
    const struct load_stats *st = &r->st;
    double p50 = lat_percentile_ms(st, 0.50), p99 = lat_percentile_ms(st, 0.99);
    double rps = seconds > 0 ? (double)st->requests / seconds : 0;
    json_t *by_status = json_object(), *by_error = json_object();
    char *s1, *s2, code[8];

    printf("sale-load: %s, %d connections, %.2f s%s\n", r->o->url, r->o->conns, seconds,
           r->o->keys ? ", an Idempotency-Key on each request" : "");
    printf("requests:   %lld (%.1f/s)\n", st->requests, rps);
    for (int s = 100; s < 600; s++) {
        if (st->by_status[s] == 0)
            continue;
        snprintf(code, sizeof(code), "%d", s);
        json_object_set_new(by_status, code, json_integer(st->by_status[s]));
        status_print(st, s, by_error);
    }
    printf("no answer:  %lld\n", st->no_answer);
    if (p50 >= 0)
        printf("latency:    p50 %.3f ms, p99 %.3f ms\n", p50, p99);
    if (st->connect_failures)
        printf("connect failures: %lld (the first: %s)\n", st->connect_failures,
               strerror(st->connect_errno));
    s1 = json_dumps(by_status, JSON_COMPACT);
    s2 = json_dumps(by_error, JSON_COMPACT);
    printf("{\"requests\":%lld,\"by_status\":%s,\"by_error\":%s,\"no_answer\":%lld,\"rps\":%.1f,",
           st->requests, s1, s2, st->no_answer, rps);
    if (p50 >= 0)
        printf("\"p50_ms\":%.3f,\"p99_ms\":%.3f,", p50, p99);
    else
        printf("\"p50_ms\":null,\"p99_ms\":null,");
    printf("\"seconds\":%.3f,\"connect_failures\":%lld}\n", seconds, st->connect_failures);
    free(s1);
    free(s2);
    json_decref(by_status);
    json_decref(by_error);
}

/* --- set-up --- */

static void on_interrupt(int sig)
{
    (void)sig;
    load_interrupted = 1;
}

/* signals_set: SIGPIPE ignored (a closed connection is an error of send, not a death);
 * the first SIGINT or SIGTERM ends the run early but whole (answers awaited, summary,
 * history flushed), a second one kills. */
static void signals_set(void)
{
    struct sigaction sa = { .sa_handler = on_interrupt, .sa_flags = SA_RESETHAND };

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* fd_limit_raise: enough file descriptors for conns connections, as far as the hard
 * limit allows (1024 connections need more than the usual soft limit of 1024). */
static void fd_limit_raise(int conns)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)conns + 32;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &rl);
}

/* run_init: the run's resources. Returns 0, or 1 after printing why not. */
static int run_init(struct load_run *r, const struct load_opts *o)
{
    r->o = o;
    r->epfd = -1;
    r->timer_ns = INT64_MAX;
    r->st.errors = json_object();
    r->conns = calloc((size_t)o->conns, sizeof(*r->conns));
    if (r->st.errors == NULL || r->conns == NULL || targets_build(r) != 0 || zipf_build(r) != 0) {
        fputs("sale-load: out of memory\n", stderr);
        return 1;
    }
    for (int i = 0; i < o->conns; i++)
        r->conns[i] = (struct load_conn){ .id = i, .fd = -1 };
    if (o->history) {
        r->history = fopen(o->history, "w");
        if (r->history == NULL) {
            fprintf(stderr, "sale-load: %s: %s\n", o->history, strerror(errno));
            return 1;
        }
        setvbuf(r->history, NULL, _IOFBF, 1 << 20);
    }
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (r->epfd < 0) {
        perror("sale-load: epoll_create1");
        return 1;
    }
    fd_limit_raise(o->conns);
    return 0;
}

/* run_free: closes and frees what run_init and the run made. Returns 0, or 1 when the
 * history could not be written whole. */
static int run_free(struct load_run *r)
{
    int rc = 0;

    if (r->history && fclose(r->history) != 0) {
        fprintf(stderr, "sale-load: %s: %s\n", r->o->history, strerror(errno));
        rc = 1;
    } else if (r->history_failed) {
        fprintf(stderr, "sale-load: %s: a write failed: the history is not whole\n",
                r->o->history);
        rc = 1;
    }
    for (int i = 0; r->conns && i < r->o->conns; i++) {
        conn_close(&r->conns[i]);
        free(r->conns[i].req);
        free(r->conns[i].in);
    }
    for (int i = 0; r->targets && i < r->n_targets; i++)
        free(r->targets[i].head);
    free(r->zipf_cdf);
    free(r->targets);
    free(r->conns);
    json_decref(r->st.errors);
    if (r->epfd >= 0)
        close(r->epfd);
    return rc;
}

int main(int argc, char **argv)
{
    static struct load_opts o;
    static struct load_run r;
    int rc;

    rc = opts_parse(argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    signals_set();
    rc = run_init(&r, &o);
    if (rc == 0) {
        r.start_ns = now_ns();
        r.stop_ns = r.start_ns + (int64_t)(o.seconds * 1e9);
        rc = run_loop(&r) == 0 ? 0 : 1;
    }
    if (rc == 0) {
        summary_print(&r, (double)(now_ns() - r.start_ns) / 1e9);
        if (r.st.requests == 0) {
            fprintf(stderr, "sale-load: no request could be sent to %s (%lld connect failures)\n",
                    o.host, r.st.connect_failures);
            rc = 1;
        }
    }
    fflush(stdout);
    return run_free(&r) ? 1 : rc;
}
