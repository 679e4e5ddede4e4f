/* zk_lock.c - v11's lock on its own, for the interop test: N grants of ITEM's lock, each
 * held HOLD_MS, one line per grant on stdout: "ENTER_NS EXIT_NS WAITED_NS" (the monotonic
 * clock, the wait from the acquire's start). Usage: zk_lock H:P,... ITEM N HOLD_MS */
#include "lock/lock.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"

/* The monotonic clock in nanoseconds. */
static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    struct zk_error zerr;
    struct error err;
    struct zk_config zc = { .servers = argc > 1 ? argv[1] : NULL, .session_ms = 4000 };
    struct zk_client *zk;
    struct lock_client *lc;

    if (argc != 5) {
        fprintf(stderr, "usage: zk_lock H:P,... ITEM N HOLD_MS\n");
        return 2;
    }
    if ((zk = zk_client_create(&zc, &zerr)) == NULL) {
        fprintf(stderr, "zk_lock: %s\n", zerr.msg);
        return 1;
    }
    struct lock_config cfg = { .zk = zk, .instance_id = "zk-lock" };
    if ((lc = lock_client_create(lock_find("zookeeper"), &cfg, &err)) == NULL) {
        fprintf(stderr, "zk_lock: %s\n", err.msg);
        return 1;
    }
    for (int i = 0, n = atoi(argv[3]); i < n; i++) {
        struct lock_grant g;
        long long asked = now_ns(), in;
        if (lock_acquire(lc, argv[2], 10000, &g, NULL, &err) != LOCK_OK) {
            fprintf(stderr, "zk_lock: acquire: %s\n", err.msg);
            return 1;
        }
        in = now_ns();
        clock_sleep_ms(atol(argv[4]));
        printf("%lld %lld %lld\n", in, now_ns(), in - asked);
        fflush(stdout);
        lock_release(lc, &g, NULL, NULL, &err);
    }
    lock_client_destroy(lc);
    zk_client_destroy(zk);
    return 0;
}
