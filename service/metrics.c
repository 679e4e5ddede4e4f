/* metrics.c - Counters for /metrics, in the Prometheus text format. Lock-free. */
#include "service/service.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static const double wait_bounds[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10 };
#define WAIT_BUCKETS (sizeof(wait_bounds) / sizeof(wait_bounds[0]))

/* Written by any request thread, read by /metrics. */
static atomic_llong sales[SALE_RESULTS];
static atomic_llong bad_requests;
static atomic_llong in_flight;
static atomic_llong wait_buckets[WAIT_BUCKETS]; /* not cumulative; summed when rendered */
static atomic_llong wait_count, wait_sum_ms;
static atomic_llong batches, batched_sales;

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

void metrics_batch(int n)
{
    atomic_fetch_add(&batches, 1);
    atomic_fetch_add(&batched_sales, n);
}

void metrics_lock_wait(long long waited_ms)
{
    for (size_t i = 0; i < WAIT_BUCKETS; i++)
        if (waited_ms <= wait_bounds[i] * 1000) {
            atomic_fetch_add(&wait_buckets[i], 1);
            break;
        }
    atomic_fetch_add(&wait_count, 1);
    atomic_fetch_add(&wait_sum_ms, waited_ms);
}

char *metrics_render(size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    long long cumulative = 0;

    if (f == NULL)
        return NULL;
    fprintf(f, "# HELP inventory_info This instance.\n# TYPE inventory_info gauge\n"
               "inventory_info{instance=\"%s\",lock=\"%s\"} 1\n", svc.name, svc.version);
    fprintf(f, "# HELP inventory_sales_total Sale requests by result.\n"
               "# TYPE inventory_sales_total counter\n");
    for (int i = 0; i < SALE_RESULTS; i++)
        fprintf(f, "inventory_sales_total{result=\"%s\"} %lld\n", sale_results[i].metric,
                (long long)atomic_load(&sales[i]));
    fprintf(f, "inventory_sales_total{result=\"bad_request\"} %lld\n",
            (long long)atomic_load(&bad_requests));
    fprintf(f, "# HELP inventory_sales_in_flight Sales being served now.\n"
               "# TYPE inventory_sales_in_flight gauge\ninventory_sales_in_flight %lld\n",
            (long long)atomic_load(&in_flight));
    fprintf(f, "# HELP inventory_lock_wait_seconds Time spent waiting for the lock.\n"
               "# TYPE inventory_lock_wait_seconds histogram\n");
    for (size_t i = 0; i < WAIT_BUCKETS; i++) {
        cumulative += atomic_load(&wait_buckets[i]);
        fprintf(f, "inventory_lock_wait_seconds_bucket{le=\"%g\"} %lld\n", wait_bounds[i], cumulative);
    }
    fprintf(f, "inventory_lock_wait_seconds_bucket{le=\"+Inf\"} %lld\n"
               "inventory_lock_wait_seconds_sum %.3f\ninventory_lock_wait_seconds_count %lld\n",
            (long long)atomic_load(&wait_count), atomic_load(&wait_sum_ms) / 1000.0,
            (long long)atomic_load(&wait_count));
#define COUNTER(name, help, field)                                                         \
    fprintf(f, "# HELP " name " " help "\n# TYPE " name " counter\n" name " %lld\n",       \
            (long long)atomic_load(&svc_lock->field))
    COUNTER("inventory_lock_acquisitions_total", "Locks granted.", acquisitions);
    COUNTER("inventory_lock_timeouts_total", "Acquires that gave up at the wait limit.", timeouts);
    COUNTER("inventory_lock_renewals_total", "Leases renewed by the watchdog.", renewals);
    COUNTER("inventory_lock_lost_leases_total", "Leases found lost (renewal refused or not owner at release).", lost_leases);
    COUNTER("inventory_lock_stolen_total", "Locks found deleted by another client while our lease ran.", stolen);
    COUNTER("inventory_lock_notifications_total", "Release messages received (wait notify).", notifications);
#undef COUNTER
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
