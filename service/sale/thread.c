/* thread.c - The thread-per-connection engine: a locked sale served on its connection's
 * own thread, so that each version's code stays a plain sequence of calls and a wait for
 * the lock blocks that thread alone (libmicrohttpd's thread per connection, bounded by
 * --max-conns). */
#include "service/sale/engine.h"

#include "service/config/config.h"
#include "service/sale/sale.h"

static int thread_start(void)
{
    return 0;
}

static void thread_stop(void)
{
}

static void thread_run(struct sale_request *rq)
{
    sale_serve(rq, svc.wait_ms, NULL);
}

const struct engine engine_thread = {
    .name = "thread",
    .locked = 1,
    .event_loop = 0,
    .start = thread_start,
    .stop = thread_stop,
    .run = thread_run,
};
