/* replicas.c - A sale's write confirmed by the replicas (--replicas N): WAIT N goes right
 * after the write, on the same connection and in the same round trip (Redis 7 refuses
 * WAIT inside a script), and a sale whose write fewer than N replicas acknowledged
 * answers outcome_unknown: it is on the master, and a failover to a replica that lacks it
 * would undo it. Without --replicas nothing is added and nothing is checked. */
#include "service/service.h"

#include <stdatomic.h>
#include <stdio.h>

int sale_replicas_add(struct rd_batch *b)
{
    struct lock_error err = { 0 };
    int at = b->n;

    if (svc.replicas == 0)
        return -1;
    /* Not added (out of memory, batch full): no reply will confirm the write, and its
     * sales answer outcome_unknown. */
    rd_batch_add(b, &err, "WAIT %d %ld", svc.replicas, lock_replicas_wait_ms(svc_lock));
    return at;
}

/* One WARN line a second at most, whatever the number of sales (the metric counts
 * them): nothing at info level on the request path. r: the WAIT's reply, or NULL. */
static void warn_unreplicated(int n, const struct rd_reply *r)
{
    static atomic_llong last_ms;
    long long now = lock_now_ms(), was = atomic_load(&last_ms);
    char acked[32] = "none (no answer to WAIT)";

    if ((was != 0 && now - was < 1000) || !atomic_compare_exchange_strong(&last_ms, &was, now))
        return;
    if (r && r->type == RD_INTEGER)
        snprintf(acked, sizeof(acked), "%lld", r->integer);
    log_event("WARN", "%d sale(s) written but acknowledged by %s of %d replicas within %ld ms: "
              "answered outcome_unknown (counted in inventory_sale_unreplicated_total; this "
              "line once a second at most)", n, acked, svc.replicas,
              lock_replicas_wait_ms(svc_lock));
}

int sale_replicas_check(const struct rd_batch *b, int at, struct sale_request **rqs, int n)
{
    const struct rd_reply *r = at >= 0 && at < b->n ? b->reply[at] : NULL;
    int turned = 0;

    if (at < 0 || (r && r->type == RD_INTEGER && r->integer >= svc.replicas))
        return 0;
    for (int i = 0; i < n; i++) {
        if (rqs[i]->out.result != SALE_OK)
            continue;   /* sold out, lease lost, refused: nothing of theirs to confirm */
        rqs[i]->out.result = SALE_OUTCOME_UNKNOWN;
        rqs[i]->out.unreplicated = 1;
        rqs[i]->out.replayed = 0;   /* a replayed first answer is not given unconfirmed */
        turned++;
    }
    if (turned > 0) {
        metrics_unreplicated(turned);
        warn_unreplicated(turned, r);
    }
    return turned;
}
