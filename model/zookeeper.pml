/* zookeeper.pml - ZooKeeper in Redis's place (v11): one server process running each
 * request whole, the sessions that hold the lock's ephemeral nodes and expire when
 * their client goes silent, and the sale's store steps on it (the stock read with its
 * version, the write as one multi). common.pml includes it when the model defines
 * ZOOKEEPER.
 *
 * What lives on the server, for the one item I:
 *   /inventory/I/lock    the lock's children: one ephemeral sequential node a contender,
 *                        owned by its session; here node_seq[c], client c's node's
 *                        sequence number (from 1; 0: none)
 *   /inventory/I/stock   the stock (common.pml's stock) and its version, bumped by every set
 *   /inventory/I/sold    units sold (sold_val) and its version
 *   /inventory/I/orders  the ledger, one entry a committed sale: common.pml's sold counts
 *                        them (the sales acknowledged), which no-oversell compares with
 *                        the stock
 *
 * Sessions: a client's session lives while its heartbeats (the client library's pings)
 * reach the server: every tick the client runs. A paused client (every thread stopped)
 * or a dead one sends none; after SESSION silent ticks the server expires the session and
 * deletes its ephemeral nodes: its lock is gone. The client does not know until its next
 * request: its handle then reports the expiry and the service opens a new session and
 * sends the request on it (a request on the expired session itself would be refused),
 * so the guard against a stale write has to be in the request: the multi's check.
 * A client that leaves closes its session.
 *
 * Watches: exists(node, watch) leaves a watch on the server; the node's deletion fires
 * it (once) and wakes the waiter, which then looks at the children again.
 */

#define SESSION     TTL     /* the session timeout, in ticks: as long as a lease */
#define ANY_VERSION 255     /* version -1: a set whatever the node's version */

/* Return codes, as the C client names them. */
#define ZOK         0
#define ZNONODE     1       /* a check, exists or delete of a node that is not there */
#define ZBADVERSION 2       /* a set whose expected version is not the node's */

/* The sale's multi: its check of the lock node, and the version its sets expect (the one
 * read, or -1 where a counter-check takes the guard away). */
#if defined(FAULT_UNGUARDED)
#define CHECK_OF(n)     0
#define VERSION_OF(v)   ANY_VERSION
#elif defined(FAULT_NO_CHECK)
#define CHECK_OF(n)     0
#define VERSION_OF(v)   (v)
#else
#define CHECK_OF(n)     (n)
#define VERSION_OF(v)   (v)
#endif

/* --- the server's state -------------------------------------------------------------- */

byte node_seq[NCLIENTS];    /* /inventory/I/lock: client c's node's sequence, 0: none */
byte next_seq = 1;          /* the lock node's next sequence number */
byte watch_on[NCLIENTS];    /* the node (its sequence) client c watches, 0: none */
bool sess_open[NCLIENTS] = true;    /* client c's session is alive on the server */
byte sess_t[NCLIENTS] = SESSION;    /* ticks of silence it has left before it expires */
byte stock_version;         /* /inventory/I/stock's version (the value: stock) */
byte sold_val;              /* /inventory/I/sold */
byte sold_version;

/* --- client-side state --------------------------------------------------------------- */

byte my_node[NCLIENTS];     /* the client's own lock node, as it knows it (the multi checks it) */

mtype = { ZK_CREATE, ZK_CHILDREN, ZK_EXISTS_WATCH, ZK_DELETE, ZK_GET, ZK_MULTI, ZK_CLOSE };

/* Requests: operation, client, five arguments. Replies: a return code, four values. */
chan to_zk = [0] of { mtype, byte, byte, byte, byte, byte, byte };
chan zk_reply[NCLIENTS] = [0] of { byte, byte, byte, byte, byte };

/* --- the server ------------------------------------------------------------------------ */

/* Client c's lock node is deleted (by its delete, or with its session); the watches on it
 * fire. j: a loop variable of the caller's. */
inline delete_node(c, j) {
    for (j : 0 .. NCLIENTS - 1) {
        if
        :: watch_on[j] != 0 && watch_on[j] == node_seq[c] ->
            watch_on[j] = 0;
            printf("EV node %d is gone: %c's watch fires\n", node_seq[c], NAME(j))
        :: else
        fi
    }
    node_seq[c] = 0;
    j = 0
}

/* Whether client c holds the lock: its node exists and no node comes before it (ghost:
 * for no-stale-write only). */
inline holds_lock(c, j, yes) {
    yes = (node_seq[c] != 0);
    for (j : 0 .. NCLIENTS - 1) {
        if
        :: node_seq[j] != 0 && node_seq[j] < node_seq[c] -> yes = false
        :: else
        fi
    }
    j = 0
}

/* One tick of the sessions (from the clock, before pauses count down): a session whose
 * client runs hears its heartbeat; one whose client is paused or dead counts a silent
 * tick, and at SESSION of them the server expires it and deletes its ephemeral node. */
inline session_ticks(c, j) {
    for (c : 0 .. NCLIENTS - 1) {
        if
        :: sess_open[c] && (finished[c] || pause_t[c] > 0) ->
            sess_t[c]--;
            if
            :: sess_t[c] == 0 ->
                sess_open[c] = false;
                if
                :: node_seq[c] != 0 ->
                    printf("EV %c's session expires: its node %d goes with it\n", NAME(c), node_seq[c]);
                    delete_node(c, j)
                :: else ->
                    printf("EV %c's session expires\n", NAME(c))
                fi
            :: else
            fi
        :: sess_open[c] && !finished[c] && pause_t[c] == 0 -> sess_t[c] = SESSION
        :: else
        fi
    }
}

/* The multi [check(lock node a1, version -1), set(stock, a2, version a3), set(sold, a4,
 * version a5), create(an order)]: all of it, or nothing and the first failing op's code
 * (a1 0: no check op; a version ANY_VERSION: -1). */
inline multi() {
    if
    :: a1 != 0 ->
        rc = ZNONODE;
        for (i : 0 .. NCLIENTS - 1) {
            if
            :: node_seq[i] == a1 -> rc = ZOK
            :: else
            fi
        }
    :: else
    fi;
    if
    :: rc == ZOK && a3 != ANY_VERSION && a3 != stock_version -> rc = ZBADVERSION
    :: rc == ZOK && a5 != ANY_VERSION && a5 != sold_version -> rc = ZBADVERSION
    :: else
    fi;
    if
    :: rc == ZOK ->
        holds_lock(c, j, yes);
        stale = stale || !yes;
        stock = a2; stock_version++;
        sold_val = a4; sold_version++;
        sold++;                                 /* the order, in the ledger */
        printf("EV %c: multi writes stock %d (version %d), sold %d; order %d\n",
               NAME(c), stock, stock_version, sold_val, sold)
    :: rc == ZNONODE ->
        printf("EV %c: multi fails: its node %d is gone (ZNONODE): lease_lost, nothing written\n",
               NAME(c), a1)
    :: rc == ZBADVERSION ->
        printf("EV %c: multi fails: stock or sold moved (ZBADVERSION), nothing written\n", NAME(c))
    fi
}

/* ZooKeeper: takes one request at a time and runs it whole; answers on the client's
 * channel. */
active proctype ZooKeeper() {
    mtype op;
    byte c, a1, a2, a3, a4, a5, rc, v1, v2, v3, v4, i, j;
    bool yes;

end:
    do
    :: atomic {
        to_zk ? op, c, a1, a2, a3, a4, a5;
        rc = ZOK;
        if
        :: op == ZK_CREATE ->                   /* ephemeral sequential, under the lock */
            node_seq[c] = next_seq; next_seq++; v1 = node_seq[c]
        :: op == ZK_CHILDREN ->                 /* as the client reads them: the node just */
            for (i : 0 .. NCLIENTS - 1) {       /* before a1 (v1, its owner + 1 in v2), 0: none */
                if
                :: node_seq[i] != 0 && node_seq[i] < a1 && node_seq[i] > v1 ->
                    v1 = node_seq[i]; v2 = i + 1
                :: else
                fi
            }
        :: op == ZK_EXISTS_WATCH ->             /* a1 there: a watch on it */
            rc = ZNONODE;
            for (i : 0 .. NCLIENTS - 1) {
                if
                :: node_seq[i] == a1 -> rc = ZOK; watch_on[c] = a1
                :: else
                fi
            }
        :: op == ZK_DELETE ->
            rc = ZNONODE;
            for (i : 0 .. NCLIENTS - 1) {
                if
                :: node_seq[i] != 0 && node_seq[i] == a1 -> rc = ZOK; delete_node(i, j)
                :: else
                fi
            }
        :: op == ZK_GET ->                      /* the stock and sold, with their versions */
            v1 = stock; v2 = stock_version; v3 = sold_val; v4 = sold_version
        :: op == ZK_MULTI ->
            multi()
        :: op == ZK_CLOSE ->                    /* its ephemeral nodes go with it */
            if
            :: node_seq[c] != 0 -> delete_node(c, j)
            :: else
            fi;
            sess_open[c] = false; sess_t[c] = 0
        fi;
        zk_reply[c] ! rc, v1, v2, v3, v4;
        op = 0; c = 0; a1 = 0; a2 = 0; a3 = 0; a4 = 0; a5 = 0; rc = 0;
        v1 = 0; v2 = 0; v3 = 0; v4 = 0; i = 0; j = 0; yes = false
       }
    od
}

/* --- the client's side ----------------------------------------------------------------- */

/* A request on the client's session (a new one if the old expired), its reply in rc and
 * r1 .. r4 (_ for a value not wanted). */
inline zk_call(op, a1, a2, a3, a4, a5, r1, r2, r3, r4) {
    if
    :: !sess_open[me] ->
        sess_open[me] = true; sess_t[me] = SESSION;
        printf("EV %c: its session has expired: opens a new one\n", NAME(me))
    :: else
    fi;
    to_zk ! op, me, a1, a2, a3, a4, a5;
    zk_reply[me] ? rc, r1, r2, r3, r4
}

/* The client leaves: zookeeper_close(). */
inline close_session(me) {
    if
    :: sess_open[me] -> zk_call(ZK_CLOSE, 0, 0, 0, 0, 0, _, _, _, _)
    :: else
    fi;
    rc = 0
}

/* The sale's store steps on ZooKeeper: the stock read with its version (and sold with
 * its), ... */
inline sale_read(me) {
    zk_call(ZK_GET, 0, 0, 0, 0, 0, stock_read, stock_ver, sold_read, sold_ver);
    printf("EV %c: read stock %d (version %d)\n", NAME(me), stock_read, stock_ver)
}

/* ... and the write as one multi: the check of its lock node and the sets by the versions
 * read. A check that fails (the node went with the session) is 409 lease_lost: nothing
 * written; a version that moved, a read again and another multi (or sold out). */
inline sale_write(me) {
    if
    :: k > 0 ->
        do
        :: zk_call(ZK_MULTI, CHECK_OF(my_node[me]), stock_read - 1, VERSION_OF(stock_ver),
                   sold_read + 1, VERSION_OF(sold_ver), _, _, _, _);
            if
            :: rc == ZBADVERSION ->
                sale_read(me);
                if
                :: stock_read == 0 -> printf("EV %c: sold out\n", NAME(me)); break
                :: else
                fi
            :: else -> break
            fi
        od
    :: stock_read == 0 -> printf("EV %c: sold out\n", NAME(me))
    :: else
    fi;
    rc = 0; stock_ver = 0; sold_read = 0; sold_ver = 0
}
