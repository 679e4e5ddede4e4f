/* answer.c - Each sale result's answer (status, error, metric), in one table. */
#include "service/sale/answer.h"

#include "service/config/config.h"
#include "service/store/store.h"

const struct sale_result_info sale_results[SALE_RESULTS] = {
    [SALE_OK] = { 200, NULL, "ok" },
    [SALE_SOLD_OUT] = { 409, "sold_out", "sold_out" },
    [SALE_LOCK_TIMEOUT] = { 503, "lock_timeout", "lock_timeout" },
    [SALE_LOCK_UNAVAILABLE] = { 503, "lock_unavailable", "lock_unavailable" },
    [SALE_STORE_DOWN] = { 503, NULL, NULL },
    [SALE_UNKNOWN_ITEM] = { 404, "unknown_item", "unknown_item" },
    [SALE_BAD_STOCK] = { 500, "bad_stock", "bad_stock" },
    [SALE_LEASE_LOST] = { 409, "lease_lost", "lease_lost" },
    [SALE_OUTCOME_UNKNOWN] = { 503, "outcome_unknown", "outcome_unknown" },
    [SALE_KEY_REUSED] = { 422, "idempotency_key_reused", "key_reused" },
    [SALE_ERROR] = { 500, "error", "error" },
};

const char *sale_error(enum sale_result res)
{
    if (res == SALE_STORE_DOWN)
        return svc_store ? svc_store->ops->unavailable : "store_unavailable";
    return sale_results[res].error;
}
