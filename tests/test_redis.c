/* test_redis.c - The Redis layer (redis/) against real redis-servers: replies of
 * every type, batches in one round trip and in order, the one NOSCRIPT path (what is
 * sent again and what never is), a connection per thread and its reconnect, every
 * error typed where it is found, and several servers at once.
 * Usage: test_redis PORT REPLICA_PORT CLUSTER_NODE_PORT
 *   PORT: a plain Redis; REPLICA_PORT: a replica of it (READONLY); CLUSTER_NODE_PORT: a
 *   cluster-enabled node with no slots (CLUSTERDOWN). */
#include "redis/redis.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "tests/test.h"

static int port, replica_port, cluster_port;

/* A script by hand, as the build embeds real ones: its text and its SHA1 (learnt here
 * from SCRIPT LOAD, once). */
static const char counter_source[] = "return redis.call('incr', KEYS[1])\n";
static struct rd_script script_incr;

static struct rd_client *client_on(int p, long command_timeout_ms)
{
    struct rd_config cfg = { .host = "127.0.0.1", .port = p,
                             .command_timeout_ms = command_timeout_ms };
    struct rd_error err;
    struct rd_client *rc = rd_client_create(&cfg, &err);

    if (rc == NULL) {
        fprintf(stderr, "rd_client_create: %s\n", err.msg);
        exit(2);
    }
    return rc;
}

/* The SHA Redis gives the counter script, to call it by. */
static void learn_sha(struct rd_client *rc)
{
    static char sha[41];
    struct rd_error err;
    struct rd_reply *r = rd_call(rc, RD_T(RD_STRING), &err, "SCRIPT LOAD %s", counter_source);

    if (r == NULL || r->len != 40) {
        fprintf(stderr, "SCRIPT LOAD: %s\n", err.msg);
        exit(2);
    }
    memcpy(sha, r->str, 41);
    rd_reply_free(r);
    script_incr = (struct rd_script){ .name = "counter", .source = counter_source, .sha = sha };
}

/* The integer answer to CMD ARG (an integer reply, or a string holding one). */
static long long int_of(struct rd_client *rc, const char *cmd, const char *arg)
{
    struct rd_error err;
    struct rd_reply *r = rd_call(rc, RD_T(RD_INTEGER) | RD_T(RD_STRING) | RD_T(RD_NIL), &err,
                                 "%s %s", cmd, arg);
    long long v = r == NULL ? -999 : r->type == RD_INTEGER ? r->integer
                                   : r->type == RD_STRING ? atoll(r->str) : -1;

    rd_reply_free(r);
    return v;
}

static void test_replies(struct rd_client *rc)
{
    struct rd_error err;
    struct rd_reply *r;

    rd_reply_free(rd_call(rc, RD_T(RD_STATUS), &err, "SET %s %s", "t:{a}", "hello"));
    r = rd_call(rc, RD_T(RD_ARRAY), &err, "MGET %s %s", "t:{a}", "t:{a}:none");
    test_cond("an array of a string and a nil",
              r && r->elements == 2 && r->element[0]->type == RD_STRING &&
                  strcmp(r->element[0]->str, "hello") == 0 && r->element[0]->len == 5 &&
                  r->element[1]->type == RD_NIL);
    rd_reply_free(r);
    r = rd_call(rc, RD_T(RD_NIL), &err, "GET %s", "t:{none}");
    test_cond("a nil bulk string is RD_NIL", r && r->type == RD_NIL);
    rd_reply_free(r);
    r = rd_call(rc, RD_T(RD_ARRAY), &err, "MGET %s %s", "t:{a}", "t:{none}");
    test_cond("keys of two slots in one command are refused before they are sent (CROSSSLOT on "
              "a cluster), on one Redis too", r == NULL && err.fault == RD_E_USAGE);
    r = rd_call(rc, RD_T(RD_ARRAY), &err, "EVAL %s 0", "return {1, {2, {'x', false}}, 'y'}");
    test_cond("nested arrays keep their order and types",
              r && r->elements == 3 && r->element[0]->integer == 1 &&
                  r->element[1]->type == RD_ARRAY && r->element[1]->element[0]->integer == 2 &&
                  r->element[1]->element[1]->element[0]->type == RD_STRING &&
                  r->element[1]->element[1]->element[1]->type == RD_NIL &&
                  strcmp(r->element[2]->str, "y") == 0);
    rd_reply_free(r);
    memset(&err, 0, sizeof(err));
    r = rd_call(rc, RD_T(RD_INTEGER), &err, "GET %s", "t:{a}");
    test_cond("a reply of a type not asked for: NULL, RD_E_PROTOCOL",
              r == NULL && err.fault == RD_E_PROTOCOL);
}

/* Each error, typed where it is read: from real situations, and (for the cluster's
 * redirects, which need more than one node) from a script that answers Redis's own
 * words, so that the reply crosses the wire as Redis would send it. */
static void test_errors(struct rd_client *rc)
{
    static const struct {
        const char *reply;
        enum rd_fault fault;
        const char *code;
    } relayed[] = {
        { "MOVED 3999 127.0.0.1:6381", RD_E_MOVED, "MOVED" },
        { "ASK 3999 127.0.0.1:6381", RD_E_ASK, "ASK" },
        { "TRYAGAIN Multiple keys request during rehashing of slot", RD_E_TRYAGAIN, "TRYAGAIN" },
        { "NOREPLICAS Not enough good replicas to write.", RD_E_NOREPLICAS, "NOREPLICAS" },
        { "LOADING Redis is loading the dataset in memory", RD_E_LOADING, "LOADING" },
        { "BUSY Redis is busy running a script.", RD_E_BUSY, "BUSY" },
        { "lease_lost the token is older", RD_E_REPLY, "lease_lost" },
    };
    struct rd_error err;
    char d[160];

    for (size_t i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++) {
        memset(&err, 0, sizeof(err));
        struct rd_reply *r = rd_call(rc, RD_T(RD_STATUS), &err, "EVAL %s 0 %s",
                                     "return redis.error_reply(ARGV[1])", relayed[i].reply);
        snprintf(d, sizeof(d), "an error reply %.30s...: typed %s, code %s", relayed[i].reply,
                 rd_fault_name(relayed[i].fault), relayed[i].code);
        test_cond(d, r == NULL && err.fault == relayed[i].fault && strcmp(err.code, relayed[i].code) == 0);
    }

    memset(&err, 0, sizeof(err));
    test_cond("EVALSHA of a script Redis never saw: noscript",
              rd_call(rc, RD_T(RD_INTEGER), &err, "EVALSHA %s 0",
                      "ffffffffffffffffffffffffffffffffffffffff") == NULL &&
                  err.fault == RD_E_NOSCRIPT);

    struct rd_client *replica = client_on(replica_port, 0);
    memset(&err, 0, sizeof(err));
    test_cond("a write to a replica: readonly (and an I/O fault: look for the master)",
              rd_call(replica, RD_T(RD_STATUS), &err, "SET %s 1", "t:{ro}") == NULL &&
                  err.fault == RD_E_READONLY && rd_fault_is_io(err.fault));
    rd_client_destroy(replica);

    struct rd_client *cluster = client_on(cluster_port, 0);
    memset(&err, 0, sizeof(err));
    test_cond("a key on a cluster node that serves no slot: clusterdown",
              rd_call(cluster, RD_T(RD_NIL), &err, "GET %s", "t:{c}") == NULL &&
                  err.fault == RD_E_CLUSTERDOWN);
    rd_client_destroy(cluster);

    struct rd_client *slow = client_on(port, 300);
    long long start = clock_now_ms();
    memset(&err, 0, sizeof(err));
    /* A script that keeps the server busy for 1 s (DEBUG SLEEP is off in Redis 7). */
    test_cond("no answer within the command timeout: timeout",
              rd_call(slow, RD_T(RD_INTEGER), &err, "EVAL %s 0",
                      "local t = redis.call('time') local s = t[1] * 1e6 + t[2] "
                      "repeat t = redis.call('time') until t[1] * 1e6 + t[2] > s + 1e6 "
                      "return 1") == NULL &&
                  err.fault == RD_E_TIMEOUT && clock_now_ms() - start < 900);
    clock_sleep_ms(800);
    rd_client_destroy(slow);

    struct rd_client *nobody = client_on(1, 0);
    memset(&err, 0, sizeof(err));
    test_cond("nothing listening: connect (nothing was sent), an I/O fault",
              rd_call(nobody, RD_T(RD_STATUS), &err, "PING") == NULL &&
                  err.fault == RD_E_CONNECT && rd_fault_is_io(err.fault) && err.msg[0]);
    rd_client_destroy(nobody);

    struct rd_config cfg = { .host = "127.0.0.1", .port = port, .password = "wrong" };
    struct rd_client *stranger = rd_client_create(&cfg, &err);
    memset(&err, 0, sizeof(err));
    struct rd_reply *r = rd_call(stranger, RD_T(RD_STATUS), &err, "PING");
    test_cond("a password Redis does not want (AUTH refused): auth, and it is not in the message",
              r == NULL && err.fault == RD_E_AUTH && strstr(err.msg, "wrong") == NULL);
    rd_client_destroy(stranger);
}

/* before, main, after: one write, in that order; replies where they belong. */
static void test_round_trip(struct rd_client *rc)
{
    struct rd_batch before = { 0 }, main = { 0 }, after = { 0 };
    struct rd_error err;

    rd_reply_free(rd_call(rc, RD_T(RD_INTEGER), &err, "DEL %s", "t:{order}"));
    rd_batch_add(&before, &err, "RPUSH %s %s", "t:{order}", "before");
    rd_batch_add(&main, &err, "RPUSH %s %s", "t:{order}", "main");
    rd_batch_add(&after, &err, "RPUSH %s %s", "t:{order}", "after");
    rd_batch_add(&after, &err, "LRANGE %s 0 -1", "t:{order}");
    int st = rd_round_trip(rc, &before, &main, &after, &err);
    test_cond("a round trip: every reply came", st == RD_OK && before.reply[0] && main.reply[0] &&
                                                    after.reply[0] && after.reply[1]);
    test_cond("  in order: before, main, after",
              after.reply[1] && after.reply[1]->elements == 3 &&
                  strcmp(after.reply[1]->element[0]->str, "before") == 0 &&
                  strcmp(after.reply[1]->element[1]->str, "main") == 0 &&
                  strcmp(after.reply[1]->element[2]->str, "after") == 0);
    test_cond("  each batch holds its own replies", before.reply[0]->integer == 1 &&
                                                     main.reply[0]->integer == 2 &&
                                                     after.reply[0]->integer == 3);
    rd_batch_reset(&before);
    rd_batch_reset(&main);
    rd_batch_reset(&after);
}

/* The one NOSCRIPT path. */
static void test_noscript(struct rd_client *rc)
{
    struct rd_batch before = { 0 }, main = { 0 }, after = { 0 };
    const char *key[] = { "t:{n}" };
    struct rd_error err;

    rd_reply_free(rd_call(rc, RD_T(RD_INTEGER), &err, "DEL %s", "t:{n}"));
    rd_reply_free(rd_call(rc, RD_T(RD_STATUS), &err, "SCRIPT FLUSH"));
    struct rd_reply *r = rd_eval(rc, &script_incr, RD_T(RD_INTEGER), 1, 0, key, &err);
    test_cond("a script Redis forgot is loaded and run once", r && r->integer == 1 &&
                                                                  int_of(rc, "GET", "t:{n}") == 1);
    rd_reply_free(r);

    /* main's script again after a flush, with a read after it: both sent again, the
     * read sees the script's effect; the script ran once. */
    rd_reply_free(rd_call(rc, RD_T(RD_STATUS), &err, "SCRIPT FLUSH"));
    rd_batch_add_eval(&main, &script_incr, 1, 0, key, &err);
    rd_batch_add(&after, &err, "GET %s", "t:{n}");
    int st = rd_round_trip(rc, NULL, &main, &after, &err);
    test_cond("NOSCRIPT in main: it and what follows are sent again, the script runs once",
              st == RD_OK && main.reply[0] && main.reply[0]->integer == 2 && after.reply[0] &&
                  after.reply[0]->type == RD_STRING && strcmp(after.reply[0]->str, "2") == 0 &&
                  int_of(rc, "GET", "t:{n}") == 2);
    rd_batch_reset(&main);
    rd_batch_reset(&after);

    /* A script that goes in before (it cannot be sent twice): the caller loads it first,
     * on a client that never had it; then it runs, once. */
    rd_reply_free(rd_call(rc, RD_T(RD_STATUS), &err, "SCRIPT FLUSH"));
    struct rd_client *fresh = client_on(port, 0);
    rd_batch_add_eval(&before, &script_incr, 1, 0, key, &err);
    rd_batch_add(&main, &err, "GET %s", "t:{n}");
    st = rd_script_load(fresh, &script_incr, "t:{n}", &err);   /* the caller's, before a grant */
    if (st == RD_OK)
        st = rd_round_trip(fresh, &before, &main, NULL, &err);
    test_cond("a script loaded (rd_script_load) before it goes ahead of another command: it runs once",
              st == RD_OK && before.reply[0] && before.reply[0]->integer == 3 &&
                  strcmp(main.reply[0]->str, "3") == 0);
    rd_batch_reset(&before);
    rd_batch_reset(&main);

    /* The same connection after a flush: before's NOSCRIPT comes back as it is, never
     * sent twice, and the script is loaded for next time. */
    rd_reply_free(rd_call(fresh, RD_T(RD_STATUS), &err, "SCRIPT FLUSH"));
    rd_batch_add_eval(&before, &script_incr, 1, 0, key, &err);
    rd_batch_add(&main, &err, "GET %s", "t:{n}");
    st = rd_round_trip(fresh, &before, &main, NULL, &err);
    test_cond("NOSCRIPT in before: reported, not sent again (nothing ran)",
              st == RD_OK && before.reply[0] && before.reply[0]->fault == RD_E_NOSCRIPT &&
                  int_of(rc, "GET", "t:{n}") == 3);
    r = rd_call(fresh, RD_T(RD_INTEGER), &err, "EVALSHA %s 1 %s", script_incr.sha, "t:{n}");
    test_cond("  ... and the script is there for the next call", r && r->integer == 4);
    rd_reply_free(r);
    rd_batch_reset(&before);
    rd_batch_reset(&main);
    rd_client_destroy(fresh);
}

/* A connection per thread: two threads, two connections. */
struct ids { struct rd_client *rc; long long id; };

static void *client_id(void *arg)
{
    struct ids *t = arg;
    t->id = int_of(t->rc, "CLIENT", "ID");
    return NULL;
}

static void test_threads_and_reconnect(struct rd_client *rc)
{
    struct ids a = { rc, 0 }, b = { rc, 0 };
    pthread_t ta, tb;
    struct rd_error err;

    pthread_create(&ta, NULL, client_id, &a);
    pthread_join(ta, NULL);   /* a's thread has ended: b gets another connection */
    pthread_create(&tb, NULL, client_id, &b);
    pthread_join(tb, NULL);
    long long mine = int_of(rc, "CLIENT", "ID"), again = int_of(rc, "CLIENT", "ID");
    test_cond("each thread its own connection; one thread keeps its own",
              a.id > 0 && b.id > 0 && a.id != b.id && mine != a.id && mine != b.id && again == mine);

    /* The server closes the connection (as a restart does): the next call reconnects
     * instead of failing, and counts the drop only when an error saw it. */
    char victim[32];
    snprintf(victim, sizeof(victim), "%lld", mine);
    struct rd_client *other = client_on(port, 0);
    rd_reply_free(rd_call(other, RD_T(RD_INTEGER), &err, "CLIENT KILL ID %s", victim));
    rd_client_destroy(other);
    clock_sleep_ms(150);   /* idle past the layer's check */
    long long now = int_of(rc, "CLIENT", "ID");
    test_cond("a connection the server closed is replaced before use: the call works",
              now > 0 && now != mine);
}

static void test_fanout(void)
{
    struct rd_client *rcs[3] = { client_on(port, 200), client_on(1, 200), client_on(replica_port, 200) };
    struct rd_batch b = { 0 };
    struct rd_reply *replies[3];
    const char *key[] = { "t:{fan}" };
    struct rd_error err;

    rd_batch_add_eval(&b, &script_incr, 1, 0, key, &err);
    int answered = rd_fanout(rcs, 3, &b, replies);
    test_cond("fanout: the live servers answer, the dead one is NULL",
              answered == 2 && replies[0] && replies[0]->type == RD_INTEGER && replies[1] == NULL &&
                  replies[2] && replies[2]->fault == RD_E_READONLY);
    for (int i = 0; i < 3; i++) {
        rd_reply_free(replies[i]);
        rd_client_destroy(rcs[i]);
    }
    rd_batch_reset(&b);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_redis PORT REPLICA_PORT CLUSTER_NODE_PORT\n");
        return 2;
    }
    port = atoi(argv[1]), replica_port = atoi(argv[2]), cluster_port = atoi(argv[3]);
    struct rd_client *rc = client_on(port, 0);
    learn_sha(rc);
    test_cond("the layer says how it finds its server", strcmp(rd_client_locator(rc), "single") == 0);
    test_replies(rc);
    test_errors(rc);
    test_round_trip(rc);
    test_noscript(rc);
    test_threads_and_reconnect(rc);
    test_fanout();
    rd_client_destroy(rc);
    return test_report();
}
