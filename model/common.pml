/* common.pml - What every model shares, before a version's steps: the bounds and the
 * faults' knobs, Redis (one process running each command or script whole), the abstract
 * clock, and the steps versions share (lock/steps.c) with acquire and release around
 * them (lock/lock.c, lock/wait.c). system.pml, included after the version's steps, has
 * the clients, the watchdog, Redlock's faults and the properties.
 *
 * A version's model (model/vN_*.pml) includes this file, then defines its steps, as
 * lock/vN_*.c does:
 *   try_acquire(me, ok)   one try; sets ok, grant_depth[me] and, fenced, token[me]
 *   release(me, ok)       gives back one hold; ok: it was ours
 *   renew(me, st)         with KEEPALIVE: one renewal; st RENEW_OK, RENEW_NOT_OWNER or
 *                         RENEW_ERROR
 * then includes system.pml. The Lua scripts (lock/scripts/, service/store/scripts/) are
 * branches of the Redis process here, each named after its file.
 *
 * A model that defines ZOOKEEPER (v11) keeps its lock and its stock on ZooKeeper
 * instead: model/zookeeper.pml (included here in Redis's place) has the server, its
 * sessions and the store's steps, and the version defines acquire itself (ZooKeeper's
 * recipe waits on a watch, not by polling).
 *
 * Time: an abstract clock of ticks. A client's steps (a command, a script, a decision)
 * take no time; the clock ticks only when nothing else can move (Promela's timeout), so a
 * client is slow only where a fault makes it so. Leases, sleeps, pauses and the
 * watchdog's period are counters each tick decrements.
 *
 * Bounds (every model): STOCK 2, a lease (TTL) of 3 ticks, work 1 tick, a refused client
 * retries every tick (for ever: the wait limit is not modelled, but for the nested
 * acquire's); two clients, A and B (three, A B C, under release-gap), one sale each.
 * Client A is the one the fault hits.
 *
 * Faults (-DFAULT_...; one at a time):
 *   CRASH         A dies holding the lock, after reading the stock (its watchdog too);
 *                 the others come for the lock after that
 *   LONG_WORK     A works TTL + 1 ticks
 *   PAUSE         the whole of A (its watchdog too) stops TTL + 1 ticks during its work
 *   SHORT_PAUSE   the same for TTL - 1 ticks: shorter than the lease
 *   LATE_PAUSE    A stops TTL + 1 ticks after its lease check, before its write is sent
 *   RELEASE_GAP   A's release waits TTL ticks where lock_release_gap() sleeps
 *   NESTED        A's sale takes the same lock again (service/faults/faults.c's nested helper,
 *                 waiting at most TTL - 1 ticks) and gives it back
 *   MASTER_DOWN   Redlock: one master of three (any) goes down for good (at any tick of
 *                 the first lease)
 *   RESTART       Redlock: master 3 is down when the run begins; at any tick of the first
 *                 lease master 1 restarts empty and master 3 comes back
 * and, on ZooKeeper, code changes a fault may come with (model/check's "pause+no-check"):
 *   NO_CHECK      the sale's multi without its check of the lock node
 *   UNGUARDED     ... and its sets with version -1 (any): the write unguarded
 *
 * Properties (ltl, selected with pan -N): mutex, no_stale_write, no_oversell,
 * no_foreign_delete, progress, reentrant, nested_refused; see the end of system.pml.
 *
 * Every meaningful event is printed as "EV <text>" (model/check turns a trail into the
 * readable sequence); pan does not print, spin -t replays them.
 */

/* --- bounds ------------------------------------------------------------------------- */

#ifndef NSERVERS
#define NSERVERS 1          /* lock servers: one Redis, or Redlock's masters */
#endif
#define QUORUM (NSERVERS / 2 + 1)
#ifndef KEEPALIVE
#define KEEPALIVE 0         /* a watchdog renews held leases (v8 on) */
#endif
#ifndef FENCED
#define FENCED 0            /* grants carry a token, the write is fenced (v9 on) */
#endif
#ifndef ZOOKEEPER
#define ZOOKEEPER 0         /* the lock and the stock on ZooKeeper (v11) */
#endif

#define STOCK       2
#define TTL         3       /* the lease, in ticks */
#define PERIOD      (TTL / 3)   /* the watchdog renews every ttl/3 */
#define WORK        1
#define POLL        1       /* a refused try sleeps this long (wait.c's retry_ms) */
#define NO_TTL      255     /* PTTL -1: a key that never expires (v3) */
#define FOREVER     255     /* a wait without limit */

#define A 0                 /* the client the fault hits */
#ifdef FAULT_RELEASE_GAP
#define NCLIENTS 3
#else
#define NCLIENTS 2
#endif

/* What the fault does to a client c: 0 where it does nothing. */
#ifdef FAULT_CRASH
#define CRASHES(c)      (c == A)
#define COMES_AFTER_CRASH(c) (c != A)
#else
#define CRASHES(c)      0
#define COMES_AFTER_CRASH(c) 0
#endif
#ifdef FAULT_LONG_WORK
#define WORK_OF(c)      (c == A -> TTL + 1 : WORK)
#else
#define WORK_OF(c)      WORK
#endif
#if defined(FAULT_PAUSE)
#define PAUSE_IN_WORK(c) (c == A -> TTL + 1 : 0)
#elif defined(FAULT_SHORT_PAUSE)
#define PAUSE_IN_WORK(c) (c == A -> TTL - 1 : 0)
#else
#define PAUSE_IN_WORK(c) 0
#endif
#ifdef FAULT_LATE_PAUSE
#define PAUSE_AFTER_CHECK(c) (c == A -> TTL + 1 : 0)
#else
#define PAUSE_AFTER_CHECK(c) 0
#endif
#ifdef FAULT_RELEASE_GAP
#define GAP_OF(c)       (c == A -> TTL : 0)
#else
#define GAP_OF(c)       0
#endif
#ifdef FAULT_NESTED
#define NESTS(c)        (c == A)
#else
#define NESTS(c)        0
#endif
#define NESTED_WAIT     (TTL - 1)

#define NAME(c)   ('A' + (c))     /* a client's letter */
#define OWNER(o)  ('@' + (o))     /* the letter of owner id o (client + 1) */

/* --- Redis: the lock servers' keys and the data Redis's ------------------------------- */

byte lk_owner[NSERVERS];    /* lock:{I}: 0 when there is no key, else the owner (client + 1) */
byte lk_count[NSERVERS];    /* the hash's hold count (v7 on) */
byte lk_token[NSERVERS];    /* the hash's :token field (v9) */
byte lk_ttl[NSERVERS];      /* ticks the key has left, or NO_TTL */
bool up[NSERVERS];          /* the server answers (Redlock's faults take masters down) */

byte stock = STOCK;         /* stock:{I} */
byte sold;                  /* sold:{I} */
byte fence;                 /* fence:{I}: the last token issued */
byte w_token, w_batch;      /* written:{I}: the last writer's token and batch */

mtype = { SETNX, SET_NX_PX, GET, DEL, V6_RELEASE, V7_ACQUIRE, V7_RELEASE, V8_RENEW,
          V9_ACQUIRE, GET_STOCK, SALE_WRITE, SALE_WRITE_FENCED, INCR_FENCE };

/* Requests: command, connection (reply channel), owner (client + 1), server, two args.
 * A client's connection is its number; its watchdog's is NCLIENTS + its number. */
chan to_redis = [0] of { mtype, byte, byte, byte, byte, byte };
/* Replies: answered (false: the server is down), the value, a token. */
chan reply[2 * NCLIENTS] = [0] of { bool, short, byte };

/* --- what the properties look at (ghost state: no client or server reads it) -------- */

byte in_cs;                 /* clients between "acquire ok" and sending their write */
bool stale;                 /* a write was applied for a client not holding the lock */
bool foreign_del;           /* a release deleted another client's lock */
bool crashed;               /* the dead holder has died */
bool progressed;            /* a client was granted the lock after that */
bool nested_done;           /* the nested acquire returned */
bool nested_ok;             /* ... and it was granted */

/* --- client-side state --------------------------------------------------------------- */

byte sleep_t[NCLIENTS];           /* a client's sleep (work, poll, gap), ticks left */
byte pause_t[NCLIENTS];     /* the whole client is stopped (SIGSTOP), ticks left */
byte grant_depth[NCLIENTS];       /* the grant's hold count */
byte token[NCLIENTS];       /* the grant's fencing token (0: none) */
bool finished[NCLIENTS];    /* the client has finished, or died */
byte nfinished;             /* how many have */
#if KEEPALIVE
byte held[NCLIENTS];        /* keepalive.c's lease: grants not yet released */
bool lost[NCLIENTS];        /* a renewal was refused: the lock is not ours any more */
byte valid[NCLIENTS];       /* ticks until the lease runs out by the client's clock */
byte wd_t[NCLIENTS];        /* ticks until the watchdog's next round */
#endif
byte fault_t;               /* ticks until the Redlock fault happens */

/* --- Redis: one process; each command or script runs atomically ----------------------- */

/* The key disappears: expiry, DEL, or a restart that forgot it. */
inline forget(s) {
    lk_owner[s] = 0; lk_count[s] = 0; lk_token[s] = 0; lk_ttl[s] = 0
}

/* The writer holds the lock on a quorum of lock servers (one of one, for a single Redis). */
inline count_held(who, n) {
    n = 0;
    for (k : 0 .. NSERVERS - 1) {
        if
        :: up[k] && lk_owner[k] == who -> n++
        :: else
        fi
    }
}

/* The data Redis (stock, sold, fence, written): never down in these models. */
inline data_command() {
    if
    :: cmd == GET_STOCK ->
        val = stock
    :: cmd == INCR_FENCE ->
        fence++; val = fence
    :: cmd == SALE_WRITE ->                     /* service/store/scripts/sale_write.lua */
        count_held(who, n);
        stale = stale || n < QUORUM;
        stock = a1 - 1; sold++; val = 1;
        printf("EV %c: write stock %d\n", OWNER(who), stock)
    :: cmd == SALE_WRITE_FENCED ->              /* service/store/scripts/sale_write_fenced.lua */
        /* a1: the stock read, a2: the token; one batch per grant: batch 1. Refused when
         * older than the last token issued (fence) or not past the last writer's. */
        if
        :: a2 < fence || a2 < w_token || (a2 == w_token && 1 <= w_batch) ->
            val = -1;                           /* error lease_lost, nothing written */
            printf("EV %c: write refused (lease_lost: token %d, last issued %d, last written %d)\n",
                   OWNER(who), a2, fence, w_token)
        :: else ->
            count_held(who, n);
            stale = stale || n < QUORUM;
            w_token = a2; w_batch = 1;
            stock = a1 - 1; sold++; val = 1;
            printf("EV %c: write stock %d (token %d)\n", OWNER(who), stock, a2)
        fi
    fi
}

/* Lock server s, which is up. */
inline lock_command() {
    if
    :: cmd == SETNX ->                          /* v3 */
        if
        :: lk_owner[s] == 0 -> lk_owner[s] = who; lk_ttl[s] = NO_TTL; val = 1
        :: else -> val = 0
        fi
    :: cmd == SET_NX_PX ->                      /* v4, v5, v6 */
        if
        :: lk_owner[s] == 0 -> lk_owner[s] = who; lk_ttl[s] = TTL; val = 1
        :: else -> val = 0
        fi
    :: cmd == GET ->
        val = lk_owner[s]
    :: cmd == DEL ->
        if
        :: lk_owner[s] != 0 ->
            if
            :: lk_owner[s] != who ->
                foreign_del = true;
                printf("EV %c: DEL deletes %c's lock\n", OWNER(who), OWNER(lk_owner[s]))
            :: else
            fi;
            forget(s); val = 1
        :: else -> val = 0
        fi
    :: cmd == V6_RELEASE ->                     /* lock/scripts/v6_release.lua */
        if
        :: lk_owner[s] == who -> forget(s); val = 1
        :: else -> val = 0
        fi
    :: cmd == V7_ACQUIRE ->                     /* lock/scripts/v7_acquire.lua */
        if
        :: lk_owner[s] == 0 || lk_owner[s] == who ->
            lk_owner[s] = who; lk_count[s]++; lk_ttl[s] = TTL; val = lk_count[s]
        :: else -> val = -lk_ttl[s]             /* minus the lease left */
        fi
    :: cmd == V9_ACQUIRE ->                     /* lock/scripts/v9_acquire.lua */
        if
        :: lk_owner[s] == 0 ->
            fence++;
            lk_owner[s] = who; lk_count[s] = 1; lk_token[s] = fence; lk_ttl[s] = TTL;
            val = 1; tok = fence
        :: lk_owner[s] == who ->
            lk_count[s]++; lk_ttl[s] = TTL; val = lk_count[s]; tok = lk_token[s]
        :: else -> val = -lk_ttl[s]
        fi
    :: cmd == V7_RELEASE ->                     /* lock/scripts/v7_release.lua */
        if
        :: lk_owner[s] != who -> val = -1
        :: else ->
            lk_count[s]--;
            if
            :: lk_count[s] == 0 -> forget(s); val = 0
            :: else -> val = lk_count[s]
            fi
        fi
    :: cmd == V8_RENEW ->                       /* lock/scripts/v8_renew.lua */
        if
        :: lk_owner[s] == who -> lk_ttl[s] = TTL; val = 1
        :: else -> val = 0
        fi
    fi
}

#if !ZOOKEEPER
/* Redis: takes one request at a time and runs it whole, as Redis runs a command or a
 * script; answers on the requester's channel. */
active proctype Redis() {
    mtype cmd;
    byte conn, who, s, a1, a2, n, k;
    short val;
    byte tok;
    bool ans;

end:
    do
    :: atomic {
        to_redis ? cmd, conn, who, s, a1, a2;
        ans = true; val = 0; tok = 0;
        if
        :: cmd == GET_STOCK || cmd == INCR_FENCE || cmd == SALE_WRITE ||
           cmd == SALE_WRITE_FENCED ->
            data_command()
        :: else ->
            if
            :: up[s] -> lock_command()
            :: else -> ans = false              /* down: no answer within the timeout */
            fi
        fi;
        reply[conn] ! ans, val, tok;
        cmd = 0; conn = 0; who = 0; s = 0; a1 = 0; a2 = 0; n = 0; k = 0; val = 0; tok = 0;
        ans = false
       }
    od
}

/* A command or script on server s, on the caller's connection (conn), as owner me + 1;
 * its reply in ans, r, tok. */
inline redis_call(cmd, s, a1, a2) {
    to_redis ! cmd, conn, me + 1, s, a1, a2;
    reply[conn] ? ans, r, tok
}

/* The sale's store steps on Redis (service/store/redis_sell.c): the stock's read, and the
 * write (fenced for a grant with a token), or nothing when sold out. */
inline sale_read(me) {
    redis_call(GET_STOCK, 0, 0, 0);
    stock_read = r;
    printf("EV %c: read stock %d\n", NAME(me), stock_read)
}

inline sale_write(me) {
    if
    :: k > 0 && token[me] > 0 -> redis_call(SALE_WRITE_FENCED, 0, stock_read, token[me])
    :: k > 0 && token[me] == 0 -> redis_call(SALE_WRITE, 0, stock_read, 0)
    :: stock_read == 0 -> printf("EV %c: sold out\n", NAME(me))
    :: else
    fi
}
#else
#include "zookeeper.pml"
#endif

/* --- the clock ---------------------------------------------------------------------- */

inline count_down(x) {
    if
    :: x > 0 -> x--
    :: else
    fi
}

/* One tick: leases run out (Redis deletes the key), on ZooKeeper sessions hear their
 * heartbeats or expire, sleeps and pauses go on. The clock stops once every client has
 * finished. */
active proctype Clock() {
    byte i;
#if ZOOKEEPER
    byte j;
#endif

end:
    do
    :: timeout && nfinished < NCLIENTS ->
        d_step {
            printf("EV tick\n");
            for (i : 0 .. NSERVERS - 1) {
                if
                :: lk_owner[i] != 0 && lk_ttl[i] != NO_TTL ->
                    lk_ttl[i]--;
                    if
                    :: lk_ttl[i] == 0 ->
#if NSERVERS > 1
                        printf("EV master %d: %c's lease expires\n", i + 1, OWNER(lk_owner[i]));
#else
                        printf("EV %c's lease expires\n", OWNER(lk_owner[i]));
#endif
                        forget(i)
                    :: else
                    fi
                :: else
                fi
            }
#if ZOOKEEPER
            session_ticks(i, j);
#endif
            for (i : 0 .. NCLIENTS - 1) {
                count_down(sleep_t[i]);
                count_down(pause_t[i]);
#if KEEPALIVE
                count_down(valid[i]);
                count_down(wd_t[i]);
#endif
            }
            count_down(fault_t);
            i = 0
        }
    od
}

/* --- the steps versions share: lock/steps.c ---------------------------------------- */

/* A client's sleep: n ticks (a whole-client pause stops it from waking, too). */
inline sleep(me, n) {
    sleep_t[me] = n;
    (sleep_t[me] == 0 && pause_t[me] == 0)
}

/* The whole client stops for n ticks: every thread, the watchdog too (SIGSTOP, GC). */
inline pause(me, n) {
#if ZOOKEEPER
    printf("EV %c: paused %d ticks, its session's heartbeats too\n", NAME(me), n);
#else
    printf("EV %c: paused %d ticks, its watchdog too\n", NAME(me), n);
#endif
    pause_t[me] = n;
    pause_t[me] == 0;
    printf("EV %c: resumes\n", NAME(me))
}

/* lock_release_gap(): the teaching gap inside a release. */
inline release_gap(me) {
    if
    :: GAP_OF(me) > 0 ->
        printf("EV %c: release gap, %d ticks\n", NAME(me), GAP_OF(me));
        sleep(me, GAP_OF(me))
    :: else
    fi
}

/* v3, v4: DEL, whoever holds it. */
inline del_release(me, ok) {
    release_gap(me);
    redis_call(DEL, 0, 0, 0);
    ok = (r == 1)
}

/* v4, v5, v6: SET key owner NX PX ttl. */
inline set_nx_px_try_acquire(me, ok) {
    redis_call(SET_NX_PX, 0, 0, 0);
    ok = (r == 1);
    grant_depth[me] = 1
}

/* v7, v8: lock/scripts/v7_acquire.lua; nested grants count up. */
inline hash_try_acquire(me, ok) {
    redis_call(V7_ACQUIRE, 0, 0, 0);
    ok = (r > 0);
    if
    :: ok -> grant_depth[me] = r
    :: else
    fi
}

/* v7, v8, v9: lock/scripts/v7_release.lua; never deletes a lock that is not ours. */
inline hash_release(me, ok) {
    release_gap(me);
    redis_call(V7_RELEASE, 0, 0, 0);
    ok = (r >= 0)
}

#define RENEW_OK        1
#define RENEW_NOT_OWNER 2
#define RENEW_ERROR     3

/* v8, v9: lock/scripts/v8_renew.lua, while the hash still holds our owner id. */
inline hash_renew(me, st) {
    redis_call(V8_RENEW, 0, 0, 0);
    st = (r == 1 -> RENEW_OK : RENEW_NOT_OWNER)
}

/* --- acquire and release around the version's steps: lock/lock.c, lock/wait.c ------- */

#if !ZOOKEEPER
/* Tries until granted, sleeping POLL ticks after a refusal; gives up after limit
 * refusals (FOREVER: never). With a watchdog, a grant is registered with it. */
inline acquire(me, limit, ok, nested) {
    waited = 0;
    do
    :: try_acquire(me, ok);
        if
        :: ok ->
            if
            :: nested -> printf("EV %c: nested acquire ok (holds %d)\n", NAME(me), grant_depth[me])
            :: !nested && FENCED -> printf("EV %c: acquire ok, token %d\n", NAME(me), token[me])
            :: else -> printf("EV %c: acquire ok\n", NAME(me))
            fi;
            break
        :: !ok && waited == limit ->
            printf("EV %c: nested acquire gives up (lock_timeout)\n", NAME(me));
            break
        :: else ->
            if
            :: nested -> printf("EV %c: nested acquire refused\n", NAME(me))
            :: else -> printf("EV %c: acquire refused\n", NAME(me))
            fi;
            sleep(me, POLL);
            waited = (limit == FOREVER -> 0 : waited + 1)
        fi
    od;
    waited = 0;
#if KEEPALIVE
    if
    :: ok ->
        if
        :: held[me] == 0 -> wd_t[me] = PERIOD   /* its first round, a period on */
        :: else
        fi;
        held[me]++; lost[me] = false; valid[me] = TTL
    :: else
    fi
#endif
}
#endif

inline give_back(me, ok) {
    release(me, ok);
#if KEEPALIVE
    held[me]--;
#endif
    if
    :: ok -> printf("EV %c: release ok\n", NAME(me))
    :: else -> printf("EV %c: release finds the lock not ours\n", NAME(me))
    fi
}

/* lock_grant_is_lost(): with a watchdog, a refused renewal or a lease run out. */
inline is_lost(me, lost_now) {
#if KEEPALIVE
    lost_now = lost[me] || valid[me] == 0
#else
    lost_now = false
#endif
}
