/* zk_ceiling.c - zk-ceiling: what the ensemble commits on this machine, without the
 * service: one node set as fast as the C client can, N sets in flight (1: one at a time,
 * as a synchronous sale's write waits), for S seconds. Prints one JSON line:
 * {"in_flight":N,"seconds":S,"sets":M,"sets_per_s":R,"failed":F}.
 * Usage: zk-ceiling H:P,... [IN_FLIGHT [SECONDS]] */
#include <stdio.h>
#include <stdlib.h>

#include "zk/zk.h"

int main(int argc, char **argv)
{
    struct zk_config cfg = { .servers = argc > 1 ? argv[1] : NULL, .session_ms = 10000 };
    int in_flight = argc > 2 ? atoi(argv[2]) : 64;
    double secs = argc > 3 ? atof(argv[3]) : 5;
    struct zk_error err;
    struct zk_session s;
    struct zk_client *zc;
    long long sets, failed;

    if (argc < 2 || in_flight < 1 || secs <= 0) {
        fprintf(stderr, "usage: zk-ceiling H:P,... [IN_FLIGHT [SECONDS]]\n");
        return 2;
    }
    if ((zc = zk_client_create(&cfg, &err)) == NULL || zk_enter(zc, &s, &err) != ZK_OK) {
        fprintf(stderr, "zk-ceiling: %s\n", err.msg);
        return 1;
    }
    zk_create(&s, "/zk-ceiling", "0", 1, ZK_PERSISTENT, NULL, &err);   /* there, or made */
    sets = zk_set_burst(&s, "/zk-ceiling", in_flight, (long)(secs * 1000), &failed);
    zk_delete(&s, "/zk-ceiling", -1, &err);
    zk_leave(&s);
    zk_client_destroy(zc);
    printf("{\"in_flight\":%d,\"seconds\":%g,\"sets\":%lld,\"sets_per_s\":%.0f,\"failed\":%lld}\n",
           in_flight, secs, sets, sets / secs, failed);
    return failed > 0 && sets == 0;
}
