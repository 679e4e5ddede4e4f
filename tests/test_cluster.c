/* test_cluster.c - The Redis layer's cluster routing against a real 3-master Redis
 * Cluster: slots of known keys (CLUSTER KEYSLOT says), keys spread over the masters,
 * MOVED followed with the map read once per burst, ASK followed without changing the
 * map, TRYAGAIN waited out (or given up after RD_TRYAGAIN_MS), and bad seeds.
 * Usage: test_cluster PORT1 PORT2 PORT3 PLAIN_PORT
 *   PORT1..3: the cluster's masters; PLAIN_PORT: a Redis not in cluster mode. */
#include "redis/redis.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "tests/test.h"

enum { MASTERS = 3 };
static int master_port[MASTERS], plain_port;
static struct rd_client *admin[MASTERS];   /* one plain client per master */
static char seeds[64];

static struct rd_client *client(const char *cluster, int port)
{
    struct rd_config cfg = { .host = "127.0.0.1", .port = port, .cluster = cluster,
                             .connect_timeout_ms = 300 };
    struct rd_error err;
    struct rd_client *rc = rd_client_create(&cfg, &err);

    if (rc == NULL) {
        fprintf(stderr, "rd_client_create: %s\n", err.msg);
        exit(2);
    }
    return rc;
}

/* How many keys master i holds, or -1. */
static long long keys_on(int i)
{
    struct rd_error err;
    struct rd_reply *r = rd_call(admin[i], RD_T(RD_INTEGER), &err, "DBSIZE");
    long long v = r ? r->integer : -1;

    rd_reply_free(r);
    return v;
}

/* Master i's node id. */
static void node_id(int i, char (*id)[64])
{
    struct rd_error err;
    struct rd_reply *r = rd_call(admin[i], RD_T(RD_STRING), &err, "CLUSTER MYID");

    snprintf(*id, sizeof(*id), "%s", r ? r->str : "?");
    rd_reply_free(r);
}

/* The master that serves slot now, by master m's map (CLUSTER SLOTS); -1: none. */
static int owner_by(int m, unsigned slot)
{
    struct rd_error err;
    struct rd_reply *r = rd_call(admin[m], RD_T(RD_ARRAY), &err, "CLUSTER SLOTS");
    int port = -1;

    for (size_t i = 0; r && i < r->elements; i++) {
        struct rd_reply *e = r->element[i];
        if ((unsigned)e->element[0]->integer <= slot && slot <= (unsigned)e->element[1]->integer)
            port = (int)e->element[2]->element[1]->integer;
    }
    rd_reply_free(r);
    for (int i = 0; i < MASTERS; i++)
        if (master_port[i] == port)
            return i;
    return -1;
}

static int owner_of(unsigned slot)
{
    return owner_by(0, slot);
}

/* A set-up command's reply: freed, or the test ends saying why. */
static void must(struct rd_reply *r, const char *what, const struct rd_error *err)
{
    if (r == NULL) {
        fprintf(stderr, "%s: %s\n", what, err->msg);
        exit(2);
    }
    rd_reply_free(r);
}

/* Master i's cluster_current_epoch (CLUSTER INFO), or -1. */
static long long current_epoch(int i)
{
    struct rd_error err;
    struct rd_reply *r = rd_call(admin[i], RD_T(RD_STRING), &err, "CLUSTER INFO");
    const char *at = r ? strstr(r->str, "cluster_current_epoch:") : NULL;
    long long e = at ? atoll(at + strlen("cluster_current_epoch:")) : -1;

    rd_reply_free(r);
    return e;
}

/* Starts moving slot from master src to dst: IMPORTING on dst, MIGRATING on src. */
static void migrate_begin(unsigned slot, int src, int dst)
{
    char s[16], id_src[64], id_dst[64];
    struct rd_error err;

    snprintf(s, sizeof(s), "%u", slot);
    node_id(src, &id_src);
    node_id(dst, &id_dst);
    must(rd_call(admin[dst], RD_T(RD_STATUS), &err, "CLUSTER SETSLOT %s IMPORTING %s", s, id_src), "IMPORTING", &err);
    must(rd_call(admin[src], RD_T(RD_STATUS), &err, "CLUSTER SETSLOT %s MIGRATING %s", s, id_dst), "MIGRATING", &err);
}

/* Moves key from master src to dst (MIGRATE). */
static void migrate_key(const char *key, int src, int dst)
{
    struct rd_error err;
    struct rd_reply *r = rd_call(admin[src], RD_T(RD_STATUS), &err,
                                 "MIGRATE 127.0.0.1 %d %s 0 5000", master_port[dst], key);

    if (r == NULL) {
        fprintf(stderr, "MIGRATE %s: %s\n", key, err.msg);
        exit(2);
    }
    rd_reply_free(r);
}

/* Ends the move: every master learns the slot is dst's. */
static void migrate_end(unsigned slot, int dst)
{
    char s[16], id_dst[64];
    struct rd_error err;

    snprintf(s, sizeof(s), "%u", slot);
    node_id(dst, &id_dst);
    must(rd_call(admin[dst], RD_T(RD_STATUS), &err, "CLUSTER SETSLOT %s NODE %s", s, id_dst), "NODE", &err);
    for (int i = 0; i < MASTERS; i++)
        if (i != dst)
            must(rd_call(admin[i], RD_T(RD_STATUS), &err, "CLUSTER SETSLOT %s NODE %s", s, id_dst), "NODE", &err);
    /* Until every master knows the new owner's epoch: the next move's owner bumps its
     * own from the greatest it knows, and two owners at one epoch make Redis 7.0 lose
     * the slot (it does not settle a tie between two claims). */
    for (int tries = 0; tries < 300; tries++) {
        long long e[MASTERS];
        for (int i = 0; i < MASTERS; i++)
            e[i] = current_epoch(i);
        if (e[0] == e[1] && e[1] == e[2] && owner_by(1, slot) == dst)
            return;
        clock_sleep_ms(10);
    }
    fprintf(stderr, "the masters do not agree on the epoch after slot %u moved\n", slot);
    exit(2);
}

/* Moves slot, with the key in it, from its owner to the next master. Returns the new
 * owner. */
static int move_slot(const char *key)
{
    unsigned slot = rd_key_slot(key, strlen(key));
    int src = owner_of(slot), dst = (src + 1) % MASTERS;

    migrate_begin(slot, src, dst);
    migrate_key(key, src, dst);
    migrate_end(slot, dst);
    return dst;
}

/* How many times the masters ran a command (what "calls"), or refused it ("rejected_calls":
 * MOVED, ASK, TRYAGAIN), since CONFIG RESETSTAT (INFO commandstats). */
static long long stat_of(const char *cmd, const char *what)
{
    long long sum = 0;

    for (int i = 0; i < MASTERS; i++) {
        struct rd_error err;
        struct rd_reply *r = rd_call(admin[i], RD_T(RD_STRING), &err, "INFO commandstats");
        char needle[64];
        const char *at;
        snprintf(needle, sizeof(needle), "cmdstat_%s:", cmd);
        if (r && (at = strstr(r->str, needle)) != NULL && (at = strstr(at, what)) != NULL)
            sum += atoll(at + strlen(what) + 1);
        rd_reply_free(r);
    }
    return sum;
}

static long long calls_of(const char *cmd)
{
    return stat_of(cmd, "calls");
}

static void reset_stats(void)
{
    for (int i = 0; i < MASTERS; i++) {
        struct rd_error err;
        rd_reply_free(rd_call(admin[i], RD_T(RD_STATUS), &err, "CONFIG RESETSTAT"));
    }
}

/* Slots as Redis computes them, for keys with and without hash tags. */
static void test_slots(void)
{
    static const char *const keys[] = {
        "stock:{inventory001}", "lock:{item0001}", "idem:{item0042}:k-1", "idem-item:k-1",
        "foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}",
        "a{b", "item9999", "",
    };
    int same = 0, n = (int)(sizeof(keys) / sizeof(keys[0]));

    for (int i = 0; i < n; i++) {
        struct rd_error err;
        struct rd_reply *r = rd_call(admin[0], RD_T(RD_INTEGER), &err, "CLUSTER KEYSLOT %s", keys[i]);
        same += r && r->integer == (long long)rd_key_slot(keys[i], strlen(keys[i]));
        rd_reply_free(r);
    }
    test_cond("the slot of 13 keys (hash tags, empty tags, no tag) is CLUSTER KEYSLOT's", same == n);
}

/* 300 keys set through the cluster client land on the masters of their slots. */
static void test_spread(struct rd_client *rc)
{
    struct rd_error err;
    int set = 0, found = 0, on_each = 1;
    char key[32];

    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "t:{spread%d}", i);
        struct rd_reply *r = rd_call(rc, RD_T(RD_STATUS), &err, "SET %s %d", key, i);
        set += r != NULL;
        rd_reply_free(r);
    }
    for (int m = 0; m < MASTERS; m++) {
        long long here = keys_on(m);
        found += (int)here;
        on_each &= here > 50;
    }
    test_cond("300 keys set through the cluster client, every one answered", set == 300);
    test_cond("... each on its slot's master: 300 in all, each master has a share",
              found >= 300 && on_each);
}

struct burst {
    struct rd_client *rc;
    int right;
};

/* Reads the 20 moved keys 5 times each. */
static void *read_moved(void *arg)
{
    struct burst *b = arg;
    char key[32];

    for (int round = 0; round < 5; round++)
        for (int i = 0; i < 20; i++) {
            struct rd_error err;
            snprintf(key, sizeof(key), "t:{moved%d}", i);
            struct rd_reply *r = rd_call(b->rc, RD_T(RD_STRING), &err, "GET %s", key);
            b->right += r && atoi(r->str) == i;
            rd_reply_free(r);
        }
    return NULL;
}

/* 20 slots move to other masters; 4 threads then read their keys: every answer right,
 * the map read again a few times at most (not once per MOVED). */
static void test_moved(struct rd_client *rc)
{
    struct burst b[4];
    pthread_t t[4];
    char key[32];
    int right = 0;
    long long moved, reads;

    for (int i = 0; i < 20; i++) {
        struct rd_error err;
        snprintf(key, sizeof(key), "t:{moved%d}", i);
        rd_reply_free(rd_call(rc, RD_T(RD_STATUS), &err, "SET %s %d", key, i));
    }
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "t:{moved%d}", i);
        move_slot(key);
    }
    clock_sleep_ms(150);   /* the map is read at most every 100 ms: this burst may read it */
    reset_stats();
    for (int i = 0; i < 4; i++) {
        b[i] = (struct burst){ .rc = rc };
        pthread_create(&t[i], NULL, read_moved, &b[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        right += b[i].right;
    }
    moved = stat_of("get", "rejected_calls");
    reads = calls_of("cluster|slots");
    printf("       MOVED burst: %lld GETs answered MOVED, map read %lld times\n", moved, reads);
    test_cond("after 20 slots moved, 400 reads from 4 threads: every answer right", right == 400);
    test_cond("... MOVED was answered (the client's map was old) and followed", moved >= 1);
    test_cond("... the map read again at most 3 times for the whole burst, not per MOVED",
              reads >= 1 && reads <= 3);
}

/* A key already migrated while its slot is MIGRATING: the old node answers ASK; the
 * client sends ASKING and the command to the new one, and keeps its map (the next call
 * goes to the old node again). */
static void test_ask(struct rd_client *rc)
{
    const char *key = "t:{ask}";
    unsigned slot = rd_key_slot(key, strlen(key));
    struct rd_error err;
    struct rd_reply *r;
    int src, dst, right = 0;

    rd_reply_free(rd_call(rc, RD_T(RD_STATUS), &err, "SET %s %s", key, "here"));
    src = owner_of(slot);
    dst = (src + 1) % MASTERS;
    migrate_begin(slot, src, dst);
    migrate_key(key, src, dst);
    reset_stats();
    for (int i = 0; i < 2; i++) {
        r = rd_call(rc, RD_T(RD_STRING), &err, "GET %s", key);
        right += r && strcmp(r->str, "here") == 0;
        rd_reply_free(r);
    }
    test_cond("ASK: a key moved while its slot migrates is read through ASKING, twice", right == 2);
    test_cond("... ASKING sent twice and the map kept (each read went to the old node first)",
              calls_of("asking") == 2 && calls_of("cluster|slots") == 0);
    migrate_end(slot, dst);
}

struct finish {
    const char *key;
    int src, dst;
    long after_ms;
};

/* Ends a migration after a while (the TRYAGAIN test's other side). */
static void *finish_later(void *arg)
{
    struct finish *f = arg;

    clock_sleep_ms(f->after_ms);
    migrate_key(f->key, f->src, f->dst);
    migrate_end(rd_key_slot(f->key, strlen(f->key)), f->dst);
    return NULL;
}

/* A script naming a key there and one not while the slot migrates: TRYAGAIN. The client
 * waits it out when the migration ends in time, and gives up after RD_TRYAGAIN_MS. */
static void test_tryagain(struct rd_client *rc)
{
    static const char script[] = "return redis.call('exists', KEYS[1], KEYS[2])";
    const char *a = "t:{try}:a";
    unsigned slot = rd_key_slot(a, strlen(a));
    struct finish f = { .key = a, .after_ms = 300 };
    struct rd_error err;
    struct rd_reply *r;
    pthread_t t;
    long long start;
    long took;

    rd_reply_free(rd_call(rc, RD_T(RD_STATUS), &err, "SET %s 1", a));
    f.src = owner_of(slot);
    f.dst = (f.src + 1) % MASTERS;
    migrate_begin(slot, f.src, f.dst);
    start = clock_now_ms();
    r = rd_call(rc, RD_T(RD_INTEGER), &err, "EVAL %s 2 %s %s", script, a, "t:{try}:b");
    took = (long)(clock_now_ms() - start);
    printf("       TRYAGAIN given up after %ld ms: %s\n", took, r ? "answered" : err.msg);
    test_cond("TRYAGAIN while the slot stays migrating: given up, typed TRYAGAIN",
              r == NULL && err.fault == RD_E_TRYAGAIN);
    test_cond("... after about RD_TRYAGAIN_MS (900 to 1500 ms)", took >= 900 && took <= 1500);
    rd_reply_free(r);
    pthread_create(&t, NULL, finish_later, &f);
    start = clock_now_ms();
    r = rd_call(rc, RD_T(RD_INTEGER), &err, "EVAL %s 2 %s %s", script, a, "t:{try}:b");
    took = (long)(clock_now_ms() - start);
    pthread_join(t, NULL);
    printf("       TRYAGAIN waited out in %ld ms\n", took);
    test_cond("TRYAGAIN while the migration ends 300 ms later: answered (1 key exists), on "
              "the new node", r && r->integer == 1);
    test_cond("... within RD_TRYAGAIN_MS", took >= 250 && took < 1000);
    rd_reply_free(r);
}

/* Seeds that do not answer, and a Redis that is not in cluster mode: clear errors. */
static void test_bad_seeds(void)
{
    struct rd_error err;
    struct rd_client *nobody = client("127.0.0.1:1", 0);
    struct rd_client *plain;
    char list[32];
    struct rd_reply *r = rd_call(nobody, RD_T(RD_STATUS), &err, "SET %s 1", "t:{x}");

    test_cond("no seed answers: refused with a connect error, nothing sent",
              r == NULL && err.fault == RD_E_CONNECT &&
                  strstr(err.msg, "no node of the cluster") != NULL);
    printf("       %s\n", err.msg);
    rd_reply_free(r);
    rd_client_destroy(nobody);
    snprintf(list, sizeof(list), "127.0.0.1:%d", plain_port);
    plain = client(list, 0);
    r = rd_call(plain, RD_T(RD_STATUS), &err, "SET %s 1", "t:{x}");
    test_cond("a seed that is not a cluster node: refused, saying so",
              r == NULL && strstr(err.msg, "not a cluster node") != NULL);
    printf("       %s\n", err.msg);
    rd_reply_free(r);
    rd_client_destroy(plain);
}

int main(int argc, char **argv)
{
    struct rd_client *rc;

    if (argc != 5) {
        fprintf(stderr, "usage: test_cluster PORT1 PORT2 PORT3 PLAIN_PORT\n");
        return 2;
    }
    for (int i = 0; i < MASTERS; i++) {
        master_port[i] = atoi(argv[1 + i]);
        admin[i] = client(NULL, master_port[i]);
    }
    plain_port = atoi(argv[4]);
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", master_port[0]);
    rc = client(seeds, 0);
    test_slots();
    test_spread(rc);
    test_moved(rc);
    test_ask(rc);
    test_tryagain(rc);
    test_bad_seeds();
    rd_client_destroy(rc);
    for (int i = 0; i < MASTERS; i++)
        rd_client_destroy(admin[i]);
    return test_report();
}
