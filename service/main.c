/* main.c - inventory-service: start-up (the store, the lock, an engine, the live page's
 * publisher, the HTTP daemon) and a clean stop on SIGTERM or SIGINT. The flags are
 * config/config.c's; which engine serves the sales is chosen once, here. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "service/admin.h"
#include "service/config/config.h"
#include "service/events/events.h"
#include "service/events/stream.h"
#include "service/http/http.h"
#include "service/log.h"
#include "service/metrics/metrics.h"
#include "service/sale/engine.h"
#include "service/store/store.h"

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

/* The engine and the lock the flags ask for (svc.ops, svc.version), or exit 2 saying why. */
static void choose_engine(void)
{
    char why[160];

    svc_engine = engine_choose(svc.lock_name, svc.combine, svc.wait, &svc.ops, why, sizeof(why));
    if (svc_engine == NULL)
        config_fail("%s", why);
    config_check_lock(svc.ops);
    svc.version = svc.ops ? svc.ops->name : svc_engine->name;
}

/* SIGTERM or SIGINT when one has come (blocked in every thread: main takes it with
 * sigwait once serving), else 0. */
static int stop_signal(void)
{
    sigset_t pending;

    if (sigpending(&pending) != 0)
        return 0;
    if (sigismember(&pending, SIGTERM) == 1)
        return SIGTERM;
    return sigismember(&pending, SIGINT) == 1 ? SIGINT : 0;
}

static int stop_asked(void)
{
    return stop_signal() != 0;
}

/* Why the store could not be had, and for ZooKeeper or the database what was tried and
 * what to start or check. */
static void store_failed(const struct error *err)
{
    fprintf(stderr, "inventory-service: store %s: %s\n", svc.version, err->msg);
    if (svc.zookeeper && err->fault == FAULT_CONNECT)
        fprintf(stderr, "inventory-service: tried %s: is the ensemble up? deploy/up "
                "--zookeeper 3 starts one here\n", svc.zookeeper);
    if (svc.mysql && err->fault == FAULT_AUTH)
        fprintf(stderr, "inventory-service: tried --mysql %s, database %s, user %s: check the "
                "user, its password (--mysql-password-file or MYSQL_PASSWORD) and its rights "
                "on the database; deploy/up --mysql starts one here with its own user\n",
                svc.mysql, svc.mysql_db, svc.mysql_user);
    else if (svc.mysql)
        fprintf(stderr, "inventory-service: tried --mysql %s, database %s, user %s (deploy/up "
                "--mysql starts a server of its own here)\n", svc.mysql, svc.mysql_db,
                svc.mysql_user);
}

/* The store and, for a locked sale, the lock (lent the store's client: Redis's, the
 * ZooKeeper session or the database's pool); the passwords are wiped from svc once they
 * have their copies. 0, or the exit status with the reason printed: 2 for a lock the flags
 * cannot make, else 1. */
static int clients_create(void)
{
    struct error err = { 0 };
    const char *password = svc.redis_password[0] ? svc.redis_password : NULL;
    struct lock_config lock = {
        .ttl_ms = svc.ttl_ms, .retry_ms = svc.retry_ms, .instance_id = svc.instance_id,
        .wait = svc.wait, .lock_masters = svc.lock_masters, .replicas = svc.replicas,
        .redis_user = svc.redis_user, .redis_password = password,
        .observe = svc.no_events ? NULL : events_observe,
    };

    if ((svc_store = store_open(&svc, &err)) != NULL && svc.ops) {
        lock.redis = svc_store->redis;
        lock.zk = svc_store->zk;
        lock.db = svc_store->db;
        svc_lock = lock_client_create(svc.ops, &lock, &err);
    }
    explicit_bzero(svc.redis_password, sizeof(svc.redis_password));
    explicit_bzero(svc.sentinel_password, sizeof(svc.sentinel_password));
    explicit_bzero(svc.mysql_password, sizeof(svc.mysql_password));
    if (svc_store == NULL) {
        store_failed(&err);
        return err.fault == FAULT_USAGE ? 2 : 1;
    }
    if (svc.ops && svc_lock == NULL) {
        fprintf(stderr, "inventory-service: lock %s: %s\n", svc.version, err.msg);
        store_close(svc_store);
        return err.fault == FAULT_USAGE ? 2 : 1;
    }
    return 0;
}

static void clients_destroy(void)
{
    lock_client_destroy(svc_lock);
    store_close(svc_store);
}

/* The daemon in the engine's threading model: a thread per connection (a locked sale
 * blocks its thread while it waits), or an event loop whose connections are suspended
 * while the engine's threads serve them. */
static struct MHD_Daemon *daemon_start(const struct sockaddr_in *addr)
{
    int loop = svc_engine->event_loop;
    unsigned flags = loop ? MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME
                          : MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;

    return MHD_start_daemon(flags | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL, NULL, http_handle,
                            NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)svc.max_conns,
                            MHD_OPTION_CONNECTION_TIMEOUT, 120u,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)(loop ? 0 : 512 * 1024),
                            MHD_OPTION_NOTIFY_COMPLETED, http_completed, NULL,
                            MHD_OPTION_END);
}

/* Graceful: accept nothing more; let the sales in flight finish (a sale waits for the
 * lock at most --wait-ms) and be answered; their grants are released as they end;
 * then stop. */
static void stop_gracefully(struct MHD_Daemon *d, int sig)
{
    log_event("INFO", "stopping on %s: %lld sales in flight", sig == SIGINT ? "SIGINT" : "SIGTERM",
              metrics_in_flight_now());
    streams_end(1000);   /* a suspended stream must be resumed before the daemon stops */
    MHD_quiesce_daemon(d);
    for (long long end = clock_now_ms() + svc.wait_ms + 500;
         metrics_in_flight_now() > 0 && clock_now_ms() < end;)
        clock_sleep_ms(5);
    svc_engine->stop();   /* answers what is still queued; later sales answer 503 at once */
    events_stop();
    clock_sleep_ms(50); /* the last answers leave the event loop */
    MHD_stop_daemon(d);
    log_event("INFO", "stopped");
}

/* Everything after the clients: the live page's publisher, the engine, the daemon. */
static struct MHD_Daemon *serve_start(const struct sockaddr_in *addr)
{
    struct MHD_Daemon *d;

    if (svc_store->ops->publish == NULL)
        svc.no_events = 1;   /* a store without a channel for them: no live events */
    if (!svc.no_events && events_start() != 0) {
        fprintf(stderr, "inventory-service: cannot start the events' thread\n");
        return NULL;
    }
    if (svc_engine->start() != 0) {
        fprintf(stderr, "inventory-service: cannot start the engine's threads\n");
        events_stop();
        return NULL;
    }
    if ((d = daemon_start(addr)) == NULL) {
        fprintf(stderr, "inventory-service: cannot listen on %s:%d (in use?)\n", svc.bind, svc.port);
        svc_engine->stop();
        events_stop();
    }
    return d;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr = { .sin_family = AF_INET };
    struct MHD_Daemon *d;
    sigset_t stop;
    int sig, rc;

    config_parse(argc, argv, engine_print_versions);
    if (admin_asked())
        return admin_run();
    choose_engine();
    log_set_name(svc.name);
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

    svc.stop_asked = stop_asked;
    if ((rc = clients_create()) != 0) {
        if ((sig = stop_signal()) != 0) {   /* asked to stop while it waited: done */
            log_event("INFO", "stopped on %s before serving", sig == SIGINT ? "SIGINT" : "SIGTERM");
            return 0;
        }
        return rc;
    }
    if ((d = serve_start(&addr)) == NULL) {
        clients_destroy();
        return 1;
    }
    log_event("INFO", "listening on %s:%d, lock %s, wait %s, combine %d, store %s %s, "
              "replicas %d, ttl %ld ms, wait limit %ld ms%s%s", svc.bind, svc.port, svc.version,
              svc_lock ? lock_wait_name(svc_lock->cfg.wait) : "none", svc.combine,
              svc_store->ops->name, svc.redis_label, svc.replicas, svc.ttl_ms, svc.wait_ms,
              svc.faults ? ", faults on" : "", svc.no_events ? ", no events" : "");

    while (sigwait(&stop, &sig) != 0)
        ;
    stop_gracefully(d, sig);
    clients_destroy();
    return 0;
}
