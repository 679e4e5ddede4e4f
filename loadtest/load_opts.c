/* load_opts.c - sale-load's command line: options and usage, the URL and the network rule
 * for its host, the item lists (by the rule the service applies, common/item.h). */
#include "loadtest/load_opts.h"

#include "common/item.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define STR(x)  #x
#define XSTR(x) STR(x)

/* usage: the --help text, on f. */
static void usage(FILE *f)
{
    fputs("Usage: sale-load --url http://HOST:PORT/PATH[?QUERY] -c CONNS -d SECONDS\n"
          "                 [--history FILE] [--keys] [--timeout-ms MS] [--items I1,I2,...]\n"
          "                 [--item-count K] [--zipf S [--seed N]] [--rate R]\n"
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
          "                      \"item\":\"I\",\"key\":\"...\",\"instance\":\"...\",\"token\":T,\"conn\":C,\n"
          "                      \"request_id\":\"...\",\"retry_after\":true};\n"
          "                     monotonic ns of the first byte sent and of the whole answer;\n"
          "                     status 0: no answer; conn: its connection (0..CONNS-1);\n"
          "                     retry_after: only when the answer had a Retry-After header\n"
          "  --keys             send a unique Idempotency-Key with each request (PID-CONN-SEQ)\n"
          "  --timeout-ms MS    wait at most MS for an answer, also after SECONDS (default 10000)\n"
          "  --items I1,I2,...  spread the requests round robin over these items (item= in the\n"
          "                     query is replaced or added; at most 100000)\n"
          "  --item-count K     the same over item0001 .. itemK (deploy/stock N --items K)\n"
          "  --zipf S           choose each request's item at random instead, the item of rank\n"
          "                     r (the r-th listed: item0001 is the hottest) with weight 1/r^S\n"
          "                     (S > 0; 1.1: a few hot items, a long tail)\n"
          "  --seed N           the random choice's seed (default: from the clock)\n"
          "  --rate R           send R requests a second in all, on a fixed schedule (open\n"
          "                     loop), each on a free connection; a request's latency counts\n"
          "                     from when it was due, its wait for a free connection included\n"
          "                     (default: each connection sends again as soon as answered)\n"
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

/* is_test_net: 1 when h (host order) is in 198.18.0.0/15, the test hosts' range. */
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

/* items_parse: cuts o->items_arg at its commas into o->items. Returns NULL or why not. */
static const char *items_parse(struct load_opts *o)
{
    char *s = o->items_arg, *comma;

    for (;;) {
        comma = strchr(s, ',');
        if (comma)
            *comma = '\0';
        if (!item_is_valid(s))
            return "--items: each item is 1 to " XSTR(ITEM_MAX)
                   " characters of A-Z a-z 0-9 _ . -";
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

int load_opts_parse(int argc, char **argv, struct load_opts *o)
{
    static const struct option longs[] = {
        { "url", required_argument, NULL, 'u' }, { "history", required_argument, NULL, 'H' },
        { "keys", no_argument, NULL, 'k' }, { "timeout-ms", required_argument, NULL, 't' },
        { "items", required_argument, NULL, 'i' }, { "help", no_argument, NULL, 'h' },
        { "item-count", required_argument, NULL, 'n' }, { "zipf", required_argument, NULL, 'z' },
        { "seed", required_argument, NULL, 's' }, { "rate", required_argument, NULL, 'r' },
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
        case 'r':
            if (number_arg(optarg, 0.1, 1e6, 0, &v) != 0)
                return bad_usage("--rate must be requests a second in 0.1..1e6", optarg);
            o->rate = v;
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
