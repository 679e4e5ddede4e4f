/* load_record.c - What a run of sale-load records: each request's history line (the input
 * of loadtest/check-history), the error counts and latencies, and the summary. */
#include "loadtest/load_record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { LOAD_MAX_ERRORS = 64 };      /* distinct error strings counted; more go to "other" */

int load_record_open(struct load_record *rec, const struct load_opts *o)
{
    rec->o = o;
    rec->st.errors = json_object();
    if (rec->st.errors == NULL) {
        fputs("sale-load: out of memory\n", stderr);
        return 1;
    }
    if (o->history) {
        rec->history = fopen(o->history, "w");
        if (rec->history == NULL) {
            fprintf(stderr, "sale-load: %s: %s\n", o->history, strerror(errno));
            return 1;
        }
        setvbuf(rec->history, NULL, _IOFBF, 1 << 20);
    }
    return 0;
}

/* errors_count: counts one answer of status with the body's error (non-200 answers). */
static void errors_count(struct load_stats *st, int status, const char *error)
{
    char code[8];
    json_t *per, *n;

    snprintf(code, sizeof(code), "%d", status);
    per = json_object_get(st->errors, code);
    if (per == NULL) {
        per = json_object();
        json_object_set_new(st->errors, code, per);
    }
    if (json_object_size(per) >= LOAD_MAX_ERRORS && json_object_get(per, error) == NULL)
        error = "other";
    n = json_object_get(per, error);
    if (n)
        json_integer_set(n, json_integer_value(n) + 1);
    else
        json_object_set_new(per, error, json_integer(1));
}

/* history_write: q as one history line (body: the answer's JSON or NULL). */
static void history_write(struct load_record *rec, const struct load_request *q,
                          const json_t *body)
{
    json_t *line = json_object(), *v;

    json_object_set_new(line, "start_ns", json_integer(q->start_ns));
    json_object_set_new(line, "end_ns", json_integer(q->end_ns));
    json_object_set_new(line, "status", json_integer(q->status));
    if (json_is_string(v = json_object_get(body, "error")))
        json_object_set(line, "error", v);
    if (json_is_integer(v = json_object_get(body, "remaining")))
        json_object_set(line, "remaining", v);
    json_object_set_new(line, "item", json_string(q->item));
    if (q->key)
        json_object_set_new(line, "key", json_string(q->key));
    if (json_is_string(v = json_object_get(body, "instance")))
        json_object_set(line, "instance", v);
    if (json_is_integer(v = json_object_get(body, "token")))
        json_object_set(line, "token", v);
    if (json_is_string(v = json_object_get(body, "request_id")))
        json_object_set(line, "request_id", v);
    if (q->retry_after)
        json_object_set_new(line, "retry_after", json_true());
    json_object_set_new(line, "conn", json_integer(q->conn));
    if (json_dumpf(line, rec->history, JSON_COMPACT) != 0 || fputc('\n', rec->history) == EOF)
        rec->history_failed = 1;
    json_decref(line);
}

void load_record_request(struct load_record *rec, const struct load_request *q)
{
    struct load_stats *st = &rec->st;
    json_t *body = q->body ? json_loadb(q->body, q->body_len, 0, NULL) : NULL;
    const json_t *error = json_object_get(body, "error");

    st->requests++;
    if (q->status == 0) {
        st->no_answer++;
    } else {
        st->by_status[q->status]++;
        int64_t from = q->due_ns > 0 ? q->due_ns : q->start_ns;

        load_hist_add(&st->lat, (uint64_t)(q->end_ns - from) / 1000);
        if (q->status != 200 && json_is_string(error))
            errors_count(st, q->status, json_string_value(error));
    }
    if (rec->history)
        history_write(rec, q, body);
    json_decref(body);
}

void load_record_connect_failed(struct load_record *rec, int err)
{
    if (rec->st.connect_failures++ == 0)
        rec->st.connect_errno = err;
}

/* status_print: one status's line of the summary, with its errors, which it also adds
 * into by_error. */
static void status_print(const struct load_stats *st, int status, json_t *by_error)
{
    char code[8];
    const json_t *per, *n;
    const char *error;
    int first = 1;

    snprintf(code, sizeof(code), "%d", status);
    printf("status %d: %lld", status, st->by_status[status]);
    per = json_object_get(st->errors, code);
    json_object_foreach((json_t *)per, error, n) {
        json_int_t sum = json_integer_value(json_object_get(by_error, error));

        printf("%s%s %lld", first ? " (" : ", ", error, (long long)json_integer_value(n));
        json_object_set_new(by_error, error, json_integer(sum + json_integer_value(n)));
        first = 0;
    }
    printf("%s\n", first ? "" : ")");
}

/* summary_json: the summary's JSON line (p50 < 0: nothing was answered). */
static void summary_json(const struct load_stats *st, const json_t *by_status,
                         const json_t *by_error, double rps, double p50, double p99,
                         double seconds, double rate)
{
    char *s1 = json_dumps(by_status, JSON_COMPACT), *s2 = json_dumps(by_error, JSON_COMPACT);

    printf("{\"requests\":%lld,\"by_status\":%s,\"by_error\":%s,\"no_answer\":%lld,\"rps\":%.1f,",
           st->requests, s1, s2, st->no_answer, rps);
    if (p50 >= 0)
        printf("\"p50_ms\":%.3f,\"p99_ms\":%.3f,", p50, p99);
    else
        printf("\"p50_ms\":null,\"p99_ms\":null,");
    printf("\"seconds\":%.3f,\"connect_failures\":%lld", seconds, st->connect_failures);
    if (rate > 0)
        printf(",\"rate\":%.1f", rate);
    printf("}\n");
    free(s1);
    free(s2);
}

void load_record_summary(const struct load_record *rec, double seconds)
{
    const struct load_stats *st = &rec->st;
    double p50 = load_hist_percentile_ms(&st->lat, 0.50);
    double p99 = load_hist_percentile_ms(&st->lat, 0.99);
    double rps = seconds > 0 ? (double)st->requests / seconds : 0;
    json_t *by_status = json_object(), *by_error = json_object();
    char code[8];

    printf("sale-load: %s, %d connections, %.2f s%s\n", rec->o->url, rec->o->conns, seconds,
           rec->o->keys ? ", an Idempotency-Key on each request" : "");
    if (rec->o->rate > 0)
        printf("schedule:   %.1f requests a second due (latency from when each was due)\n",
               rec->o->rate);
    printf("requests:   %lld (%.1f/s)\n", st->requests, rps);
    for (int s = 100; s < 600; s++) {
        if (st->by_status[s] == 0)
            continue;
        snprintf(code, sizeof(code), "%d", s);
        json_object_set_new(by_status, code, json_integer(st->by_status[s]));
        status_print(st, s, by_error);
    }
    printf("no answer:  %lld\n", st->no_answer);
    if (p50 >= 0)
        printf("latency:    p50 %.3f ms, p99 %.3f ms\n", p50, p99);
    if (st->connect_failures)
        printf("connect failures: %lld (the first: %s)\n", st->connect_failures,
               strerror(st->connect_errno));
    summary_json(st, by_status, by_error, rps, p50, p99, seconds, rec->o->rate);
    json_decref(by_status);
    json_decref(by_error);
}

int load_record_close(struct load_record *rec)
{
    int rc = 0;

    if (rec->history && fclose(rec->history) != 0) {
        fprintf(stderr, "sale-load: %s: %s\n", rec->o->history, strerror(errno));
        rc = 1;
    } else if (rec->history_failed) {
        fprintf(stderr, "sale-load: %s: a write failed: the history is not whole\n",
                rec->o->history);
        rc = 1;
    }
    rec->history = NULL;
    json_decref(rec->st.errors);
    rec->st.errors = NULL;
    return rc;
}
