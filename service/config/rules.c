/* rules.c - Which flags go together, and the parse as a whole (the flags read by
 * config.c, then checked here): a flag that would do nothing with the store or the lock
 * chosen is refused with its reason (exit 2), and so is a lock that cannot run where the
 * stock is. Two kinds are not checked: --ttl-ms and --wait-ms, which bound more than the
 * lock (the workers' hold, the replicas' WAIT, a graceful stop), and the serving flags
 * given with --set-stock or --get-stock, which serve nothing. */
#include "service/config/internal.h"

#include <string.h>

#include "redis/redis.h"

/* A flag that does nothing in some case, and why: "--FLAG WHY" is the reason given. */
struct idle_flag {
    const char *flag;
    const char *why;
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Exits 2 on the first of flags[0..n) that was given. */
static void refuse_given(const struct idle_flag *flags, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (config_given(flags[i].flag))
            config_fail("--%s %s", flags[i].flag, flags[i].why);
}

/* What Redis reads and ZooKeeper does not. */
static const struct idle_flag redis_only[] = {
    { "redis-password-file", "does nothing with --zookeeper: the ensemble takes no password" },
    { "replicas", "does nothing with --zookeeper: a write there counts once a quorum of the "
                  "ensemble has it" },
    { "idempotency-ttl", "is not honoured on ZooKeeper (an idempotency key's answer is kept "
                         "until the ledger is reset): leave it out with --zookeeper" },
    { "no-events", "does nothing with --zookeeper: it has no channel for the live page's "
                   "events, and publishes none" },
    { "max-streams", "does nothing with --zookeeper: it has no channel for the live page's "
                     "events (/events answers 501)" },
};

/* What Redis reads and the database does not. */
static const struct idle_flag redis_not_mysql[] = {
    { "redis-password-file", "does nothing with --mysql: the database's password is "
                             "--mysql-password-file's (or MYSQL_PASSWORD)" },
    { "replicas", "does nothing with --mysql: a write there counts once its COMMIT answers "
                  "(the database's own replication is its business)" },
    { "idempotency-ttl", "is not honoured on the database (an idempotency key's answer is "
                         "kept until the ledger is reset): leave it out with --mysql" },
    { "no-events", "does nothing with --mysql: it has no channel for the live page's events, "
                   "and publishes none" },
    { "max-streams", "does nothing with --mysql: it has no channel for the live page's events "
                     "(/events answers 501)" },
};

/* What the database store reads, without it. */
static const struct idle_flag mysql_only[] = {
    { "mysql-db", "goes with --mysql H:P: it names the database there" },
    { "mysql-user", "goes with --mysql H:P: it is the database's user" },
    { "mysql-password-file", "goes with --mysql H:P: it is the database user's password" },
    { "mysql-pool", "goes with --mysql H:P: it bounds the connections to the database" },
};

/* What a sentinel set reads, without one. */
static const struct idle_flag sentinel_only[] = {
    { "sentinel-master", "goes with --sentinel H:P,...: it names the master at those sentinels" },
    { "sentinel-password-file", "goes with --sentinel H:P,...: it is those sentinels' password" },
};

/* What the store's own operations read, while serving. */
static const struct idle_flag admin_only[] = {
    { "item", "goes with --set-stock or --get-stock: a serving instance sells the item each "
              "request names" },
    { "items", "goes with --set-stock or --get-stock: a serving instance sells the items the "
               "requests name" },
};

/* Exactly one place for the stock, and the flags that go with it and with --set-stock and
 * --get-stock. */
static void check_store(void)
{
    if ((svc.sentinels != NULL) + config_given("redis") + (svc.cluster != NULL) +
        (svc.zookeeper != NULL) + (svc.mysql != NULL) > 1)
        config_fail("give one of --redis, --sentinel, --redis-cluster, --zookeeper and --mysql");
    if (svc.sentinels && svc.sentinel_master == NULL)
        config_fail("--sentinel wants --sentinel-master NAME: the master's name at the sentinels");
    if (!svc.sentinels)
        refuse_given(sentinel_only, COUNT(sentinel_only));
    if (svc.zookeeper)
        refuse_given(redis_only, COUNT(redis_only));
    else if (config_given("zk-session-ms"))
        config_fail("--zk-session-ms goes with --zookeeper: it is the ensemble's session timeout");
    if (svc.mysql)
        refuse_given(redis_not_mysql, COUNT(redis_not_mysql));
    else
        refuse_given(mysql_only, COUNT(mysql_only));
    if (svc.set_stock < 0 && !svc.get_stock)
        refuse_given(admin_only, COUNT(admin_only));
    else if (svc.item && svc.items > 0)
        config_fail("--item or --items, not both");
}

void config_parse(int argc, char **argv, void (*versions)(FILE *out, int tsv))
{
    config_read(argc, argv, versions);
    check_store();
    config_complete();
}

/* What a lock reads, for the sale that takes none (atomic). */
static const struct idle_flag locked_only[] = {
    { "combine", "does nothing with --lock atomic: the atomic sale always sells an item's "
                 "waiting sales together, one script per item" },
    { "workers", "does nothing with --lock atomic: the atomic sale runs on one thread" },
    { "retry-ms", "does nothing with --lock atomic: the atomic sale takes no lock, so never "
                  "waits for one" },
    { "lock-redis", "does nothing with --lock atomic: it lists redlock's (v10's) lock masters" },
};

/* Where the lock lives and where the stock is: a lock whose write its store guards (v11)
 * lives in ZooKeeper, and ZooKeeper serves no other (the others' writes are Redis's); a
 * lock kept in the store's database (v12 to v15) lives with the stock there, and the
 * database serves no other. */
static void check_lock_store(const struct lock_ops *ops)
{
    if (svc.mysql && !ops->database)
        config_fail("--mysql serves --lock v12 to v15 and --lock atomic only, not %s (its lock "
                    "lives in %s)", ops->name, ops->guard ? "ZooKeeper" : ops->remote ? "Redis"
                                                                         : "this process");
    if (!svc.mysql && ops->database)
        config_fail("--lock %s keeps its lock and the stock in the database: give --mysql "
                    "HOST:PORT", ops->name);
    if (svc.zookeeper && ops->guard == NULL)
        config_fail("--zookeeper serves --lock %s and --lock atomic only, not %s (its lock lives "
                    "in Redis or in this process)", lock_find("zookeeper")->name, ops->name);
    if (!svc.zookeeper && ops->guard)
        config_fail("--lock %s keeps its lock and the stock in ZooKeeper: give --zookeeper "
                    "HOST:PORT,...", ops->name);
}

/* How it waits: a lock not in Redis (in the process, in ZooKeeper, in the database) waits
 * its own way; one that polls (the database's, but v15) has tries to space. */
static void check_lock_wait(const struct lock_ops *ops)
{
    if (ops->remote)
        return;
    if (svc.wait != LOCK_WAIT_DEFAULT && svc.wait != ops->wait)
        config_fail("%s waits only by %s, not by %s: leave --wait out with --lock %s", ops->name,
                    lock_wait_name(ops->wait), lock_wait_name(svc.wait), ops->name);
    if (config_given("retry-ms") && ops->wait != LOCK_WAIT_POLL)
        config_fail("--retry-ms spaces the tries of a lock in Redis or in the database: %s "
                    "waits by %s, with no tries to space", ops->name, lock_wait_name(ops->wait));
}

/* redlock's masters: given for it alone, and an odd number of them. A grant needs a
 * majority, N / 2 + 1: with N = 2f + 1 it survives f masters down; an even N survives no
 * more than N - 1 would, and takes one more to answer. */
static void check_masters(const struct lock_ops *ops)
{
    const struct lock_ops *redlock = lock_find("redlock");
    struct rd_server at[RD_SERVERS_MAX];
    int n;

    if (ops != redlock) {
        if (svc.lock_masters)
            config_fail("--lock-redis does nothing with --lock %s: it lists redlock's (%s's) "
                        "lock masters", ops->name, redlock->name);
        return;
    }
    if (svc.lock_masters == NULL)
        config_fail("--lock %s (redlock) wants its lock masters: --lock-redis HOST:PORT,... "
                    "(N = 2f + 1 of them: 3, 5, ...)", ops->name);
    n = rd_servers_parse(svc.lock_masters, at, RD_SERVERS_MAX);
    if (n % 2 == 0)
        config_fail("--lock-redis gives %d lock masters: a grant needs %d, so %d may fail, as "
                    "with %d; redlock wants an odd N = 2f + 1 (3, 5, ...)", n, n / 2 + 1,
                    (n - 1) / 2, n - 1);
}

void config_check_lock(const struct lock_ops *ops)
{
    if (ops == NULL) {
        refuse_given(locked_only, COUNT(locked_only));
        return;
    }
    check_lock_store(ops);
    check_lock_wait(ops);
    check_masters(ops);
    if (svc.combine <= 1 && config_given("workers"))
        config_fail("--workers does nothing without --combine N (N > 1): each connection's "
                    "thread serves its own sale");
}
