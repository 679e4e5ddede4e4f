/* events.h - What the lock and the sale do, told to whoever watches (the live page): one
 * function per event, each published per item (events.c) and carried to a browser by the
 * /events streams (stream.h). */
#ifndef EVENTS_EVENTS_H
#define EVENTS_EVENTS_H

struct lock_grant;

/* Starts the publisher thread; 0, or -1. Until it runs (and with --no-events) the events
 * below do nothing. */
int events_start(void);
/* Publishes what is buffered, then stops the thread. */
void events_stop(void);

/* Each event is one JSON object {"t":<µs since the epoch>,"ev":"<what>","th":<thread>,
 * ...} of g's item, its lane the thread number of g's owner id. Cheap: no store, one mutex,
 * nothing at all while nobody watches the item. */
/* g was granted: its owner (short), token, depth, lease left (0: none) and wait. */
void event_acquired(const struct lock_grant *g);
/* The acquire for g's item gave up at its wait limit. */
void event_timeout(const struct lock_grant *g);
/* A batch of n sales under g decided: the stock read, how many it sells, whether the
 * lease was known lost. */
void event_sale(const struct lock_grant *g, long long stock, int n, long long sold, int lost);
/* g leaves its critical section (just before its release is sent). */
void event_leave(const struct lock_grant *g);
/* g's release ended: how ("ok", "expired", "stolen", "error", "abandoned"). */
void event_released(const struct lock_grant *g, const char *how);
/* g's write was refused by the store's fence (its token is stale). */
void event_fenced(const struct lock_grant *g);
/* g's holder knew its lease lost and wrote nothing. */
void event_refused(const struct lock_grant *g);
/* lock_config.observe: the watchdog's "renewed" (with the lease it set) and "lost". */
void events_observe(const struct lock_grant *g, const char *what, long long lease_ms);

/* Counters for /metrics: messages published, events dropped (a full buffer or table). */
long long events_published(void);
long long events_dropped(void);

#endif
