/* metrics.c - Counters for /metrics, in the Prometheus text format. Lock-free. */
#include "service/metrics/metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "service/config/config.h"
#include "service/events/events.h"
#include "service/events/stream.h"
#include "service/sale/answer.h"
#include "service/store/store.h"

/* Upper bounds of the histograms' buckets, in microseconds (rendered in seconds). */
static const long long bounds_us[] = { 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
                                       250000, 500000, 1000000, 2500000, 5000000, 10000000 };
#define BUCKETS (sizeof(bounds_us) / sizeof(bounds_us[0]))

/* A Prometheus histogram: counts per bucket (not cumulative; summed when rendered). */
struct histogram {
    atomic_llong buckets[BUCKETS];
    atomic_llong count, sum_us;
};

/* Written by any request thread, read by /metrics. */
static atomic_llong sales[SALE_RESULTS];
static atomic_llong bad_requests;
static atomic_llong in_flight;
static struct histogram lock_wait, sale_latency;
static atomic_llong batches, batched_sales;
static atomic_llong replays, overlaps, line_timeouts, write_gaps;

static void observe(struct histogram *h, long long us)
{
    for (size_t i = 0; i < BUCKETS; i++)
        if (us <= bounds_us[i]) {
            atomic_fetch_add(&h->buckets[i], 1);
            break;
        }
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_us, us);
}

static void render_histogram(FILE *f, const char *name, const char *help, struct histogram *h)
{
    long long cumulative = 0;

    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (size_t i = 0; i < BUCKETS; i++) {
        cumulative += atomic_load(&h->buckets[i]);
        fprintf(f, "%s_bucket{le=\"%g\"} %lld\n", name, bounds_us[i] / 1e6, cumulative);
    }
    fprintf(f, "%s_bucket{le=\"+Inf\"} %lld\n%s_sum %.6f\n%s_count %lld\n", name,
            (long long)atomic_load(&h->count), name, atomic_load(&h->sum_us) / 1e6, name,
            (long long)atomic_load(&h->count));
}

void metrics_sale(enum sale_result r)
{
    atomic_fetch_add(&sales[r], 1);
}

void metrics_bad_request(void)
{
    atomic_fetch_add(&bad_requests, 1);
}

void metrics_in_flight(int delta)
{
    atomic_fetch_add(&in_flight, delta);
}

long long metrics_in_flight_now(void)
{
    return atomic_load(&in_flight);
}

void metrics_batch(int n)
{
    atomic_fetch_add(&batches, 1);
    atomic_fetch_add(&batched_sales, n);
}

void metrics_lock_wait(long long waited_ms)
{
    observe(&lock_wait, waited_ms * 1000);
}

void metrics_sale_latency(long long us)
{
    observe(&sale_latency, us);
}

void metrics_replay(void)
{
    atomic_fetch_add(&replays, 1);
}

void metrics_line_timeout(void)
{
    atomic_fetch_add(&line_timeouts, 1);
}

void metrics_overlap(void)
{
    atomic_fetch_add(&overlaps, 1);
}

void metrics_write_gap(void)
{
    atomic_fetch_add(&write_gaps, 1);
}

/* The live page's: events published and dropped, streams open. */
static void render_events(FILE *f)
{
    fprintf(f, "# HELP inventory_events_published_total Messages of events published (one per "
               "item and 50 ms with events).\n"
               "# TYPE inventory_events_published_total counter\n"
               "inventory_events_published_total %lld\n"
               "# HELP inventory_events_dropped_total Events not published: an item's buffer or "
               "the items' table was full.\n"
               "# TYPE inventory_events_dropped_total counter\n"
               "inventory_events_dropped_total %lld\n"
               "# HELP inventory_event_streams /events streams open now.\n"
               "# TYPE inventory_event_streams gauge\n"
               "inventory_event_streams %d\n",
            events_published(), events_dropped(), streams_open());
}

/* One counter, HELP and TYPE before it, on f. */
#define COUNTER(name, help, value)                                                         \
    fprintf(f, "# HELP " name " " help "\n# TYPE " name " counter\n" name " %lld\n",       \
            (long long)(value))

/* The lock's counters (all 0 for a sale without a lock). */
static void render_lock(FILE *f)
{
#define LOCK_COUNTER(name, help, field) COUNTER(name, help, svc_lock ? atomic_load(&svc_lock->field) : 0)
    LOCK_COUNTER("inventory_lock_acquisitions_total", "Locks granted.", acquisitions);
    COUNTER("inventory_lock_timeouts_total", "Acquires that gave up at the wait limit.",
            (svc_lock ? atomic_load(&svc_lock->timeouts) : 0) + atomic_load(&line_timeouts));
    LOCK_COUNTER("inventory_lock_renewals_total", "Leases renewed by the watchdog.", renewals);
    LOCK_COUNTER("inventory_lock_lost_leases_total",
                 "Leases found lost, each once (renewal refused or unanswered past the lease, or not owner at release).",
                 lost_leases);
    LOCK_COUNTER("inventory_lock_stolen_total",
                 "Locks found deleted by another client while our lease ran.", stolen);
    LOCK_COUNTER("inventory_lock_abandoned_total",
                 "Locks handed over to be given back, each once: a try or release never answered (Redis gone), or an answered release a failover may have lost.",
                 abandoned);
    LOCK_COUNTER("inventory_lock_abandoned_unanswered_total",
                 "Of the abandoned locks, tries and releases sent and never answered.",
                 abandoned_unanswered);
    LOCK_COUNTER("inventory_lock_given_back_total",
                 "Abandoned locks given back by owner once a master answered, Redis still holding them (each once).",
                 given_back);
    LOCK_COUNTER("inventory_lock_abandoned_gone_total",
                 "Abandoned locks Redis no longer held when first given back.", abandoned_gone);
    LOCK_COUNTER("inventory_lock_abandoned_expired_total",
                 "Abandoned locks whose lease ran out before a master took their give-back.",
                 abandoned_expired);
    LOCK_COUNTER("inventory_lock_abandoned_dropped_total",
                 "Abandoned locks over the bound kept, left to run out with their lease.",
                 abandoned_dropped);
    fprintf(f, "# HELP inventory_lock_abandoned_waiting Abandoned locks not yet given back.\n"
               "# TYPE inventory_lock_abandoned_waiting gauge\ninventory_lock_abandoned_waiting %lld\n",
            svc_lock ? (long long)atomic_load(&svc_lock->abandoned_waiting) : 0);
    LOCK_COUNTER("inventory_lock_given_back_again_total",
                 "Abandoned locks given back again after a failover or restart brought them back.",
                 given_back_again);
    LOCK_COUNTER("inventory_lock_notifications_total", "Release messages received (wait notify).",
                 notifications);
#undef LOCK_COUNTER
}

char *metrics_render(size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);

    if (f == NULL)
        return NULL;
    fprintf(f, "# HELP inventory_info This instance.\n# TYPE inventory_info gauge\n"
               "inventory_info{instance=\"%s\",lock=\"%s\"} 1\n", svc.name, svc.version);
    fprintf(f, "# HELP inventory_sales_total Sale requests by result.\n"
               "# TYPE inventory_sales_total counter\n");
    for (int i = 0; i < SALE_RESULTS; i++)
        fprintf(f, "inventory_sales_total{result=\"%s\"} %lld\n",
                sale_results[i].metric ? sale_results[i].metric : sale_error(i),
                (long long)atomic_load(&sales[i]));
    fprintf(f, "inventory_sales_total{result=\"bad_request\"} %lld\n",
            (long long)atomic_load(&bad_requests));
    fprintf(f, "# HELP inventory_sales_in_flight Sales being served now.\n"
               "# TYPE inventory_sales_in_flight gauge\ninventory_sales_in_flight %lld\n",
            (long long)atomic_load(&in_flight));
    render_histogram(f, "inventory_sale_duration_seconds",
                     "Time from a sale's request to its answer, in this instance.", &sale_latency);
    render_histogram(f, "inventory_lock_wait_seconds", "Time spent waiting for the lock.",
                     &lock_wait);
    render_lock(f);
    COUNTER("inventory_idempotent_replays_total",
            "Sales answered with the first answer to their Idempotency-Key.", atomic_load(&replays));
    COUNTER("inventory_overlaps_total",
            "Sales that entered the critical section while another was inside (--faults probe).",
            atomic_load(&overlaps));
    COUNTER("inventory_fault_write_gaps_total",
            "Sales that began a write_gap_ms pause after their lease check (--faults).",
            atomic_load(&write_gaps));
    svc_store->ops->metrics(svc_store, f);
    render_events(f);
    fprintf(f, "# HELP inventory_sale_batches_total Critical sections (or atomic scripts) run.\n"
               "# TYPE inventory_sale_batches_total counter\ninventory_sale_batches_total %lld\n"
               "# HELP inventory_sale_batched_total Sales served in them (--combine: up to N each).\n"
               "# TYPE inventory_sale_batched_total counter\ninventory_sale_batched_total %lld\n",
            (long long)atomic_load(&batches), (long long)atomic_load(&batched_sales));
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
#undef COUNTER
