/* answer.h - Each sale result's answer (status, error, metric), in one table. */
#ifndef SALE_ANSWER_H
#define SALE_ANSWER_H

#include "service/store/request.h"

/* Each result's answer and metric label. */
struct sale_result_info {
    unsigned http_status;
    const char *error;      /* the answer's "error" (NULL for a sale; SALE_STORE_DOWN: the
                               store's own, sale_error()) */
    const char *metric;     /* inventory_sales_total{result=...} (SALE_STORE_DOWN: the same) */
};
extern const struct sale_result_info sale_results[SALE_RESULTS];
/* The answer's "error" of res: the table's, or the store's word for being unreachable. */
const char *sale_error(enum sale_result res);

#endif
