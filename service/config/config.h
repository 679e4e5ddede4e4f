/* config.h - The instance's configuration, from its flags, and what start-up makes of it.
 * Set once by main() before any other thread starts; read-only afterwards. */
#ifndef SERVICE_CONFIG_H
#define SERVICE_CONFIG_H

#include <stdio.h>

#include "lock/lock.h"

struct service_config {
    char bind[64];
    int port;
    char redis_host[256];
    int redis_port;
    const char *lock_name;       /* --lock, as given: a version, an alias, or "atomic" */
    const struct lock_ops *ops;  /* the lock (main, from lock_name); NULL for the atomic sale */
    const char *version;         /* the name answers and metrics show ("v8", "atomic") */
    enum lock_wait wait;         /* as asked (LOCK_WAIT_DEFAULT: the version's) */
    int combine;                 /* sales served under one grant, at most (1: off) */
    int workers;                 /* --combine: worker threads, at most */
    const char *lock_masters;    /* redlock's masters, "HOST:PORT,..." (argv; NULL: none) */
    const char *sentinels;       /* --sentinel: ask these where the master is (NULL: none) */
    const char *cluster;         /* --redis-cluster: these seed nodes (NULL: no cluster) */
    const char *zookeeper;       /* --zookeeper: the ensemble (NULL: the stock is in Redis) */
    const char *mysql;           /* --mysql H:P: the database (NULL: not there) */
    char mysql_host[256];        /* its host and port, from --mysql */
    int mysql_port;
    const char *mysql_db;        /* --mysql-db: the database's name (default inventory) */
    const char *mysql_user;      /* --mysql-user or MYSQL_USER (default inventory) */
    char mysql_password[513];    /* from --mysql-password-file or MYSQL_PASSWORD; "" none */
    int mysql_pool;              /* --mysql-pool: connections at most (default 64) */
    long zk_session_ms;          /* --zk-session-ms: the session timeout asked for */
    const char *sentinel_master; /* its name, as the sentinels know it */
    const char *sentinel_user;   /* from SENTINEL_USER (NULL: the default user) */
    char sentinel_password[513]; /* from --sentinel-password-file or SENTINEL_PASSWORD */
    char redis_label[256];       /* "HOST:PORT" or "sentinel master NAME", for logs */
    int replicas;                /* WAIT for this many replicas before a grant or a
                                    sale's write counts */
    const char *redis_user;      /* from REDIS_USER (NULL: the default user) */
    char redis_password[513];    /* from --redis-password-file or REDIS_PASSWORD; "" none */
    long ttl_ms, wait_ms, retry_ms;
    long idem_ttl_ms;            /* how long an idempotency key's first answer is kept */
    int faults;                  /* teaching faults and the mutual-exclusion probe allowed */
    int max_conns;
    int max_streams;             /* /events streams at once */
    int no_events;               /* --no-events: nothing published for the live page */
    /* The store's operations from the command line (service/admin.c), instead of serving:
     * --set-stock N (and sold 0, the ledger emptied), --get-stock (a line per item: its
     * stock, sold and ledger entries); of --item I (default the default item), or of
     * --items K (item0001 .. itemK). */
    long long set_stock;         /* -1: not asked */
    int get_stock;
    const char *item;
    int items;
    char name[64];               /* instance name, shown in answers and the ledger */
    char instance_id[33];        /* random hex, prefix of every lock owner id */
    /* main's: 1 once SIGTERM or SIGINT has come. A wait at start-up (the ZooKeeper store's
     * first session) gives up then. NULL: never asked. */
    int (*stop_asked)(void);
};
extern struct service_config svc;

/* What start-up made (main.c), shared by every thread: */
extern struct lock_client *svc_lock;       /* the lock; NULL for the atomic sale */
extern struct store *svc_store;            /* where the stock lives (service/store/store.h) */
extern const struct engine *svc_engine;    /* how sales are served (service/sale/engine.h) */

/* Fills svc from argv, or prints why not and exits 2: a flag unknown, without its value
 * (or with the next flag as its value), or doing nothing with the store asked for. Or
 * prints --help (where versions prints the versions the instance can run) or
 * --list-versions (tab-separated), and exits 0. */
void config_parse(int argc, char **argv, void (*versions)(FILE *out, int tsv));
/* 1 when --FLAG (flag: its name without the dashes) was on the command line. */
int config_given(const char *flag);
/* Once the lock is chosen (ops; NULL for the sale that takes none): exits 2 with a
 * one-line reason when a flag given does nothing with it, or when it cannot run where
 * the stock is (service/config/rules.c). */
void config_check_lock(const struct lock_ops *ops);
/* Prints "inventory-service: " and the reason, and exits with status 2 (a bad flag). */
void config_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
