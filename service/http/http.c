/* http.c - The routes: parses and checks requests, hands a sale to the engine, and turns
 * every result into an answer. */
#include "service/http/http.h"

#include <errno.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "live_html.h"
#include "service/config/config.h"
#include "service/events/stream.h"
#include "service/log.h"
#include "service/metrics/metrics.h"
#include "service/parse.h"
#include "service/sale/answer.h"
#include "service/sale/engine.h"
#include "service/store/store.h"

/* Sent as the answer, in one place: status code and JSON body (owned by this call), and
 * one more header when header is not NULL. */
static enum MHD_Result answer_json(struct MHD_Connection *conn, unsigned status, json_t *body,
                                   const char *header, const char *value)
{
    char *text = json_dumps(body, JSON_COMPACT);
    struct MHD_Response *resp;
    enum MHD_Result ret;

    json_decref(body);
    if (text == NULL)
        return MHD_NO;
    resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (header)
        MHD_add_response_header(resp, header, value);
    ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result answer_error(struct MHD_Connection *conn, unsigned status,
                                    const char *error, const char *message)
{
    json_t *body = json_pack("{s:b, s:s}", "ok", 0, "error", error);
    if (message && *message)
        json_object_set_new(body, "message", json_string(message));
    return answer_json(conn, status, body, NULL, NULL);
}

/* The query of a sale or inventory request, checked. */
struct params {
    const char *item;
    long work_ms, release_gap_ms, write_gap_ms, nested;
    int has_fault;          /* a teaching fault was asked for */
    char error[160];        /* set when a parameter is bad */
};

static enum MHD_Result param_visit(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct params *p = cls;
    long *num = NULL, max = 60000;

    (void)kind;
    if (p->error[0])
        return MHD_NO;
    if (value == NULL)
        value = "";
    if (strcmp(key, "item") == 0) {
        if (!item_is_valid(value))
            snprintf(p->error, sizeof(p->error),
                     "item must be 1 to %d characters of A-Z a-z 0-9 _ . -", ITEM_MAX);
        p->item = value;
        return MHD_YES;
    }
    if (strcmp(key, "work_ms") == 0)
        num = &p->work_ms;
    else if (strcmp(key, "release_gap_ms") == 0)
        num = &p->release_gap_ms;
    else if (strcmp(key, "write_gap_ms") == 0)
        num = &p->write_gap_ms;
    else if (strcmp(key, "nested") == 0)
        num = &p->nested, max = 1;
    if (num == NULL) {
        snprintf(p->error, sizeof(p->error), "unknown parameter '%.40s'", key);
        return MHD_NO;
    }
    if (parse_bounded(value, max, num) != 0)
        snprintf(p->error, sizeof(p->error), "%s must be a whole number from 0 to %ld", key, max);
    p->has_fault = 1;
    return MHD_YES;
}

/* The request's id: the X-Request-Id nginx (or the client) sent, when it is a plain
 * token; else this instance's own, its id's first 12 characters and a count. */
static void request_id(struct MHD_Connection *conn, char *buf, size_t size)
{
    static atomic_ullong seq;
    const char *given = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");

    if (given && token_is_valid(given, REQUEST_ID_MAX, "-_.:"))
        snprintf(buf, size, "%s", given);
    else
        snprintf(buf, size, "%.12s-%llu", svc.instance_id,
                 (unsigned long long)atomic_fetch_add(&seq, 1) + 1);
}

/* Fills p from the query; 0 when valid, else p->error says why. */
static int params_parse(struct MHD_Connection *conn, struct params *p, int faults_allowed)
{
    memset(p, 0, sizeof(*p));
    p->item = ITEM_DEFAULT;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, param_visit, p);
    if (!p->error[0] && p->has_fault && !faults_allowed)
        snprintf(p->error, sizeof(p->error), "this request takes only item");
    return p->error[0] ? -1 : 0;
}

/* What an outcome_unknown answer says: why the outcome is unknown, and how to learn it. */
static const char *unknown_message(const struct sale_request *rq)
{
    if (rq->out.unreplicated)
        return rq->idem_key ? "the sale was written, but fewer replicas than --replicas asks "
                              "acknowledged it in time: a failover may undo it; retry with the "
                              "same Idempotency-Key to learn its outcome"
                            : "the sale was written, but fewer replicas than --replicas asks "
                              "acknowledged it in time: a failover may undo it; send an "
                              "Idempotency-Key to make a retry safe";
    return rq->idem_key ? "the sale was sent to the store and its answer lost: retry with the "
                          "same Idempotency-Key to learn its outcome"
                        : "the sale was sent to the store and its answer lost: it may be done; "
                          "send an Idempotency-Key to make a retry safe";
}

/* A sale's answer: sale_results gives the status and error string of each result. A
 * replayed answer is the first one again (its instance, "replayed":true); a sale whose
 * outcome is unknown names the key to retry with. Results that need a look are logged
 * with the request id, which every answer carries; not a write the replicas fell short
 * of, which the Redis store counts and logs once a second at most (redis_answer.c). */
static enum MHD_Result answer_sale(struct MHD_Connection *conn, const struct sale_request *rq,
                                   long long started_us)
{
    const struct sale_outcome *out = &rq->out;
    const struct sale_result_info *info = &sale_results[out->result];
    json_t *body;

    metrics_sale(out->result);
    metrics_sale_latency(clock_now_us() - started_us);
    if (out->replayed)
        metrics_replay();
    if ((out->result == SALE_OUTCOME_UNKNOWN && !out->unreplicated) || out->result == SALE_ERROR ||
        out->result == SALE_BAD_STOCK || out->result == SALE_LEASE_LOST)
        log_event("WARN", "request %s: sale of %s: %s%s%s", rq->request_id, rq->item, sale_error(out->result),
                  out->message[0] ? ": " : "", out->message);
    if (out->result == SALE_OK) {
        body = json_pack("{s:b, s:s, s:I, s:s, s:s}", "ok", 1, "item", rq->item,
                         "remaining", (json_int_t)out->remaining, "instance",
                         out->replayed ? out->instance : svc.name, "lock", svc.version);
        if (out->token)
            json_object_set_new(body, "token", json_integer(out->token));
        if (out->lease_lost)
            json_object_set_new(body, "lease_lost", json_true());
    } else {
        body = json_pack("{s:b, s:s}", "ok", 0, "error", sale_error(out->result));
        if (out->result == SALE_SOLD_OUT)
            json_object_set_new(body, "remaining", json_integer(0));
        else if (out->result == SALE_OUTCOME_UNKNOWN)
            json_object_set_new(body, "message", json_string(unknown_message(rq)));
        else if (out->message[0])
            json_object_set_new(body, "message", json_string(out->message));
    }
    if (rq->idem_key)
        json_object_set_new(body, "idempotency_key", json_string(rq->idem_key));
    if (out->replayed)
        json_object_set_new(body, "replayed", json_true());
    json_object_set_new(body, "request_id", json_string(rq->request_id));
    if (info->http_status == MHD_HTTP_SERVICE_UNAVAILABLE)
        return answer_json(conn, info->http_status, body, "Retry-After", "1");
    return answer_json(conn, info->http_status, body, NULL, NULL);
}

/* A queued sale's resume (struct sale_job): its answer is ready. */
static void resume_sale(void *conn)
{
    MHD_resume_connection(conn);
}

/* The event loop's sale (atomic or combined): suspend the connection, queue the sale; the
 * engine resumes the connection when it has the answer, and http_handle sends it. */
static enum MHD_Result queue_sale(struct MHD_Connection *conn, const struct params *p,
                                  const char *idem_key, void **req_cls)
{
    struct sale_job *j = calloc(1, sizeof(*j));

    if (j == NULL)
        return MHD_NO;
    snprintf(j->item, sizeof(j->item), "%s", p->item);
    j->rq.item = j->item;
    request_id(conn, j->request_id, sizeof(j->request_id));
    j->rq.request_id = j->request_id;
    if (idem_key) {
        snprintf(j->idem_key, sizeof(j->idem_key), "%s", idem_key);
        j->rq.idem_key = j->idem_key;
    }
    j->started_us = clock_now_us();
    j->rq.work_ms = p->work_ms;
    j->rq.release_gap_ms = p->release_gap_ms;
    j->rq.write_gap_ms = p->write_gap_ms;
    j->rq.nested = (int)p->nested;
    j->conn = conn;
    j->resume = resume_sale;
    *req_cls = j;
    metrics_in_flight(1);
    MHD_suspend_connection(conn);
    svc_engine->submit(j);
    return MHD_YES;
}

static enum MHD_Result route_sale(struct MHD_Connection *conn, void **req_cls)
{
    const char *idem_key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Idempotency-Key");
    char rid[REQUEST_ID_MAX + 1];
    struct params p;
    struct sale_request rq;

    if (params_parse(conn, &p, 1) != 0) {
        metrics_bad_request();
        return answer_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", p.error);
    }
    if (idem_key && !token_is_valid(idem_key, IDEM_KEY_MAX, "-_.:=+/")) {
        snprintf(p.error, sizeof(p.error),
                 "Idempotency-Key must be 1 to %d characters of A-Z a-z 0-9 - _ . : = + /",
                 IDEM_KEY_MAX);
        metrics_bad_request();
        return answer_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", p.error);
    }
    if (p.has_fault && !svc.faults) {
        metrics_bad_request();
        return answer_error(conn, MHD_HTTP_FORBIDDEN, "faults_disabled",
                            "work_ms, release_gap_ms, write_gap_ms and nested need an instance "
                            "started with --faults");
    }
    if (p.has_fault && !svc_engine->locked) {
        metrics_bad_request();
        return answer_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
                            "this sale takes no lock (the atomic sale is one script): there is "
                            "no lock to fault");
    }
    if (svc_engine->event_loop)
        return queue_sale(conn, &p, idem_key, req_cls);
    request_id(conn, rid, sizeof(rid));
    rq = (struct sale_request){ .item = p.item, .idem_key = idem_key,
                                .request_id = rid, .work_ms = p.work_ms,
                                .release_gap_ms = p.release_gap_ms,
                                .write_gap_ms = p.write_gap_ms, .nested = (int)p.nested };
    long long started_us = clock_now_us();
    metrics_in_flight(1);
    svc_engine->run(&rq);
    metrics_in_flight(-1);
    return answer_sale(conn, &rq, started_us);
}

static enum MHD_Result route_inventory(struct MHD_Connection *conn, void **req_cls)
{
    (void)req_cls;
    struct params p;
    long long stock = 0, sold = 0;
    char msg[192] = "";

    if (params_parse(conn, &p, 0) != 0)
        return answer_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", p.error);
    switch (svc_store->ops->read(svc_store, p.item, &stock, &sold, msg, sizeof(msg))) {
    case SALE_OK:
        return answer_json(conn, MHD_HTTP_OK,
                           json_pack("{s:s, s:I, s:I}", "item", p.item, "stock", (json_int_t)stock,
                                     "sold", (json_int_t)sold), NULL, NULL);
    case SALE_UNKNOWN_ITEM:
        return answer_error(conn, MHD_HTTP_NOT_FOUND, "unknown_item", msg);
    case SALE_BAD_STOCK:
        return answer_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "bad_stock", msg);
    default:
        return answer_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, sale_error(SALE_STORE_DOWN), NULL);
    }
}

static enum MHD_Result route_metrics(struct MHD_Connection *conn, void **req_cls)
{
    (void)req_cls;
    size_t len;
    char *text = metrics_render(&len);
    struct MHD_Response *resp;
    enum MHD_Result ret;

    if (text == NULL)
        return MHD_NO;
    resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
    ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* GET /events?item=I: the item's events from every instance (stream.c). */
static enum MHD_Result route_events(struct MHD_Connection *conn, void **req_cls)
{
    (void)req_cls;
    struct params p;
    struct MHD_Response *resp;
    enum MHD_Result ret;
    int full;

    if (params_parse(conn, &p, 0) != 0)
        return answer_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", p.error);
    if (svc_store->ops->subscribe == NULL)
        return answer_error(conn, MHD_HTTP_NOT_IMPLEMENTED, "no_events",
                            "this instance's store has no channel for the live page's events");
    if ((resp = stream_response(conn, p.item, svc_engine->event_loop, &full)) == NULL && full)
        return answer_json(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                           json_pack("{s:b, s:s, s:s}", "ok", 0, "error", "too_many_streams",
                                     "message", "this instance serves --max-streams event "
                                                "streams at once"), "Retry-After", "5");
    if (resp == NULL)
        return MHD_NO;
    ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);   /* the stream ends when the connection is done with it */
    return ret;
}

/* GET /live: the live page, one HTML file with its script, built in (service/events/live.html). */
static enum MHD_Result route_live(struct MHD_Connection *conn, void **req_cls)
{
    (void)req_cls;
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        sizeof(live_html) - 1, (void *)live_html, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret;

    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/html; charset=utf-8");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* The routes and the methods each takes. */
static const struct route {
    const char *path;
    int post_too;
    enum MHD_Result (*serve)(struct MHD_Connection *conn, void **req_cls);
} routes[] = {
    { "/inventory/sale", 1, route_sale },
    { "/inventory", 0, route_inventory },
    { "/health", 0, NULL },
    { "/metrics", 0, route_metrics },
    { "/events", 0, route_events },
    { "/live", 0, route_live },
};

/* *req_cls of a request being read; a queued sale's is its job. */
static int http_seen;

void http_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                    enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    if (*req_cls != NULL && *req_cls != &http_seen) {
        struct sale_job *j = *req_cls;
        if (!j->answered)
            metrics_in_flight(-1); /* the client left before its answer */
        free(j);
    }
    *req_cls = NULL;
}

/* libmicrohttpd calls this at least twice per request. The first call only marks the
 * request (answering then would make 0.9.75 close the connection: no keep-alive); the
 * calls with a body consume it; the last one answers. */
enum MHD_Result http_handle(void *cls, struct MHD_Connection *conn, const char *url,
                            const char *method, const char *version, const char *upload_data,
                            size_t *upload_data_size, void **req_cls)
{
    (void)cls, (void)version, (void)upload_data;
    if (*req_cls == NULL) {
        *req_cls = &http_seen;
        return MHD_YES;
    }
    if (*req_cls != &http_seen) {
        /* A queued sale, resumed by its engine: its answer is ready. */
        struct sale_job *j = *req_cls;
        if (!j->done)
            return MHD_YES;
        j->answered = 1;
        metrics_in_flight(-1);
        return answer_sale(conn, &j->rq, j->started_us);
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct route *r = &routes[i];
        if (strcmp(url, r->path) != 0)
            continue;
        if (strcmp(method, "GET") != 0 && !(r->post_too && strcmp(method, "POST") == 0)) {
            json_t *body = json_pack("{s:b, s:s}", "ok", 0, "error", "method_not_allowed");
            return answer_json(conn, MHD_HTTP_METHOD_NOT_ALLOWED, body, "Allow",
                               r->post_too ? "GET, POST" : "GET");
        }
        if (r->serve)
            return r->serve(conn, req_cls);
        if (svc_store->ops->ping(svc_store))
            return answer_json(conn, MHD_HTTP_OK, json_pack("{s:b}", "ok", 1), NULL, NULL);
        return answer_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, sale_error(SALE_STORE_DOWN), NULL);
    }
    return answer_error(conn, MHD_HTTP_NOT_FOUND, "not_found", NULL);
}
