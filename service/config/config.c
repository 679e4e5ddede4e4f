/* config.c - The instance's configuration, from its flags: defaults, one small setter per
 * flag, --help. Everything here runs before any other thread. */
#include "service/config/config.h"

#include "common/item.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct service_config svc = {
    .bind = "127.0.0.1",
    .port = 8080,
    .redis_host = "127.0.0.1",
    .redis_port = 6379,
    .ttl_ms = LOCK_TTL_DEFAULT_MS,
    .wait_ms = 10000,
    .retry_ms = 10,
    .max_conns = 1000,
    .max_streams = 16,
    .combine = 1,
    .workers = 4,
    .idem_ttl_ms = 86400 * 1000L,
    .zk_session_ms = 10000,
    .set_stock = -1,
    .lock_name = "v8",
};
struct lock_client *svc_lock;
struct store *svc_store;
const struct engine *svc_engine;

/* Prints the versions (--help, --list-versions): main's, who knows the sale's modes. */
static void (*print_versions)(FILE *out, int tsv);

/* --help's first part: what it is, and where the stock lives. */
static void usage_where(FILE *out)
{
    fputs(
        "usage: inventory-service [options]\n"
        "\n"
        "Sells stock held in Redis (or ZooKeeper) under one of the lock versions.\n"
        "\n"
        "  --port P          HTTP port (default 8080)\n"
        "  --bind ADDR       IPv4 address to listen on (default 127.0.0.1)\n"
        "  --redis HOST:PORT Redis server (default 127.0.0.1:6379)\n"
        "  --sentinel H:P,H:P,H:P  instead of --redis: ask these Redis Sentinels where the\n"
        "                    master is, confirm it with ROLE, and follow their failovers\n"
        "                    (+switch-master); with --sentinel-master NAME. Their password\n"
        "                    in SENTINEL_PASSWORD (SENTINEL_USER for an ACL user) or\n"
        "  --sentinel-password-file F  (first line of F)\n"
        "  --redis-cluster H:P,H:P,...  instead of --redis: Redis Cluster, these its seed\n"
        "                    nodes; each item's keys go to its slot's master (MOVED, ASK and\n"
        "                    TRYAGAIN followed; the map read again when it moves)\n"
        "  --zookeeper H:P,H:P,H:P  instead of Redis: the stock (and v11's lock) in this\n"
        "                    ZooKeeper ensemble, one session for the instance; for --lock v11\n"
        "                    (zookeeper) and --lock atomic only\n"
        "  --zk-session-ms T the ZooKeeper session timeout asked for (default 10000; the\n"
        "                    ensemble clamps it to 2 to 20 ticks): v11's lease\n"
        , out);
}

static void usage(FILE *out)
{
    usage_where(out);
    fprintf(out,
        "  --lock V          lock version, by name or alias (default v8); see below\n"
        "  --ttl-ms T        lease of the Redis locks, in ms (default %d)\n"
        "  --wait-ms W       how long a sale waits for the lock before lock_timeout (default 10000)\n"
        "  --retry-ms R      poll: sleep between tries while the lock is taken (default 10)\n"
        "  --wait poll|notify  how a waiter learns the lock is free (default: the version's;\n"
        "                    notify for v8): poll tries every retry-ms; notify sleeps until\n"
        "                    the release's message, queueing locally first come first served\n"
        "  --combine N       serve up to N waiting sales of one item in one critical section:\n"
        "                    one read, one write (default 1: off). A grant then serves batch\n"
        "                    after batch while sales keep coming, for at most 10 ms (a third\n"
        "                    of --ttl-ms if less), and gives way sooner when another instance\n"
        "                    asks for the lock. The sales wait on an event loop, not a thread\n"
        "                    each. The atomic sale always does, and sends what waits as one\n"
        "                    script per item\n"
        "  --lock-redis H:P,H:P,H:P  redlock (v10): its N = 2f + 1 independent lock masters;\n"
        "                    a grant needs N / 2 + 1 of them (stock and tokens stay on --redis)\n"
        "  --workers N       --combine: at most N worker threads (default 4); an item's sales\n"
        "                    go to one worker (by its name), which serves its items in turn\n"
        "  --replicas N      a grant and a sale count only once N replicas of the data Redis\n"
        "                    have them (WAIT N after the grant and after the sale's write, for\n"
        "                    a tenth of --ttl-ms, at most 4 s; default 0: no WAIT). A grant\n"
        "                    too few have is given back: 503 lock_unavailable; a sale whose\n"
        "                    WAIT falls short answers outcome_unknown (503: it is written on\n"
        "                    the master, and a failover may undo it; a sold-out sale stays 409)\n"
        "  --redis-password-file F  the Redis password, first line of F (else the environment:\n"
        "                    REDIS_PASSWORD, and REDIS_USER for an ACL user); used for every\n"
        "                    Redis (data, lock masters), never in argv or a log\n"
        "  --idempotency-ttl S  how long the first answer to an Idempotency-Key is kept, in\n"
        "                    seconds (default 86400: 24 h); a repeat within it sells nothing\n"
        "  --faults          accept the teaching faults work_ms, release_gap_ms, write_gap_ms,\n"
        "                    nested=1, and keep the mutual-exclusion probe (probe:{I},\n"
        "                    overlaps:{I})\n"
        "  --name NAME       instance name in answers, logs and the ledger (default inventory-PORT)\n"
        "  --max-conns N     most connections served at once (default 1000; more are\n"
        "                    refused); a lock version without --combine gives each its own\n"
        "                    thread. Other limits: a connection idle (or stalled mid-request)\n"
        "                    for 120 s is closed; a request line and headers must fit in\n"
        "                    32 KB (else 414 or 431); a body is read and ignored\n"
        "  --no-events       do not publish the lock's and the sales' events (events:{I},\n"
        "                    for the live page /live); they are on by default, and cost\n"
        "                    nothing while no page listens to an item\n"
        "  --max-streams N   most /events streams served at once (default 16; more answer\n"
        "                    503 too_many_streams), apart from --max-conns' sales\n"
        "  --set-stock N     do not serve: set the stock of --item I (or of --items K: item0001\n"
        "                    .. itemK) to N in the store, sold to 0, the ledger emptied\n"
        "  --get-stock       do not serve: print each item's stock, sold and ledger entries\n"
        "  --list-versions   print the versions, tab-separated: name, alias, technique, flaw\n"
        "  --help            this text\n"
        "\n"
        "Lock versions:\n", LOCK_TTL_DEFAULT_MS);
    print_versions(out, 0);
}

/* A password: the first line of FILE when given, else the environment variable VAR
 * (removed from the environment once read, its bytes wiped: /proc/PID/environ shows the
 * original block). Exits with a reason (never the password) when the file cannot be
 * used. FLAG names the file's flag in that reason. */
static void read_secret(const char *file, const char *var, const char *flag, char *out,
                        size_t size)
{
    const char *env = getenv(var);
    size_t n;

    if (file) {
        FILE *f = fopen(file, "r");
        if (f == NULL) {
            fprintf(stderr, "inventory-service: %s %s: %s\n", flag, file, strerror(errno));
            exit(2);
        }
        if (fgets(out, (int)size, f) == NULL)
            out[0] = '\0';
        fclose(f);
    } else if (env) {
        snprintf(out, size, "%s", env);
    }
    n = strcspn(out, "\r\n");
    if (file && (n == 0 || n == size - 1)) {
        fprintf(stderr, "inventory-service: %s %s: want one line of 1 to %zu characters\n",
                flag, file, size - 2);
        exit(2);
    }
    out[n] = '\0';
    if (env) {
        for (char *p = (char *)env; *p; p++)
            *p = 'x';
        unsetenv(var);
    }
}

/* The credentials: Redis's (REDIS_USER, REDIS_PASSWORD or --redis-password-file) and the
 * sentinels' (SENTINEL_USER, SENTINEL_PASSWORD or --sentinel-password-file). */
static void read_passwords(const char *redis_file, const char *sentinel_file)
{
    const char *user = getenv("REDIS_USER"), *sentinel_user = getenv("SENTINEL_USER");

    if (user && *user)
        svc.redis_user = user;
    if (sentinel_user && *sentinel_user)
        svc.sentinel_user = sentinel_user;
    read_secret(redis_file, "REDIS_PASSWORD", "--redis-password-file", svc.redis_password,
                sizeof(svc.redis_password));
    read_secret(sentinel_file, "SENTINEL_PASSWORD", "--sentinel-password-file",
                svc.sentinel_password, sizeof(svc.sentinel_password));
}

/* Parses a whole number in [min, max] or exits with a one-line reason. */
static long number_flag(const char *flag, const char *s, long min, long max)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "inventory-service: --%s wants a whole number from %ld to %ld, not '%s'\n",
                flag, min, max, s);
        exit(2);
    }
    return v;
}

void config_fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "inventory-service: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* --- one setter per flag --- */

static const char *password_file, *sentinel_password_file;
static int redis_given, idem_ttl_given;

static void set_port(const char *a) { svc.port = (int)number_flag("port", a, 1, 65535); }
static void set_lock(const char *a) { svc.lock_name = a; }
static void set_ttl(const char *a) { svc.ttl_ms = number_flag("ttl-ms", a, 10, 86400000); }
static void set_wait_ms(const char *a) { svc.wait_ms = number_flag("wait-ms", a, 0, 3600000); }
static void set_retry(const char *a) { svc.retry_ms = number_flag("retry-ms", a, 1, 10000); }
static void set_faults(const char *a) { (void)a; svc.faults = 1; }
static void set_max_conns(const char *a) { svc.max_conns = (int)number_flag("max-conns", a, 1, 100000); }
static void set_max_streams(const char *a) { svc.max_streams = (int)number_flag("max-streams", a, 0, 1000); }
static void set_no_events(const char *a) { (void)a; svc.no_events = 1; }
static void set_combine(const char *a) { svc.combine = (int)number_flag("combine", a, 1, 256); }
static void set_workers(const char *a) { svc.workers = (int)number_flag("workers", a, 1, 256); }
static void set_masters(const char *a) { svc.lock_masters = a; }
static void set_replicas(const char *a) { svc.replicas = (int)number_flag("replicas", a, 0, 16); }
static void set_password_file(const char *a) { password_file = a; }
static void set_sentinel_password_file(const char *a) { sentinel_password_file = a; }
static void set_sentinel_master(const char *a) { svc.sentinel_master = a; }

/* A list of HOST:PORT for --NAME: a or exit. */
static const char *server_list(const char *name, const char *a)
{
    struct rd_server parsed[RD_SERVERS_MAX];

    if (rd_servers_parse(a, parsed, RD_SERVERS_MAX) <= 0)
        config_fail("--%s wants HOST:PORT,... (at most %d), not '%s'", name, RD_SERVERS_MAX, a);
    return a;
}
static void set_sentinels(const char *a) { svc.sentinels = server_list("sentinel", a); }
static void set_cluster(const char *a) { svc.cluster = server_list("redis-cluster", a); }
static void set_zookeeper(const char *a) { svc.zookeeper = server_list("zookeeper", a); }
static void set_zk_session(const char *a) { svc.zk_session_ms = number_flag("zk-session-ms", a, 100, 600000); }
static void set_set_stock(const char *a) { svc.set_stock = number_flag("set-stock", a, 0, 1000000000000L); }
static void set_get_stock(const char *a) { (void)a; svc.get_stock = 1; }
static void set_items(const char *a) { svc.items = (int)number_flag("items", a, 1, 100000); }
static void set_item(const char *a)
{
    if (!item_is_valid(a))
        config_fail("--item wants 1 to %d characters of A-Z a-z 0-9 _ . -, not '%s'", ITEM_MAX, a);
    svc.item = a;
}
static void list_versions_and_exit(const char *a) { (void)a; print_versions(stdout, 1); exit(0); }
static void help_and_exit(const char *a) { (void)a; usage(stdout); exit(0); }

static void set_idem_ttl(const char *a)
{
    svc.idem_ttl_ms = number_flag("idempotency-ttl", a, 1, 30 * 86400) * 1000;
    idem_ttl_given = 1;
}

static void set_bind(const char *a)
{
    if (snprintf(svc.bind, sizeof(svc.bind), "%s", a) >= (int)sizeof(svc.bind))
        config_fail("--bind wants an IPv4 address");
}

static void set_redis(const char *a)
{
    const char *colon = strrchr(a, ':');

    redis_given = 1;
    if (colon == NULL || colon == a || (size_t)(colon - a) >= sizeof(svc.redis_host))
        config_fail("--redis wants HOST:PORT, not '%s'", a);
    memcpy(svc.redis_host, a, (size_t)(colon - a));
    svc.redis_host[colon - a] = '\0';
    svc.redis_port = (int)number_flag("redis port", colon + 1, 1, 65535);
}

static void set_name(const char *a)
{
    if (!*a || snprintf(svc.name, sizeof(svc.name), "%s", a) >= (int)sizeof(svc.name))
        config_fail("--name wants 1 to %zu characters", sizeof(svc.name) - 1);
}

static void set_wait(const char *a)
{
    svc.wait = lock_wait_parse(a);
    if (svc.wait == LOCK_WAIT_DEFAULT || svc.wait == LOCK_WAIT_LOCAL)
        config_fail("--wait wants poll or notify, not '%s'", a);
}

/* A retired flag: what replaced it. */
static void retired_standby(const char *a)
{
    (void)a;
    config_fail("--redis-standby is retired: to follow a failover, run Redis under Sentinel and "
             "give --sentinel H:P,H:P,H:P --sentinel-master NAME instead (see --help)");
}

/* Every flag, its argument and its setter. */
enum { ARG_NONE, ARG_REQUIRED, ARG_ANY };   /* ARG_ANY: with or without one (a retired flag) */
static const struct flag {
    const char *name;
    int has_arg;
    void (*set)(const char *arg);
} flags[] = {
    { .name = "port", .has_arg = ARG_REQUIRED, .set = set_port },
    { .name = "bind", .has_arg = ARG_REQUIRED, .set = set_bind },
    { .name = "redis", .has_arg = ARG_REQUIRED, .set = set_redis },
    { .name = "lock", .has_arg = ARG_REQUIRED, .set = set_lock },
    { .name = "ttl-ms", .has_arg = ARG_REQUIRED, .set = set_ttl },
    { .name = "wait-ms", .has_arg = ARG_REQUIRED, .set = set_wait_ms },
    { .name = "retry-ms", .has_arg = ARG_REQUIRED, .set = set_retry },
    { .name = "faults", .has_arg = ARG_NONE, .set = set_faults },
    { .name = "name", .has_arg = ARG_REQUIRED, .set = set_name },
    { .name = "max-conns", .has_arg = ARG_REQUIRED, .set = set_max_conns },
    { .name = "max-streams", .has_arg = ARG_REQUIRED, .set = set_max_streams },
    { .name = "no-events", .has_arg = ARG_NONE, .set = set_no_events },
    { .name = "wait", .has_arg = ARG_REQUIRED, .set = set_wait },
    { .name = "combine", .has_arg = ARG_REQUIRED, .set = set_combine },
    { .name = "workers", .has_arg = ARG_REQUIRED, .set = set_workers },
    { .name = "lock-redis", .has_arg = ARG_REQUIRED, .set = set_masters },
    { .name = "redis-standby", .has_arg = ARG_ANY, .set = retired_standby },
    { .name = "replicas", .has_arg = ARG_REQUIRED, .set = set_replicas },
    { .name = "redis-password-file", .has_arg = ARG_REQUIRED, .set = set_password_file },
    { .name = "sentinel", .has_arg = ARG_REQUIRED, .set = set_sentinels },
    { .name = "redis-cluster", .has_arg = ARG_REQUIRED, .set = set_cluster },
    { .name = "zookeeper", .has_arg = ARG_REQUIRED, .set = set_zookeeper },
    { .name = "zk-session-ms", .has_arg = ARG_REQUIRED, .set = set_zk_session },
    { .name = "sentinel-master", .has_arg = ARG_REQUIRED, .set = set_sentinel_master },
    { .name = "sentinel-password-file", .has_arg = ARG_REQUIRED, .set = set_sentinel_password_file },
    { .name = "idempotency-ttl", .has_arg = ARG_REQUIRED, .set = set_idem_ttl },
    { .name = "set-stock", .has_arg = ARG_REQUIRED, .set = set_set_stock },
    { .name = "get-stock", .has_arg = ARG_NONE, .set = set_get_stock },
    { .name = "item", .has_arg = ARG_REQUIRED, .set = set_item },
    { .name = "items", .has_arg = ARG_REQUIRED, .set = set_items },
    { .name = "list-versions", .has_arg = ARG_NONE, .set = list_versions_and_exit },
    { .name = "help", .has_arg = ARG_NONE, .set = help_and_exit },
};
enum { FLAGS = sizeof(flags) / sizeof(flags[0]) };

/* Exactly one place for the stock: Redis (--redis, --sentinel with --sentinel-master, or
 * --redis-cluster) or ZooKeeper (--zookeeper). */
static void check_where(void)
{
    if ((svc.sentinels != NULL) + redis_given + (svc.cluster != NULL) + (svc.zookeeper != NULL) > 1)
        config_fail("give one of --redis, --sentinel, --redis-cluster and --zookeeper");
    if (svc.zookeeper && idem_ttl_given)
        config_fail("--idempotency-ttl is not honoured on ZooKeeper (an idempotency key's answer "
                    "is kept until the ledger is reset): leave it out with --zookeeper");
    if ((svc.sentinels == NULL) != (svc.sentinel_master == NULL))
        config_fail("--sentinel and --sentinel-master go together");
    if (svc.zookeeper)
        snprintf(svc.redis_label, sizeof(svc.redis_label), "%.200s", svc.zookeeper);
    else if (svc.sentinels)
        snprintf(svc.redis_label, sizeof(svc.redis_label), "sentinel master %.64s", svc.sentinel_master);
    else if (svc.cluster)
        snprintf(svc.redis_label, sizeof(svc.redis_label), "cluster %.200s", svc.cluster);
    else
        snprintf(svc.redis_label, sizeof(svc.redis_label), "%.200s:%d", svc.redis_host, svc.redis_port);
}

void config_parse(int argc, char **argv, void (*versions)(FILE *out, int tsv))
{
    struct option opts[FLAGS + 1];
    int o, index;

    for (int i = 0; i < FLAGS; i++)
        opts[i] = (struct option){ .name = flags[i].name,
                                   .has_arg = flags[i].has_arg == ARG_ANY ? optional_argument
                                              : flags[i].has_arg == ARG_REQUIRED ? required_argument
                                              : no_argument };
    opts[FLAGS] = (struct option){ 0 };
    print_versions = versions;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "", opts, &index)) != -1) {
        if (o != 0)
            config_fail("unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        flags[index].set(optarg);
    }
    read_passwords(password_file, sentinel_password_file);
    check_where();
    if (optind < argc)
        config_fail("unexpected argument '%s' (see --help)", argv[optind]);
    if (!svc.name[0])
        snprintf(svc.name, sizeof(svc.name), "inventory-%d", svc.port);
}
