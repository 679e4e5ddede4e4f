/* system.pml - The system around a version's steps: clients making sales
 * (service/sale/sale.c), their watchdogs (lock/keepalive.c), Redlock's faults, the start, and
 * the properties. A version's model includes common.pml, defines its steps, then
 * includes this file (a Promela process can only call steps defined before it).
 */

/* --- the sale: service/sale/sale.c's sell_batch, one sale per client ---------------------- */

/* Acquire (waiting as long as it takes), read the stock, [the nested helper], work, the
 * lease check, write stock - 1 (or nothing when sold out), release; on ZooKeeper, close
 * the session. The read and the write are the store's (sale_read, sale_write). Under
 * crash the survivors come after the holder has died, as the crash scenario's later
 * sales do. */
proctype Client(byte me) {
    byte conn = me;
    byte stock_read, waited, k;
    bool ok, lost_now, ans;
    short r;
    byte tok;
#if NSERVERS > 1
    byte m, granted, answered, most;
#endif
#if ZOOKEEPER
    byte rc, pred, pred_by, stock_ver, sold_read, sold_ver;
#endif

    if
    :: COMES_AFTER_CRASH(me) -> crashed
    :: else
    fi;
    acquire(me, FOREVER, ok, false);
    in_cs++;
    progressed = crashed;
    /* The stock read rides with the acquire. */
    sale_read(me);
    k = (stock_read > 0 -> 1 : 0);
    if
    :: NESTS(me) ->                             /* nested_helper() */
        acquire(me, NESTED_WAIT, ok, true);
        nested_ok = ok;
        nested_done = true;
        if
        :: ok -> give_back(me, ok)
        :: else -> k = 0                        /* the batch fails: nothing written */
        fi
    :: else
    fi;
    if
    :: CRASHES(me) ->
        printf("EV %c: dies holding the lock\n", NAME(me));
        in_cs--;
        crashed = true;
        goto gone
    :: else
    fi;
    if
    :: PAUSE_IN_WORK(me) > 0 -> pause(me, PAUSE_IN_WORK(me))
    :: else
    fi;
    if
    :: k > 0 ->
        printf("EV %c: works %d ticks\n", NAME(me), WORK_OF(me));
        sleep(me, WORK_OF(me))
    :: else
    fi;
    /* A fenced grant whose lease is known lost stops before writing. */
    is_lost(me, lost_now);
    if
    :: k > 0 && token[me] > 0 && lost_now ->
        printf("EV %c: lease lost, writes nothing\n", NAME(me));
        k = 0
    :: k > 0 && token[me] > 0 && !lost_now ->
        printf("EV %c: lease check ok\n", NAME(me))
    :: else
    fi;
    if
    :: PAUSE_AFTER_CHECK(me) > 0 -> pause(me, PAUSE_AFTER_CHECK(me))
    :: else
    fi;
    in_cs--;                                    /* decided: the write is on its way */
    sale_write(me);
    give_back(me, ok);
#if ZOOKEEPER
    close_session(me);
#endif
gone:
    finished[me] = true;
    nfinished++
}

/* --- the watchdog: lock/keepalive.c ------------------------------------------------- */

#if KEEPALIVE
/* Every PERIOD ticks while the client holds a lease not known lost, renews it (with
 * nothing held it issues no command, so the model lets it sleep). A pause of the whole
 * client stops it too; it dies with the client. */
proctype Watchdog(byte me) {
    byte conn = NCLIENTS + me;
    byte st;
    bool ans;
    short r;
    byte tok;
#if NSERVERS > 1
    byte m, renewed, answered;
#endif

    do
    :: finished[me] -> break
    :: !finished[me] && wd_t[me] == 0 && pause_t[me] == 0 && held[me] > 0 && !lost[me] ->
        renew(me, st);
        if
        :: st == RENEW_OK -> valid[me] = TTL
        :: st == RENEW_NOT_OWNER ->
            lost[me] = true;
            printf("EV %c's watchdog: renewal refused, lease lost\n", NAME(me))
        :: else ->                              /* no answer: good until its time runs out */
            lost[me] = (valid[me] == 0)
        fi;
        st = 0;
        wd_t[me] = PERIOD
    od
}
#endif

/* --- Redlock's faults ----------------------------------------------------------------- */

#if defined(FAULT_MASTER_DOWN) || defined(FAULT_RESTART)
active proctype Fault() {
    byte m;

    select (m : 0 .. TTL);
    fault_t = m;
    fault_t == 0;
#ifdef FAULT_MASTER_DOWN
    atomic {
        select (m : 0 .. NSERVERS - 1);
        up[m] = false;
        printf("EV master %d goes down\n", m + 1)
    }
#else
    atomic {
        forget(0);
        up[NSERVERS - 1] = true;
        printf("EV master 1 restarts empty; master %d is back\n", NSERVERS)
    }
#endif
}
#endif

init {
    byte c;

    atomic {
        for (c : 0 .. NSERVERS - 1) {
            up[c] = true
        }
#ifdef FAULT_RESTART
        up[NSERVERS - 1] = false;
        printf("EV master %d is down\n", NSERVERS);
#endif
        for (c : 0 .. NCLIENTS - 1) {
            run Client(c);
#if KEEPALIVE
            run Watchdog(c);
#endif
        }
        c = 0
    }
}

/* --- the properties ------------------------------------------------------------------- */

/* Mutual exclusion: never two clients inside the critical section (from "acquire ok"
 * until their write is sent, as the sale's probe counts (service/faults/faults.c)). */
ltl mutex { [] (in_cs <= 1) }
/* No stale write: a write by a client whose lease ended (the lock, on a quorum of its
 * servers, is not its own; on ZooKeeper, its node is gone or not the lowest) is never
 * applied: the fencing property. */
ltl no_stale_write { [] !stale }
/* No oversell: sold + stock stays the stock we started from (on ZooKeeper, sold counts
 * the ledger's entries: the sales acknowledged). */
ltl no_oversell { [] (sold + stock == STOCK) }
/* A release never deletes a lock another client holds. */
ltl no_foreign_delete { [] !foreign_del }
/* No deadlock: once the holder has died, a surviving client is eventually granted the
 * lock (a liveness check: pan -a). */
ltl progress { [] (crashed -> <> progressed) }
/* Reentrancy: a nested acquire by the holder succeeds ... */
ltl reentrant { [] (nested_done -> nested_ok) }
/* ... and its opposite, to show that under v6 it never does. */
ltl nested_refused { [] !nested_ok }
