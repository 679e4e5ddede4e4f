/* stream.h - GET /events?item=I: every instance's events of one item, as Server-Sent
 * Events to a browser (the live page, /live). */
#ifndef EVENTS_STREAM_H
#define EVENTS_STREAM_H

/* libmicrohttpd's, opaque here: only the HTTP side (and stream.c, which makes the
 * response) includes microhttpd.h. */
struct MHD_Connection;
struct MHD_Response;

/* A new stream's response (the caller queues it, then destroys its reference): 200
 * text/event-stream with every instance's messages on the item's channel ("data:
 * <message>" each), a comment line as heartbeat when quiet. event_loop: the daemon
 * suspends connections (the stream then never blocks it). NULL when it cannot be made;
 * *full is set when that is because --max-streams are open (or the instance is
 * stopping). */
struct MHD_Response *stream_response(struct MHD_Connection *conn, const char *item,
                                     int event_loop, int *full);
/* Ends every stream (each is sent an "end" event, then closed), waiting up to wait_ms
 * for them to be gone; new ones are refused from then on. */
void streams_end(long wait_ms);
/* Streams open now. */
int streams_open(void);

#endif
