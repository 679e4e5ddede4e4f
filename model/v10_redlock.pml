/* v10_redlock.pml - v10 (lock/v10_redlock.c): Redlock: the lock held on a quorum of three
 * independent masters, with v9's fencing token. A master that restarts empty before the
 * lease ends can grant it twice.
 *
 * Bounds: two clients (A, B) and their watchdogs, three lock masters (quorum 2) and the
 * data Redis (stock 2, fence:{I}; never down), a lease of 3 ticks renewed every tick.
 * A master that is down answers nothing (the per-master timeout, taken as no time). A
 * try without a quorum of answers (503 lock_unavailable in C) is retried as a refusal; a
 * split vote is retried a tick later (C waits a random 1..retry_ms). Faults: master-down
 * (any one master, at any tick of the first lease, for good), restart (master 3 down at
 * first; at any tick of the first lease master 1 restarts empty and master 3 comes
 * back), crash. Under restart two hold at once, but nothing is oversold: the newer grant
 * takes its token (INCR fence:{I}) before it reads the stock, so the older token's write
 * either lands before that read or is refused as older than the last token issued.
 */

#define NSERVERS 3
#define KEEPALIVE 1
#define FENCED 1

#include "common.pml"

/* Gives back one hold on every master (lock/scripts/v7_release.lua on each); how many
 * gave it back. */
inline release_all(me, released) {
    released = 0;
    for (m : 0 .. NSERVERS - 1) {
        redis_call(V7_RELEASE, m, 0, 0);
        if
        :: ans && r >= 0 -> released++
        :: else
        fi
    }
    m = 0
}

/* One try: v7's acquire script on every master. Granted by a quorum (the validity left,
 * TTL - elapsed - drift, is the whole lease: no time passes within a try); a first grant
 * takes its token from fence:{I} on the data Redis. Otherwise what it got is given back. */
inline try_acquire(me, ok) {
    granted = 0; answered = 0; most = 0;
    for (m : 0 .. NSERVERS - 1) {
        redis_call(V7_ACQUIRE, m, 0, 0);
        if
        :: ans && r > 0 ->
            granted++; answered++;
            most = (r > most -> r : most);
            printf("EV %c: master %d grants\n", NAME(me), m + 1)
        :: ans && r <= 0 -> answered++
        :: else
        fi
    }
    m = 0;
    if
    :: granted >= QUORUM ->
        grant_depth[me] = most;
        if
        :: most == 1 -> redis_call(INCR_FENCE, 0, 0, 0); token[me] = r
        :: else
        fi;
        ok = true
    :: else ->
        if
        :: granted > 0 ->
            printf("EV %c: %d of %d masters, no quorum: gives them back\n", NAME(me),
                   granted, NSERVERS);
            release_all(me, granted)
        :: else
        fi;
        ok = false
    fi;
    granted = 0; answered = 0; most = 0
}

/* Gives back one hold on every master; ours when a quorum gave it back. */
inline release(me, ok) {
    release_gap(me);
    release_all(me, granted);
    ok = (granted >= QUORUM);
    granted = 0
}

/* Renewal by quorum: lock/scripts/v8_renew.lua on every master. */
inline renew(me, st) {
    renewed = 0; answered = 0;
    for (m : 0 .. NSERVERS - 1) {
        redis_call(V8_RENEW, m, 0, 0);
        if
        :: ans && r == 1 -> renewed++; answered++
        :: ans && r != 1 -> answered++
        :: else
        fi
    }
    if
    :: renewed >= QUORUM -> st = RENEW_OK
    :: renewed < QUORUM && answered >= QUORUM -> st = RENEW_NOT_OWNER
    :: else -> st = RENEW_ERROR
    fi;
    m = 0; renewed = 0; answered = 0
}

#include "system.pml"
