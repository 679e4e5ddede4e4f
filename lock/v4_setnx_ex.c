/* v4_setnx_ex.c - v4: SET NX PX (lock and TTL in one command), DEL to release. Deletes others' locks. */
#include "lock/internal.h"

/* The fix is the acquire: lock_set_nx_px_try_acquire (lock/steps.c) sets the lock and its
 * lease in one command. Release is still v3's DEL: after our TTL ran out, the key may be
 * another's. */
const struct lock_ops lock_v4 = {
    .name = "v4",
    .alias = "setnx-ex",
    .title = "SET lock id NX PX ttl; DEL",
    .flaw = "work outlasts the TTL: a second holder enters and the first deletes its lock",
    .remote = 1,
    .try_acquire = lock_set_nx_px_try_acquire,
    .release = lock_del_release,
    .wait = LOCK_WAIT_POLL,
};
