/* main.c - inventory-service: flags, start-up, and a clean stop on SIGTERM or SIGINT. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service/http.h"
#include "service/pipeline.h"
#include "service/service.h"

struct service_config svc;
struct lock_client *svc_lock;

void log_event(const char *level, const char *fmt, ...)
{
    char when[32], msg[512];
    time_t now = time(NULL);
    struct tm tm;
    va_list ap;

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s %s %s %s\n", when, level, svc.name[0] ? svc.name : "inventory", msg);
}

/* A baseline of the service, not a lock: the whole sale as one Lua script. It runs
 * with the lock library's `none` (for its connections) and never takes a lock. */
static const struct {
    const char *name, *alias, *title, *flaw;
} atomic_baseline = {
    "atomic", "script", "the whole sale in one Lua script, no lock",
    "none for one key; no room for work outside Redis",
};

static void usage(FILE *out)
{
    fprintf(out,
        "usage: inventory-service [options]\n"
        "\n"
        "Sells stock held in Redis under one of the lock versions.\n"
        "\n"
        "  --port P          HTTP port (default 8080)\n"
        "  --bind ADDR       IPv4 address to listen on (default 127.0.0.1)\n"
        "  --redis HOST:PORT Redis server (default 127.0.0.1:6379)\n"
        "  --lock V          lock version, by name or alias (default v8); see below\n"
        "  --ttl-ms T        lease of the Redis locks, in ms (default 30000)\n"
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
        "  --redis-standby H:P,...  where the data Redis may be after a failover (its\n"
        "                    replicas): each new connection goes to the first of --redis and\n"
        "                    these that says it is a master (ROLE), as a Sentinel client would\n"
        "  --replicas N      a grant counts only once N replicas of the data Redis have it\n"
        "                    (WAIT N for a tenth of --ttl-ms, at most 4 s; default 0); too\n"
        "                    few: the grant is given back, 503 lock_unavailable\n"
        "  --redis-password-file F  the Redis password, first line of F (else the environment:\n"
        "                    REDIS_PASSWORD, and REDIS_USER for an ACL user); used for every\n"
        "                    Redis (data, standbys, lock masters), never in argv or a log\n"
        "  --idempotency-ttl S  how long the first answer to an Idempotency-Key is kept, in\n"
        "                    seconds (default 86400: 24 h); a repeat within it sells nothing\n"
        "  --faults          accept the teaching faults work_ms, release_gap_ms, nested=1\n"
        "                    and keep the mutual-exclusion probe (probe:{I}, overlaps:{I})\n"
        "  --name NAME       instance name in answers, logs and the ledger (default inventory-PORT)\n"
        "  --max-conns N     most connections served at once (default 1000; more are\n"
        "                    refused); a lock version without --combine gives each its own\n"
        "                    thread. Other limits: a connection idle (or stalled mid-request)\n"
        "                    for 120 s is closed; a request line and headers must fit in\n"
        "                    32 KB (else 414 or 431); a body is read and ignored\n"
        "  --list-versions   print the versions, tab-separated: name, alias, technique, flaw\n"
        "  --help            this text\n"
        "\n"
        "Lock versions:\n");
    for (const struct lock_ops *const *v = lock_versions(); *v; v++)
        fprintf(out, "  %-7s %-12s %s\n          flaw: %s\n", (*v)->name, (*v)->alias,
                (*v)->title, (*v)->flaw);
    fprintf(out, "  %-7s %-12s %s\n          flaw: %s\n", atomic_baseline.name,
            atomic_baseline.alias, atomic_baseline.title, atomic_baseline.flaw);
}

static void list_versions(void)
{
    for (const struct lock_ops *const *v = lock_versions(); *v; v++)
        printf("%s\t%s\t%s\t%s\n", (*v)->name, (*v)->alias, (*v)->title, (*v)->flaw);
    printf("%s\t%s\t%s\t%s\n", atomic_baseline.name, atomic_baseline.alias,
           atomic_baseline.title, atomic_baseline.flaw);
}

/* The Redis credentials: the first line of FILE when given, else REDIS_PASSWORD; the user
 * from REDIS_USER. The variable is removed from the environment once read. Exits with a
 * reason (never the password) when the file cannot be used. */
static void read_password(const char *file)
{
    const char *env = getenv("REDIS_PASSWORD"), *user = getenv("REDIS_USER");
    size_t n;

    if (user && *user)
        svc.redis_user = user;
    if (file) {
        FILE *f = fopen(file, "r");
        if (f == NULL) {
            fprintf(stderr, "inventory-service: --redis-password-file %s: %s\n", file, strerror(errno));
            exit(2);
        }
        if (fgets(svc.redis_password, sizeof(svc.redis_password), f) == NULL)
            svc.redis_password[0] = '\0';
        fclose(f);
    } else if (env) {
        snprintf(svc.redis_password, sizeof(svc.redis_password), "%s", env);
    }
    n = strcspn(svc.redis_password, "\r\n");
    if (file && (n == 0 || n == sizeof(svc.redis_password) - 1)) {
        fprintf(stderr, "inventory-service: --redis-password-file %s: want one line of 1 to %zu characters\n",
                file, sizeof(svc.redis_password) - 2);
        exit(2);
    }
    svc.redis_password[n] = '\0';
    if (env) {
        /* Wipe the bytes too: /proc/PID/environ shows the original block. */
        for (char *p = (char *)env; *p; p++)
            *p = 'x';
        unsetenv("REDIS_PASSWORD");
    }
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

static void parse_flags(int argc, char **argv)
{
    static const struct option opts[] = {
        { "port", required_argument, NULL, 'p' },     { "bind", required_argument, NULL, 'b' },
        { "redis", required_argument, NULL, 'r' },    { "lock", required_argument, NULL, 'l' },
        { "ttl-ms", required_argument, NULL, 't' },   { "wait-ms", required_argument, NULL, 'w' },
        { "retry-ms", required_argument, NULL, 'y' }, { "faults", no_argument, NULL, 'f' },
        { "name", required_argument, NULL, 'n' },     { "max-conns", required_argument, NULL, 'm' },
        { "wait", required_argument, NULL, 'W' },     { "combine", required_argument, NULL, 'c' },
        { "list-versions", no_argument, NULL, 'L' },  { "help", no_argument, NULL, 'h' },
        { "lock-redis", required_argument, NULL, 'M' },
        { "redis-standby", required_argument, NULL, 'S' }, { "replicas", required_argument, NULL, 'R' },
        { "redis-password-file", required_argument, NULL, 'P' },
        { "idempotency-ttl", required_argument, NULL, 'I' },
        { NULL, 0, NULL, 0 },
    };
    const char *lock = "v8", *colon, *password_file = NULL;
    int o;

    svc.port = 8080;
    strcpy(svc.bind, "127.0.0.1");
    strcpy(svc.redis_host, "127.0.0.1");
    svc.redis_port = 6379;
    svc.ttl_ms = 30000;
    svc.wait_ms = 10000;
    svc.retry_ms = 10;
    svc.max_conns = 1000;
    svc.combine = 1;
    svc.idem_ttl_ms = 86400 * 1000L;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'p': svc.port = (int)number_flag("port", optarg, 1, 65535); break;
        case 'b':
            if (snprintf(svc.bind, sizeof(svc.bind), "%s", optarg) >= (int)sizeof(svc.bind))
                goto bad_bind;
            break;
        case 'r':
            colon = strrchr(optarg, ':');
            if (colon == NULL || colon == optarg || (size_t)(colon - optarg) >= sizeof(svc.redis_host)) {
                fprintf(stderr, "inventory-service: --redis wants HOST:PORT, not '%s'\n", optarg);
                exit(2);
            }
            memcpy(svc.redis_host, optarg, colon - optarg);
            svc.redis_host[colon - optarg] = '\0';
            svc.redis_port = (int)number_flag("redis port", colon + 1, 1, 65535);
            break;
        case 'l': lock = optarg; break;
        case 't': svc.ttl_ms = number_flag("ttl-ms", optarg, 10, 86400000); break;
        case 'w': svc.wait_ms = number_flag("wait-ms", optarg, 0, 3600000); break;
        case 'y': svc.retry_ms = number_flag("retry-ms", optarg, 1, 10000); break;
        case 'f': svc.faults = 1; break;
        case 'n':
            if (!*optarg || snprintf(svc.name, sizeof(svc.name), "%s", optarg) >= (int)sizeof(svc.name)) {
                fprintf(stderr, "inventory-service: --name wants 1 to %zu characters\n", sizeof(svc.name) - 1);
                exit(2);
            }
            break;
        case 'm': svc.max_conns = (int)number_flag("max-conns", optarg, 1, 100000); break;
        case 'W':
            if ((svc.wait = lock_wait_parse(optarg)) == LOCK_WAIT_DEFAULT ||
                svc.wait == LOCK_WAIT_LOCAL) {
                fprintf(stderr, "inventory-service: --wait wants poll or notify, not '%s'\n", optarg);
                exit(2);
            }
            break;
        case 'c': svc.combine = (int)number_flag("combine", optarg, 1, 256); break;
        case 'M': svc.lock_masters = optarg; break;
        case 'S':
            if (lock_servers_parse(optarg, (struct lock_server[LOCK_SERVERS_MAX]){ 0 },
                                   LOCK_SERVERS_MAX) <= 0) {
                fprintf(stderr, "inventory-service: --redis-standby wants HOST:PORT,... (at most %d), not '%s'\n",
                        LOCK_SERVERS_MAX, optarg);
                exit(2);
            }
            svc.redis_standby = optarg;
            break;
        case 'R': svc.replicas = (int)number_flag("replicas", optarg, 0, 16); break;
        case 'P': password_file = optarg; break;
        case 'I': svc.idem_ttl_ms = number_flag("idempotency-ttl", optarg, 1, 30 * 86400) * 1000; break;
        case 'L': list_versions(); exit(0);
        case 'h': usage(stdout); exit(0);
        default:
            fprintf(stderr, "inventory-service: unknown or incomplete option '%s' (see --help)\n",
                    argv[optind - 1]);
            exit(2);
        }
    }
    read_password(password_file);
    if (optind < argc) {
        fprintf(stderr, "inventory-service: unexpected argument '%s' (see --help)\n", argv[optind]);
        exit(2);
    }
    if (strcmp(lock, atomic_baseline.name) == 0 || strcmp(lock, atomic_baseline.alias) == 0) {
        svc.atomic = 1;
        svc.version = atomic_baseline.name;
        svc.ops = lock_find("none");
        if (svc.wait != LOCK_WAIT_DEFAULT) {
            fprintf(stderr, "inventory-service: the atomic sale takes no lock: no --wait\n");
            exit(2);
        }
        goto named;
    }
    svc.ops = lock_find(lock);
    if (svc.ops != NULL)
        svc.version = svc.ops->name;
    if (svc.ops == NULL) {
        fprintf(stderr, "inventory-service: unknown lock version '%s' (see --help)\n", lock);
        exit(2);
    }
named:
    if (!svc.name[0])
        snprintf(svc.name, sizeof(svc.name), "inventory-%d", svc.port);
    return;
bad_bind:
    fprintf(stderr, "inventory-service: --bind wants an IPv4 address\n");
    exit(2);
}

/* 32 random hex digits: this process's identity in every lock owner id. */
static int make_instance_id(char out[33])
{
    unsigned char raw[16];
    int fd = open("/dev/urandom", O_RDONLY);

    if (fd < 0 || read(fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", raw[i]);
    return 0;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr = { .sin_family = AF_INET };
    struct lock_config cfg;
    struct lock_error err;
    struct MHD_Daemon *d;
    sigset_t stop;
    int sig;

    parse_flags(argc, argv);
    if (inet_pton(AF_INET, svc.bind, &addr.sin_addr) != 1) {
        fprintf(stderr, "inventory-service: --bind wants an IPv4 address, not '%s'\n", svc.bind);
        return 2;
    }
    addr.sin_port = htons((uint16_t)svc.port);
    if (make_instance_id(svc.instance_id) != 0) {
        fprintf(stderr, "inventory-service: cannot read /dev/urandom\n");
        return 1;
    }

    /* Every thread started from here on inherits these signals blocked; main waits for them. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    cfg = (struct lock_config){ svc.redis_host, svc.redis_port, svc.ttl_ms, svc.retry_ms,
                                svc.instance_id, svc.wait, svc.lock_masters,
                                svc.redis_standby, svc.replicas, svc.redis_user,
                                svc.redis_password[0] ? svc.redis_password : NULL };
    svc_lock = lock_client_create(svc.ops, &cfg, &err);
    explicit_bzero(svc.redis_password, sizeof(svc.redis_password)); /* the library has its copy */
    if (svc_lock == NULL) {
        fprintf(stderr, "inventory-service: lock %s: %s\n", svc.version, err.msg);
        return 1;
    }
    /* A sale under a lock that is not combined blocks its thread while it waits: one
     * thread per connection, so each version's code stays a plain sequence of calls. The
     * atomic sale and combined sales run on an event loop: connections are suspended
     * while pipeline.c's threads serve them in batches. */
    svc.event_loop = svc.atomic || svc.combine > 1;
    if (svc.event_loop && pipeline_start() != 0) {
        fprintf(stderr, "inventory-service: cannot start the pipeline thread\n");
        lock_client_destroy(svc_lock);
        return 1;
    }
    if (svc.event_loop)
        d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                                 MHD_USE_ITC | MHD_USE_ERROR_LOG,
                             0, NULL, NULL, http_handle, NULL,
                             MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned)svc.max_conns,
                             MHD_OPTION_CONNECTION_TIMEOUT, 120u,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                             MHD_OPTION_NOTIFY_COMPLETED, http_completed, NULL,
                             MHD_OPTION_END);
    else
        d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                 MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG,
                             0, NULL, NULL, http_handle, NULL,
                             MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned)svc.max_conns,
                             MHD_OPTION_CONNECTION_TIMEOUT, 120u,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                             MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
                             MHD_OPTION_NOTIFY_COMPLETED, http_completed, NULL,
                             MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "inventory-service: cannot listen on %s:%d (in use?)\n", svc.bind, svc.port);
        pipeline_stop();
        lock_client_destroy(svc_lock);
        return 1;
    }
    log_event("INFO", "listening on %s:%d, lock %s, wait %s, combine %d, redis %s:%d%s%s, "
              "replicas %d, ttl %ld ms, wait limit %ld ms%s", svc.bind, svc.port, svc.version,
              svc.atomic ? "none" : lock_wait_name(svc_lock->cfg.wait), svc.combine,
              svc.redis_host, svc.redis_port, svc.redis_standby ? " standby " : "",
              svc.redis_standby ? svc.redis_standby : "", svc.replicas, svc.ttl_ms, svc.wait_ms,
              svc.faults ? ", faults on" : "");

    while (sigwait(&stop, &sig) != 0)
        ;
    /* Graceful: accept nothing more; let the sales in flight finish (a sale waits for
     * the lock at most --wait-ms) and be answered; their grants are released as they
     * end; then stop. */
    log_event("INFO", "stopping on %s: %lld sales in flight", sig == SIGINT ? "SIGINT" : "SIGTERM",
              metrics_in_flight_now());
    MHD_quiesce_daemon(d);
    for (long long end = lock_now_ms() + svc.wait_ms + 500;
         metrics_in_flight_now() > 0 && lock_now_ms() < end;)
        lock_sleep_ms(5);
    pipeline_stop();  /* answers what is still queued; later sales answer 503 at once */
    lock_sleep_ms(50); /* the last answers leave the event loop */
    MHD_stop_daemon(d);
    log_event("INFO", "stopped");
    lock_client_destroy(svc_lock);
    return 0;
}
