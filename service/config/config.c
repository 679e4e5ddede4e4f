/* config.c - The instance's configuration, from its flags: defaults, one small setter per
 * flag, reading them, the passwords. Which flags go together is rules.c's (which runs the
 * parse as a whole); --help is usage.c's. Everything here runs before any other thread. */
#include "service/config/internal.h"

#include "common/item.h"
#include "service/parse.h"

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
    .retry_ms = 0,   /* the version's */
    .max_conns = 1000,
    .max_streams = 16,
    .combine = 1,
    .workers = 4,
    .idem_ttl_ms = 86400 * 1000L,
    .zk_session_ms = 10000,
    .mysql_db = "inventory",
    .mysql_user = "inventory",
    .mysql_pool = 64,
    .set_stock = -1,
    .lock_name = "v8",
};
struct lock_client *svc_lock;
struct store *svc_store;
const struct engine *svc_engine;

/* Prints the versions (--help, --list-versions): main's, who knows the sale's modes. */
static void (*print_versions)(FILE *out, int tsv);

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

/* The credentials: Redis's (REDIS_USER, REDIS_PASSWORD or --redis-password-file), the
 * sentinels' (SENTINEL_USER, SENTINEL_PASSWORD or --sentinel-password-file) and, with
 * --mysql, the database's (MYSQL_USER unless --mysql-user, MYSQL_PASSWORD or
 * --mysql-password-file). */
static void read_passwords(const char *redis_file, const char *sentinel_file,
                           const char *mysql_file)
{
    const char *user = getenv("REDIS_USER"), *sentinel_user = getenv("SENTINEL_USER");
    const char *mysql_user = getenv("MYSQL_USER");

    if (user && *user)
        svc.redis_user = user;
    if (sentinel_user && *sentinel_user)
        svc.sentinel_user = sentinel_user;
    read_secret(redis_file, "REDIS_PASSWORD", "--redis-password-file", svc.redis_password,
                sizeof(svc.redis_password));
    read_secret(sentinel_file, "SENTINEL_PASSWORD", "--sentinel-password-file",
                svc.sentinel_password, sizeof(svc.sentinel_password));
    if (svc.mysql == NULL)
        return;   /* MYSQL_PASSWORD is left alone: nothing here reads it */
    if (mysql_user && *mysql_user && !config_given("mysql-user"))
        svc.mysql_user = mysql_user;
    read_secret(mysql_file, "MYSQL_PASSWORD", "--mysql-password-file", svc.mysql_password,
                sizeof(svc.mysql_password));
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

/* A list of HOST:PORT for --NAME: a or exit. */
static const char *server_list(const char *name, const char *a)
{
    struct rd_server parsed[RD_SERVERS_MAX];

    if (rd_servers_parse(a, parsed, RD_SERVERS_MAX) <= 0)
        config_fail("--%s wants HOST:PORT,... (at most %d), not '%s'", name, RD_SERVERS_MAX, a);
    return a;
}

static const char *password_file, *sentinel_password_file, *mysql_password_file;

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
static void set_masters(const char *a) { svc.lock_masters = server_list("lock-redis", a); }
static void set_replicas(const char *a) { svc.replicas = (int)number_flag("replicas", a, 0, 16); }
static void set_password_file(const char *a) { password_file = a; }
static void set_sentinel_password_file(const char *a) { sentinel_password_file = a; }
static void set_sentinel_master(const char *a) { svc.sentinel_master = a; }
static void set_sentinels(const char *a) { svc.sentinels = server_list("sentinel", a); }
static void set_cluster(const char *a) { svc.cluster = server_list("redis-cluster", a); }
static void set_zookeeper(const char *a) { svc.zookeeper = server_list("zookeeper", a); }
static void set_mysql_pool(const char *a)
{
    svc.mysql_pool = (int)number_flag("mysql-pool", a, 1, 1000);
}
static void set_mysql_password_file(const char *a) { mysql_password_file = a; }
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
static void help_and_exit(const char *a) { (void)a; config_usage(stdout, print_versions); exit(0); }

static void set_idem_ttl(const char *a)
{
    svc.idem_ttl_ms = number_flag("idempotency-ttl", a, 1, 30 * 86400) * 1000;
}

static void set_bind(const char *a)
{
    if (snprintf(svc.bind, sizeof(svc.bind), "%s", a) >= (int)sizeof(svc.bind))
        config_fail("--bind wants an IPv4 address");
}

static void set_redis(const char *a)
{
    const char *colon = strrchr(a, ':');

    if (colon == NULL || colon == a || (size_t)(colon - a) >= sizeof(svc.redis_host))
        config_fail("--redis wants HOST:PORT, not '%s'", a);
    memcpy(svc.redis_host, a, (size_t)(colon - a));
    svc.redis_host[colon - a] = '\0';
    svc.redis_port = (int)number_flag("redis port", colon + 1, 1, 65535);
}

static void set_mysql(const char *a)
{
    const char *colon = strrchr(a, ':');

    if (colon == NULL || colon == a || (size_t)(colon - a) >= sizeof(svc.mysql_host))
        config_fail("--mysql wants HOST:PORT, not '%s'", a);
    memcpy(svc.mysql_host, a, (size_t)(colon - a));
    svc.mysql_host[colon - a] = '\0';
    svc.mysql_port = (int)number_flag("mysql port", colon + 1, 1, 65535);
    svc.mysql = a;
}

/* A database's name: MariaDB's unquoted identifiers, as the tables are named in it. */
static void set_mysql_db(const char *a)
{
    if (!token_is_valid(a, 64, "_$"))
        config_fail("--mysql-db wants 1 to 64 characters of A-Z a-z 0-9 _ $, not '%s'", a);
    svc.mysql_db = a;
}

static void set_mysql_user(const char *a)
{
    if (!token_is_valid(a, 80, "_.-@"))
        config_fail("--mysql-user wants 1 to 80 characters of A-Z a-z 0-9 _ . - @, not '%s'", a);
    svc.mysql_user = a;
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
    { .name = "mysql", .has_arg = ARG_REQUIRED, .set = set_mysql },
    { .name = "mysql-db", .has_arg = ARG_REQUIRED, .set = set_mysql_db },
    { .name = "mysql-user", .has_arg = ARG_REQUIRED, .set = set_mysql_user },
    { .name = "mysql-password-file", .has_arg = ARG_REQUIRED, .set = set_mysql_password_file },
    { .name = "mysql-pool", .has_arg = ARG_REQUIRED, .set = set_mysql_pool },
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

/* How many times each flag was given (config_given). */
static int given[FLAGS];

int config_given(const char *flag)
{
    for (int i = 0; i < FLAGS; i++)
        if (strcmp(flags[i].name, flag) == 0)
            return given[i] > 0;
    return 0;
}

/* Sets flag i from its value, or exits 2 when the value is missing: a value that starts
 * with "--" is the next flag, not this one's value. */
static void set_flag(int i, const char *value)
{
    if (flags[i].has_arg == ARG_REQUIRED && value && strncmp(value, "--", 2) == 0)
        config_fail("--%s wants a value, and '%s' is a flag, not its value", flags[i].name,
                    value);
    given[i]++;
    flags[i].set(value);
}

/* The store's name in logs: its address, or the sentinels' master, or the cluster. */
static void label_store(void)
{
    if (svc.zookeeper)
        snprintf(svc.redis_label, sizeof(svc.redis_label), "%.200s", svc.zookeeper);
    else if (svc.mysql)
        snprintf(svc.redis_label, sizeof(svc.redis_label), "%.180s/%.64s", svc.mysql, svc.mysql_db);
    else if (svc.sentinels)
        snprintf(svc.redis_label, sizeof(svc.redis_label), "sentinel master %.64s", svc.sentinel_master);
    else if (svc.cluster)
        snprintf(svc.redis_label, sizeof(svc.redis_label), "cluster %.200s", svc.cluster);
    else
        snprintf(svc.redis_label, sizeof(svc.redis_label), "%.200s:%d", svc.redis_host, svc.redis_port);
}

/* 1 when the first n characters of a name "password" (a flag's name, not a message). */
static int names_password(const char *a, size_t n)
{
    for (size_t i = 0; i + 8 <= n; i++)
        if (strncmp(a + i, "password", 8) == 0)
            return 1;
    return 0;
}

/* Every --NAME on the command line is a flag's whole name: getopt_long would take a prefix
 * ("--mysql-password x" as --mysql-password-file x), and a password typed there would
 * then be read as a file's name and shown in the refusal. Exits 2 naming only the name,
 * never what follows its '='. */
static void check_whole_names(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        size_t n = strcspn(a, "=");
        int f = 0;
        if (strncmp(a, "--", 2) != 0 || n == 2)
            continue;   /* an argument, or "--" (getopt's end of flags) */
        while (f < FLAGS && (strlen(flags[f].name) != n - 2 ||
                             strncmp(flags[f].name, a + 2, n - 2) != 0))
            f++;
        if (f == FLAGS)
            config_fail("unknown option '%.*s' (see --help%s)", (int)n, a,
                        names_password(a, n) ? "; a password is read from a file or the "
                                               "environment, never from the command line" : "");
        if (flags[f].has_arg == ARG_REQUIRED && a[n] != '=')
            i++;   /* its value */
    }
}

void config_read(int argc, char **argv, void (*versions)(FILE *out, int tsv))
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
    check_whole_names(argc, argv);
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":", opts, &index)) != -1) {
        if (o == ':')
            config_fail("%s wants a value (see --help)", argv[optind - 1]);
        if (o != 0)
            config_fail("unknown option '%s' (see --help)", argv[optind - 1]);
        set_flag(index, optarg);
    }
    if (optind < argc)
        config_fail("unexpected argument '%s' (see --help)", argv[optind]);
}

void config_complete(void)
{
    read_passwords(password_file, sentinel_password_file, mysql_password_file);
    label_store();
    if (!svc.name[0])
        snprintf(svc.name, sizeof(svc.name), "inventory-%d", svc.port);
}
