/* notify.h - The parts of the notify wait (lock/wait.c's LOCK_WAIT_NOTIFY): a queue per
 * lock key (queue.c) and the subscriber that feeds them (subscriber.c on one Redis,
 * shards.c on a cluster). Only lock/ includes it. */
#ifndef LOCK_NOTIFY_H
#define LOCK_NOTIFY_H

#include <pthread.h>
#include <stdatomic.h>

#include "lock/internal.h"

/* A thread waiting in a key's queue; lives on its stack. */
struct waiter {
    pthread_cond_t cv;
    struct waiter *next;
};

/* One key's queue. Created on first use, kept until the client is destroyed. */
struct key_queue {
    char key[LOCK_KEY_MAX];
    pthread_mutex_t mu;           /* guards everything below */
    unsigned long messages;       /* release messages seen for this key */
    struct waiter *first, *last;  /* first come first served; first asks Redis */
    char holder[LOCK_OWNER_MAX];  /* the owner that holds it through this queue */
    int holds;                    /* its grants not yet released (nested ones too) */
    unsigned long wanted;         /* "wanted" messages seen from other processes */
    unsigned long wanted_at_grant;/* wanted when the holder's grant was made */
    long long yield_until;        /* monotonic: we gave the lock up to another process
                                     that asked; our next try waits for its release */
    /* Cluster: the subscription to this key's sharded channel (the subscriber thread's) */
    atomic_int subscribed;        /* 1 once Redis confirmed it, until it ends */
    int asked;                    /* SSUBSCRIBE sent, not yet answered (subscriber's) */
    int server;                   /* the node it was sent to (subscriber's) */
    size_t len;                   /* strlen(key) */
    struct key_queue *next;       /* every queue, newest first */
    struct key_queue *hnext;      /* the next in its bucket */
};

/* Queues found by their key's hash: a message of one key among thousands waited on (a
 * cluster's many items) finds its queue in a step, not a walk through all of them. */
enum { QUEUE_BUCKETS = 1024 };

struct notify {
    struct lock_client *lc;
    pthread_mutex_t table_mu;     /* guards queues, bucket, count, sub */
    struct key_queue *queues;
    struct key_queue *bucket[QUEUE_BUCKETS];
    atomic_int unasked;           /* cluster: some key may need its SSUBSCRIBE sent */
    int count;
    pthread_t thread;
    struct rd_conn *sub;          /* the subscriber's connection, while connected */
    atomic_int connected;
    atomic_int stopping;
    int sharded;                  /* Redis Cluster: SPUBLISH, SSUBSCRIBE per key */
};

enum { QUEUES_MAX = 4096 };
/* Cluster: how often the subscriber looks for keys to subscribe to. */
enum { SHARD_POLL_MS = 20 };
/* The subscriber's liveness check: silent this long, it PINGs; silent as long again, the
 * connection is taken as dead (a partition sends no reset) and made anew. */
enum { SUB_IDLE_MS = 1000 };

/* --- queue.c --- */
void notify_waiter_init(struct waiter *w);
/* The queue for key; created when create is set. NULL when there is none (or no room). */
struct key_queue *notify_queue(struct notify *n, const char *key, size_t len, int create);
/* 1 when a release of q's key will be heard: the subscription is up (for this key's
 * channel, on a cluster). */
int notify_listened(struct notify *n, struct key_queue *q);
/* Counts a message for q and wakes its first waiter. */
void notify_bump(struct key_queue *q);
/* After a reconnect or a disconnect, messages may have been missed: every first waiter
 * tries again (and, disconnected, goes on polling). */
void notify_bump_all(struct notify *n);
/* A message on a lock's channel (its name and payload), as the subscriber heard it. */
void notify_heard(struct notify *n, const struct rd_reply *channel, const char *payload);
/* The command that publishes on a lock's channel: SPUBLISH on a cluster. */
const char *notify_publish(const struct lock_client *lc);
/* "<what> <instance id>", a message on a lock's channel, into buf; returns buf. */
const char *notify_message(const struct lock_client *lc, const char *what,
                           char (*buf)[LOCK_OWNER_MAX]);

/* --- subscriber.c, shards.c: the subscriber thread, n its argument --- */
void *notify_subscriber_main(void *n);
void *notify_sharded_main(void *n);

#endif
