/* main.c - inventory-service: start-up (the Redis layer, the lock, an engine, the HTTP
 * daemon) and a clean stop on SIGTERM or SIGINT. The flags are config.c's. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/engine.h"
#include "service/events.h"
#include "service/http.h"
#include "service/service.h"

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

/* The data Redis's client and the lock's; the password is wiped from svc once they have
 * their copies. 0, or -1 with the reason printed. */
static int clients_create(void)
{
    const char *password = svc.redis_password[0] ? svc.redis_password : NULL;
    struct rd_config redis = {
        .host = svc.redis_host, .port = svc.redis_port,
        .sentinels = svc.sentinels, .sentinel_master = svc.sentinel_master,
        .cluster = svc.cluster,
        .sentinel_user = svc.sentinel_user,
        .sentinel_password = svc.sentinel_password[0] ? svc.sentinel_password : NULL,
        .user = svc.redis_user, .password = password,
        .on_state = store_log_state,
    };
    struct lock_config lock = {
        .ttl_ms = svc.ttl_ms, .retry_ms = svc.retry_ms, .instance_id = svc.instance_id,
        .wait = svc.wait, .lock_masters = svc.lock_masters, .replicas = svc.replicas,
        .redis_user = svc.redis_user, .redis_password = password,
        .observe = svc.no_events ? NULL : events_observe,
    };
    struct lock_error err = { 0 };

    if ((svc_redis = rd_client_create(&redis, &err)) != NULL) {
        lock.redis = svc_redis;
        svc_lock = lock_client_create(svc.ops, &lock, &err);
    }
    explicit_bzero(svc.redis_password, sizeof(svc.redis_password));
    explicit_bzero(svc.sentinel_password, sizeof(svc.sentinel_password));
    if (svc_lock == NULL) {
        fprintf(stderr, "inventory-service: lock %s: %s\n", svc.version, err.msg);
        rd_client_destroy(svc_redis);
        return -1;
    }
    return 0;
}

static void clients_destroy(void)
{
    lock_client_destroy(svc_lock);
    rd_client_destroy(svc_redis);
}

/* A sale under a lock that is not combined blocks its thread while it waits: one
 * thread per connection, so each version's code stays a plain sequence of calls. The
 * atomic sale and combined sales run on an event loop: connections are suspended while
 * an engine's threads serve them in batches. */
static struct MHD_Daemon *daemon_start(const struct sockaddr_in *addr)
{
    unsigned flags = svc.event_loop
                         ? MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME
                         : MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;

    return MHD_start_daemon(flags | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL, NULL, http_handle,
                            NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)svc.max_conns,
                            MHD_OPTION_CONNECTION_TIMEOUT, 120u,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)(svc.event_loop ? 0 : 512 * 1024),
                            MHD_OPTION_NOTIFY_COMPLETED, http_completed, NULL,
                            MHD_OPTION_END);
}

static int engine_start(void)
{
    if (!svc.event_loop)
        return 0;
    return svc.atomic ? batch_start() : workers_start();
}

/* Answers what is still queued; later sales answer 503 at once. */
static void engine_stop(void)
{
    if (svc.atomic)
        batch_stop();
    else if (svc.event_loop)
        workers_stop();
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
    for (long long end = lock_now_ms() + svc.wait_ms + 500;
         metrics_in_flight_now() > 0 && lock_now_ms() < end;)
        lock_sleep_ms(5);
    engine_stop();
    events_stop();
    lock_sleep_ms(50); /* the last answers leave the event loop */
    MHD_stop_daemon(d);
    log_event("INFO", "stopped");
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr = { .sin_family = AF_INET };
    struct MHD_Daemon *d;
    sigset_t stop;
    int sig;

    config_parse(argc, argv);
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

    if (clients_create() != 0)
        return 1;
    svc.event_loop = svc.atomic || svc.combine > 1;
    if (!svc.no_events && events_start() != 0) {
        fprintf(stderr, "inventory-service: cannot start the events' thread\n");
        clients_destroy();
        return 1;
    }
    if (engine_start() != 0) {
        fprintf(stderr, "inventory-service: cannot start the engine's threads\n");
        events_stop();
        clients_destroy();
        return 1;
    }
    if ((d = daemon_start(&addr)) == NULL) {
        fprintf(stderr, "inventory-service: cannot listen on %s:%d (in use?)\n", svc.bind, svc.port);
        engine_stop();
        events_stop();
        clients_destroy();
        return 1;
    }
    log_event("INFO", "listening on %s:%d, lock %s, wait %s, combine %d, redis %s, "
              "replicas %d, ttl %ld ms, wait limit %ld ms%s%s", svc.bind, svc.port, svc.version,
              svc.atomic ? "none" : lock_wait_name(svc_lock->cfg.wait), svc.combine,
              svc.redis_label, svc.replicas, svc.ttl_ms, svc.wait_ms, svc.faults ? ", faults on" : "",
              svc.no_events ? ", no events" : "");

    while (sigwait(&stop, &sig) != 0)
        ;
    stop_gracefully(d, sig);
    clients_destroy();
    return 0;
}
