/* v8_watchdog.pml - v8 (lock/v8_watchdog.c): v7 plus a watchdog renewing held leases
 * every ttl/3. A whole-process pause stops it too.
 *
 * Bounds: two clients (A, B) and their watchdogs, stock 2, one Redis, a lease of 3 ticks
 * renewed every tick. Faults: long-work (4 ticks), pause (A and its watchdog stop 4
 * ticks during its work), short-pause (2 ticks: shorter than the lease), crash (A dies,
 * its watchdog with it).
 */

#define KEEPALIVE 1

#include "common.pml"

/* v7's store plus renew (hash_renew, lock/scripts/v8_renew.lua), and a watchdog to call
 * it (system.pml, as lock/keepalive.c). */
inline try_acquire(me, ok) {
    hash_try_acquire(me, ok)
}

inline release(me, ok) {
    hash_release(me, ok)
}

inline renew(me, st) {
    hash_renew(me, st)
}

#include "system.pml"
