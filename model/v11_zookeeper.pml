/* v11_zookeeper.pml - v11: the lock and the stock on ZooKeeper. The lock is ZooKeeper's
 * recipe (an ephemeral sequential node each, the lowest holds, a waiter watches the node
 * just before its own); the sale reads the stock with its version and writes it with one
 * multi that checks the lock node and sets by version. A paused holder's session expires
 * and the next holds beside it, but its multi writes nothing.
 *
 * Bounds: two clients (A, B), one ZooKeeper (model/zookeeper.pml), stock 2, a session of
 * 3 ticks (heartbeats every tick a client runs), work 1 tick. Faults: pause (A, every
 * thread of it, stops 4 ticks during its work: its session expires), short-pause (2
 * ticks: shorter than the session), long-work (4 ticks, its heartbeats going on), crash
 * (A dies holding the lock; its session expires). The counter-checks take the multi's
 * guards away, with pause: no-check (the multi without its check of the lock node: the
 * versions alone) and unguarded (no check, and the sets with version -1). The holder
 * does not look at its session before it writes: the multi is the guard (a look before
 * it would leave the gap v9's late pause shows).
 */

#define ZOOKEEPER 1

#include "common.pml"

/* The recipe: create the node (ephemeral, sequential) once; then until it is the lowest,
 * read the children and watch the node just before its own, waiting for the watch to
 * fire (a node gone already: read them again). No limit (nor nested acquire): the sale
 * waits as long as it takes. */
inline acquire(me, limit, ok, nested) {
    zk_call(ZK_CREATE, 0, 0, 0, 0, 0, my_node[me], _, _, _);
    printf("EV %c: creates lock node %d\n", NAME(me), my_node[me]);
    do
    :: zk_call(ZK_CHILDREN, my_node[me], 0, 0, 0, 0, pred, pred_by, _, _);
        if
        :: pred == 0 ->
            printf("EV %c: acquire ok (node %d, the lowest)\n", NAME(me), my_node[me]);
            break
        :: else ->
            zk_call(ZK_EXISTS_WATCH, pred, 0, 0, 0, 0, _, _, _, _);
            if
            :: rc == ZOK ->
                printf("EV %c: node %d (%c's) comes first: watches it\n", NAME(me), pred,
                       NAME(pred_by - 1));
                (watch_on[me] == 0 && pause_t[me] == 0)
            :: else
            fi
        fi
    od;
    ok = true; grant_depth[me] = 1;
    pred = 0; pred_by = 0; rc = 0
}

/* Deletes its node; ok: it was there (not gone with an expired session). */
inline release(me, ok) {
    zk_call(ZK_DELETE, my_node[me], 0, 0, 0, 0, _, _, _, _);
    ok = (rc == ZOK);
    my_node[me] = 0; rc = 0
}

#include "system.pml"
