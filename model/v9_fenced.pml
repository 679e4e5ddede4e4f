/* v9_fenced.pml - v9 (lock/v9_fenced.c): v8 plus a fencing token per grant, checked where
 * the stock is written. A paused holder cannot write.
 *
 * Bounds: two clients (A, B) and their watchdogs, stock 2, one Redis, a lease of 3 ticks
 * renewed every tick; tokens from 1. Faults: pause (A and its watchdog stop 4 ticks during
 * its work, before its lease check), late-pause (the same stop after its lease check,
 * before its write reaches Redis). Under late-pause the write is compared with the last
 * token *issued* as well as the last written: once the next holder was granted (and may
 * have read the stock) it is refused, although that holder has not written yet. Only a
 * late write with no grant since still lands (no-stale-write breaks): nobody can have
 * written since its read, so nothing is oversold.
 */

#define KEEPALIVE 1
#define FENCED 1

#include "common.pml"

/* One try of lock/scripts/v9_acquire.lua: v7's hash, and a first grant also takes the
 * next token from fence:{I}; a nested grant gets the same one. The sale's write is
 * service/store/scripts/sale_write_fenced.lua (run by Redis in common.pml). */
inline try_acquire(me, ok) {
    redis_call(V9_ACQUIRE, 0, 0, 0);
    ok = (r > 0);
    if
    :: ok -> grant_depth[me] = r; token[me] = tok
    :: else
    fi
}

inline release(me, ok) {
    hash_release(me, ok)
}

inline renew(me, st) {
    hash_renew(me, st)
}

#include "system.pml"
