/* database.pml - The database in Redis's place (v13, v14): one process applying each
 * round trip of statements whole, the lease row and the items row, and the statements
 * of the lease's steps and of the store's sale (service/store/db_sell.c). A version's
 * model defines its knobs, includes this file (which includes common.pml), defines its
 * steps from the ones here, then includes system.pml.
 *
 * Knobs, defined before this file: DATABASE 1; DB_CLOCK (1: the lease's times on the
 * database's clock, v14; 0: on the client's, v13); FENCED (the grant carries the row's
 * token, the sale's transaction first checks the row, v14).
 *
 * What lives in the database, for the one item I:
 *   leases (name, owner, lock_until, token)   row_owner (client + 1, 0: ''), the time
 *       lock_until has left (below), row_token (grants so far). The row is there from
 *       the start (acquire's INSERT IGNORE has made it).
 *   items (item, stock, sold)                 common.pml's stock and sold
 *
 * Time: lock_until is kept as the time it has left, lock_until - now in ticks (0 once it
 * has passed), where common.pml's clock counts a Redis key's lease down: lk_ttl[0], while
 * lk_owner[0] names whose live lease it is; at 0 the clock clears both and prints "X's
 * lease expires". The row's owner column stays when the time runs out, as a row's does:
 * the next taker overwrites it. A client whose clock runs J ticks ahead computes its now
 * as now + J: it takes the row where lock_until - now <= J and writes lock_until - now =
 * J + TTL. That is exact for clocks ahead (J >= 0), the one way they jump here.
 *
 * Row locks: the sale's transaction of v14 locks the row (SELECT ... FOR UPDATE) until
 * its commit or rollback; a statement on the row from another connection (a take, a
 * renewal, a release, another transaction's check; the client's own watchdog has a
 * connection of its own) waits until then, as InnoDB makes it wait (its
 * innodb_lock_wait_timeout, 50 s, is not modelled: longer than any pause here).
 *
 * Faults, beside common.pml's (-DFAULT_...):
 *   CLOCK_JUMP_FORWARD  A's clock jumps TTL ticks forward, once, at any of its reads of
 *                       it (its takes and renewals)
 *   CLOCK_JUMP_DB       the database's clock jumps TTL ticks forward, once, at any moment
 *                       while A's lease has time left: every lock_until on it has passed
 *   TXN_PAUSE           A stops TTL + 1 ticks inside its sale's transaction, after the
 *                       row's check and before its write: the row stays locked
 *   NO_CHECK            (with FENCED) the sale's transaction without its check of the row
 */

/* common.pml's Redis sale steps, renamed out of the way: the sale's steps here are the
 * database's. */
#define sale_read  redis_sale_read
#define sale_write redis_sale_write
#include "common.pml"
#undef sale_read
#undef sale_write

#define lease_left  lk_ttl[0]   /* lock_until - now, in ticks; 0: passed */
#define lease_live  lk_owner[0] /* whose lease has time left (client + 1), 0: nobody's */
#define JUMP        TTL         /* how far a clock jumps */

#if FENCED && !defined(FAULT_NO_CHECK)
#define TRX_CHECK 1             /* the sale's transaction checks the row first */
#else
#define TRX_CHECK 0
#endif

/* --- the database's state ------------------------------------------------------------ */

byte row_owner;             /* leases.owner: client + 1, 0: '' */
byte row_token;             /* leases.token */
byte trx_by;                /* the connection (+ 1) whose transaction locks the row, 0: none */
byte skew[NCLIENTS];        /* how far ahead a client's clock runs (ghost of the fault) */
bool rode[NCLIENTS];        /* the release rode in the sale's commit (lock_release_done) */

mtype = { DB_TAKE, DB_RENEW, DB_RELEASE, DB_READ, DB_WRITE, DB_TRX_CHECK, DB_TRX_WRITE,
          DB_ROLLBACK };

/* Requests: statement(s), connection, owner (client + 1), two args. Replies on common.pml's
 * reply channels (answered, the value, a token). */
chan to_db = [0] of { mtype, byte, byte, byte, byte };

/* --- the database: one process; each round trip runs whole -------------------------- */

/* The items' write: stock := the stock read - 1, sold := sold + 1, one order (ghost: it is
 * stale when the writer's lease is not the live one). */
inline items_write(who, read) {
    stale = stale || lease_live != who;
    stock = read - 1; sold++
}

active proctype Database() {
    mtype st;
    byte conn, who, a1, a2;
    short val;
    byte tok;

end:
    do
    :: atomic {
        to_db ? st, conn, who, a1, a2;
        val = 0; tok = 0;
        if
        :: st == DB_TAKE ->         /* UPDATE leases SET owner=?, lock_until=<now + ttl>,
                                     * token=token+1 WHERE name=? AND (owner='' OR
                                     * lock_until <= <now>); a1: the clock's lead */
            if
            :: row_owner == 0 || lease_left <= a1 ->
                row_owner = who; row_token++;
                lease_live = who; lease_left = TTL + a1;
                val = 1; tok = row_token
            :: else
            fi
        :: st == DB_RENEW ->        /* UPDATE leases SET lock_until=<now + ttl> WHERE name=?
                                     * AND owner=? (rows matched) */
            if
            :: row_owner == who -> lease_live = who; lease_left = TTL + a1; val = 1
            :: else
            fi
        :: st == DB_RELEASE ->      /* UPDATE leases SET owner='', lock_until=0 WHERE ... */
            if
            :: row_owner == who -> row_owner = 0; forget(0); val = 1
            :: else
            fi
        :: st == DB_READ ->         /* SELECT stock, sold FROM items (autocommit) */
            val = stock
        :: st == DB_WRITE ->        /* START TRANSACTION; UPDATE items SET stock=?, sold=sold+1;
                                     * INSERT INTO orders ...; COMMIT: no look at the row */
            items_write(who, a1);
            val = 1;
            printf("EV %c: write stock %d, commit\n", OWNER(who), stock)
        :: st == DB_TRX_CHECK ->    /* START TRANSACTION; SELECT owner FROM leases WHERE
                                     * name=? FOR UPDATE: the row locked until it ends */
            trx_by = conn + 1;
            val = row_owner;
            if
            :: row_owner == 0 ->
                printf("EV %c: transaction locks the row: it names nobody\n", OWNER(who))
            :: else ->
                printf("EV %c: transaction locks the row: it names %c\n", OWNER(who),
                       OWNER(row_owner))
            fi
        :: st == DB_TRX_WRITE ->    /* the same transaction: UPDATE items ...; INSERT INTO
                                     * orders ...; the release riding (UPDATE leases SET
                                     * owner='', lock_until=0 ...); COMMIT */
            items_write(who, a1);
            row_owner = 0; forget(0);
            rode[who - 1] = true;           /* the client's lock_release_done */
            trx_by = 0; val = 1;
            printf("EV %c: write stock %d (token %d), release, commit\n", OWNER(who), stock, a2)
        :: st == DB_ROLLBACK ->     /* the sale's 409 lease_lost */
            trx_by = 0;
            printf("EV %c: write refused (lease_lost), rollback\n", OWNER(who))
        fi;
        reply[conn] ! true, val, tok;
        st = 0; conn = 0; who = 0; a1 = 0; a2 = 0; val = 0; tok = 0
       }
    od
}

/* Statements in one round trip, on the caller's connection (conn), as owner me + 1; the
 * reply in ans, r, tok. */
inline db_call(st, a1, a2) {
    to_db ! st, conn, me + 1, a1, a2;
    reply[conn] ? ans, r, tok
}

/* The same for statements on the lease row: they wait while another connection's
 * transaction locks it (a client's wait said once, as it begins). */
inline row_call(st, a1, a2) {
    atomic {
        if
        :: trx_by != 0 && trx_by != conn + 1 && conn < NCLIENTS ->
            printf("EV %c: waits: %c's transaction locks the row\n", NAME(me), NAME(trx_by - 1))
        :: else
        fi;
        (trx_by == 0 || trx_by == conn + 1);
        to_db ! st, conn, me + 1, a1, a2
    };
    reply[conn] ? ans, r, tok
}

/* --- the clocks ---------------------------------------------------------------------- */

/* The lead of the clock the lease's times are read on: 0 on the database's (v14), the
 * client's lead on its own (v13). */
#define LEAD(c)         (DB_CLOCK -> 0 : skew[c])

/* Under clock-jump-forward, a read of A's clock (its takes and renewals): the clock may
 * jump here, once. */
inline read_clock(me) {
    if
    :: me == A && skew[me] == 0 ->
        if
        :: skew[me] = JUMP;
            printf("EV %c's clock jumps %d ticks forward\n", NAME(me), JUMP)
        :: true
        fi
    :: else
    fi
}

#ifdef FAULT_CLOCK_JUMP_DB
/* The database's clock jumps JUMP ticks forward, once, at any moment while A's lease has
 * time left: every lock_until on it (v14's) has passed. v13's times are the clients':
 * nothing changes. */
active proctype DbClockJump() {
end:
    atomic {
        lease_live == A + 1 ->
        printf("EV the database's clock jumps %d ticks forward\n", JUMP);
        if
        :: DB_CLOCK ->
            printf("EV %c's lease has passed\n", OWNER(lease_live));
            forget(0)
        :: else
        fi
    }
}
#endif

/* --- the lease's steps (lock/v13, lock/v14) ------------------------------------------ */

/* One try: take the row where it is free or its lock_until has passed; v14's grant carries
 * the row's token. */
inline lease_try_acquire(me, ok) {
#ifdef FAULT_CLOCK_JUMP_FORWARD
    read_clock(me);
#endif
    row_call(DB_TAKE, LEAD(me), 0);
    ok = (r == 1);
    if
    :: ok -> grant_depth[me] = 1; rode[me] = false; token[me] = (FENCED -> tok : 0)
    :: else
    fi
}

/* Gives the row back where it names us; a release that rode in the sale's commit is done. */
inline lease_release(me, ok) {
    if
    :: rode[me] -> ok = true
    :: else ->
        row_call(DB_RELEASE, 0, 0);
        ok = (r == 1)
    fi
}

/* The watchdog's renewal, while the row names us. */
inline lease_renew(me, st) {
#ifdef FAULT_CLOCK_JUMP_FORWARD
    read_clock(me);
#endif
    row_call(DB_RENEW, LEAD(me), 0);
    st = (r == 1 -> RENEW_OK : RENEW_NOT_OWNER)
}

/* --- the sale's store steps (service/store/db_sell.c) -------------------------------- */

/* The stock's read, autocommit on a pooled connection. */
inline sale_read(me) {
    db_call(DB_READ, 0, 0);
    stock_read = r;
    printf("EV %c: read stock %d\n", NAME(me), stock_read)
}

/* The write: one transaction, stock := the stock read - 1. With TRX_CHECK (v14) it first
 * locks the row and reads its owner: another (or none): rollback, 409 lease_lost, nothing
 * written; ours: the write, the release riding, commit. */
inline sale_write(me) {
    if
    :: k > 0 && TRX_CHECK ->
        row_call(DB_TRX_CHECK, 0, 0);
        if
        :: r != me + 1 -> db_call(DB_ROLLBACK, 0, 0)
        :: else ->
#ifdef FAULT_TXN_PAUSE
            if
            :: me == A -> pause(me, TTL + 1)
            :: else
            fi;
#endif
            db_call(DB_TRX_WRITE, stock_read, token[me])
        fi
    :: k > 0 && !TRX_CHECK ->
        db_call(DB_WRITE, stock_read, 0)
    :: stock_read == 0 -> printf("EV %c: sold out\n", NAME(me))
    :: else
    fi
}
