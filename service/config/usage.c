/* usage.c - --help: a line of its own for every flag but a retired one (which says what
 * replaced it when given), with its default where it has one, each line within 100
 * columns (tests/test_service.sh holds both). */
#include "service/config/internal.h"

#include "common/item.h"
#include "lock/lock.h"

/* What it is, and where the stock lives. */
static void usage_where(FILE *out)
{
    fputs(
        "usage: inventory-service [options]\n"
        "\n"
        "Sells stock held in Redis (or ZooKeeper, or a MariaDB database) under one of the lock\n"
        "versions. A flag without its value, or one that does nothing with the store or lock\n"
        "chosen, is refused (exit 2; serving flags are not checked with --set-stock or\n"
        "--get-stock).\n"
        "\n"
        "Where the stock lives (one of --redis, --sentinel, --redis-cluster, --zookeeper,\n"
        "--mysql):\n"
        "  --redis HOST:PORT   one Redis server (default 127.0.0.1:6379)\n"
        "  --sentinel H:P,...  instead of --redis: ask these Redis Sentinels where the master is,\n"
        "                      confirm it with ROLE, follow their failovers (+switch-master)\n"
        "  --sentinel-master NAME  with --sentinel: the master's name at the sentinels (no default)\n"
        "  --sentinel-password-file F  with --sentinel: the sentinels' password, first line of F\n"
        "                      (default: SENTINEL_PASSWORD, SENTINEL_USER for an ACL user; none)\n"
        "  --redis-cluster H:P,...  instead of --redis: a Redis Cluster, these its seed nodes;\n"
        "                      each item's keys go to its slot's master (MOVED, ASK and TRYAGAIN\n"
        "                      followed; the map read again when it moves)\n"
        "  --redis-password-file F  the Redis password, first line of F (default: REDIS_PASSWORD,\n"
        "                      REDIS_USER for an ACL user; none); for every Redis (data, lock\n"
        "                      masters), never in argv or a log. Not with --zookeeper, --mysql\n"
        "  --zookeeper H:P,... instead of Redis: the stock (and v11's lock) in this ZooKeeper\n"
        "                      ensemble, one session for the instance; --lock v11 or atomic only.\n"
        "                      At start it waits up to the session timeout for the ensemble\n"
        "  --zk-session-ms T   with --zookeeper: the session timeout asked for (default 10000;\n"
        "                      the ensemble clamps it to 2 to 20 ticks): v11's lease\n"
        "  --mysql HOST:PORT   instead of Redis: the stock in this MariaDB server (10.3 on),\n"
        "                      tables items, orders, idem_keys, probes (made when missing), and\n"
        "                      the lock of v12 to v15 too; --lock v12 to v15 or atomic only. A\n"
        "                      server down at start is no error: sales answer 503 until it is up\n"
        "  --mysql-db NAME     with --mysql: the database (default inventory; made when missing)\n"
        "  --mysql-user NAME   with --mysql: the user (default: MYSQL_USER, else inventory)\n"
        "  --mysql-password-file F  with --mysql: the user's password, first line of F (default:\n"
        "                      MYSQL_PASSWORD; none), never in argv or a log\n"
        "  --mysql-pool N      with --mysql: connections to it at most (default 64), shared by\n"
        "                      the store and the lock\n"
        , out);
}

/* The lock and how a sale is served. */
static void usage_lock(FILE *out)
{
    fprintf(out,
        "\n"
        "The lock and the sale:\n"
        "  --lock V            lock version, by name or alias (default v8); see below\n"
        "  --ttl-ms T          lease of the Redis and database locks, in ms (default %d)\n"
        "  --wait-ms W         how long a sale waits for the lock before lock_timeout\n"
        "                      (default 10000)\n"
        "  --wait poll|notify  how a waiter learns the lock is free (default: the version's;\n"
        "                      notify for v8 to v10): poll tries every --retry-ms; notify sleeps\n"
        "                      until the release's message, queueing locally first come first\n"
        "                      served. A lock in the process or in ZooKeeper waits its own way\n"
        "  --retry-ms R        poll: sleep between tries while the lock is taken (default 10;\n"
        "                      100 for v12 to v14, as Spring's JdbcLockRegistry polls);\n"
        "                      notify: the same while it is not subscribed. Redis locks and\n"
        "                      v12 to v14 only\n"
        "  --combine N         serve up to N waiting sales of one item in one critical section:\n"
        "                      one read, one write (default 1: off). A grant then serves batch\n"
        "                      after batch while sales keep coming, for at most 10 ms (a third\n"
        "                      of --ttl-ms if less), and gives way sooner when another instance\n"
        "                      asks for the lock. The sales wait on an event loop, not a thread\n"
        "                      each. Not for atomic: it always sells what waits, one script per\n"
        "                      item\n"
        "  --workers N         with --combine N > 1: at most N worker threads (default 4),\n"
        "                      started as sales come. An idle worker takes the item whose sales\n"
        "                      have waited longest and that no other worker serves (passing over\n"
        "                      a store server where half the workers hold a lock), and serves\n"
        "                      its batches under one grant\n"
        "  --lock-redis H:P,...  v10 (redlock) only, and needed: its N = 2f + 1 independent lock\n"
        "                      masters, N odd; a grant needs N / 2 + 1 of them (no default; the\n"
        "                      stock and the tokens stay on --redis)\n", LOCK_TTL_DEFAULT_MS);
}

/* What a sale's answer waits for, and what a request may ask. */
static void usage_sale(FILE *out)
{
    fputs(
        "  --replicas N        a grant and a sale count only once N replicas of the data Redis\n"
        "                      have them (WAIT N after the grant and after the sale's write, for\n"
        "                      a tenth of --ttl-ms, at most 4 s; default 0: no WAIT). A grant\n"
        "                      too few have is given back: 503 lock_unavailable; a sale whose\n"
        "                      WAIT falls short answers outcome_unknown (503: it is written on\n"
        "                      the master, and a failover may undo it; a sold-out sale stays\n"
        "                      409). Not with --zookeeper or --mysql\n"
        "  --idempotency-ttl S how long the first answer to an Idempotency-Key is kept, in\n"
        "                      seconds (default 86400: 24 h); a repeat within it sells nothing.\n"
        "                      Not with --zookeeper or --mysql (kept until the ledger is reset)\n"
        "  --faults            accept the teaching faults work_ms, release_gap_ms, write_gap_ms,\n"
        "                      nested=1, and keep the mutual-exclusion probe (probe:{I},\n"
        "                      overlaps:{I}); default off\n"
        , out);
}

/* The instance itself, and what it does instead of serving. */
static void usage_instance(FILE *out)
{
    fprintf(out,
        "\n"
        "The instance:\n"
        "  --port P            HTTP port (default 8080)\n"
        "  --bind ADDR         IPv4 address to listen on (default 127.0.0.1)\n"
        "  --name NAME         its name in answers, logs and the ledger (default inventory-PORT)\n"
        "  --max-conns N       most connections served at once (default 1000; more are\n"
        "                      refused); a lock version without --combine gives each its own\n"
        "                      thread. Other limits: a connection idle (or stalled mid-request)\n"
        "                      for 120 s is closed; a request line and headers must fit in\n"
        "                      about 9 KB (else 414 or 431); a body is read and ignored\n"
        "  --no-events         do not publish the lock's and the sales' events (events:{I}, for\n"
        "                      the live page /live; default: published, at no cost while no page\n"
        "                      listens to an item). Not with --zookeeper, --mysql (no channel)\n"
        "  --max-streams N     most /events streams served at once (default 16; more answer 503\n"
        "                      too_many_streams), apart from --max-conns' sales. Not with\n"
        "                      --zookeeper or --mysql\n"
        "\n"
        "Instead of serving, the store's own operations:\n"
        "  --set-stock N       set the item's stock to N, its sold to 0, its ledger emptied\n"
        "  --get-stock         print the item's stock, sold and ledger entries\n"
        "  --item I            the item of --set-stock or --get-stock (default %s)\n"
        "  --items K           instead of --item: item0001 .. itemK\n"
        "  --list-versions     print the versions, tab-separated: name, alias, technique, flaw\n"
        "  --help              this text\n"
        "\n"
        "Lock versions:\n", ITEM_DEFAULT);
}

void config_usage(FILE *out, void (*versions)(FILE *out, int tsv))
{
    usage_where(out);
    usage_lock(out);
    usage_sale(out);
    usage_instance(out);
    versions(out, 0);
}
