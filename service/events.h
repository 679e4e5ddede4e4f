/* events.h - The lock's and the sale's events, published per item for the live page
 * (events.c), and the /events streams that carry them to a browser (stream.c). */
#ifndef SERVICE_EVENTS_H
#define SERVICE_EVENTS_H

#include <microhttpd.h>

/* Starts the publisher thread; 0, or -1. Until it runs (and with --no-events) event_emit
 * does nothing. */
int events_start(void);
/* Publishes what is buffered, then stops the thread. */
void events_stop(void);
/* One event of item by owner (a lock owner id; its thread number names the lane):
 * {"t":<µs since the epoch>,"ev":"<what>","th":<thread>, then fmt's members}. fmt (NULL:
 * none) writes JSON members, e.g. "\"stock\":%lld". Cheap: no Redis, one mutex. */
void event_emit(const char *item, const char *owner, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* lock_config.observe: the watchdog's renewals and lost leases, as events. */
struct lock_grant;
void events_observe(const struct lock_grant *g, const char *what, long long lease_ms);
/* Wall-clock microseconds, the events' "t". */
long long events_now_us(void);
/* Counters for /metrics: messages published, events dropped (a full buffer or table). */
long long events_published(void);
long long events_dropped(void);

/* --- stream.c: GET /events?item=I as Server-Sent Events --- */

/* A new stream's response (the caller queues it, then destroys its reference): 200
 * text/event-stream with every instance's messages on events:{I} ("data: <message>"
 * each), a comment line as heartbeat when quiet. NULL when it cannot be made; *full is
 * set when that is because --max-streams are open (or the instance is stopping). */
struct MHD_Response *stream_response(struct MHD_Connection *conn, const char *item, int *full);
/* Ends every stream (each is sent an "end" event, then closed), waiting up to wait_ms
 * for them to be gone; new ones are refused from then on. */
void streams_end(long wait_ms);
/* Streams open now. */
int streams_open(void);

#endif
