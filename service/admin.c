/* admin.c - The store's operations from the command line: --set-stock N, --get-stock, of
 * --item I or --items K. */
#include "service/admin.h"

#include <stdio.h>

#include "service/config/config.h"
#include "service/sale/answer.h"
#include "service/store/store.h"

/* 1 when the command line asked for an admin operation (--set-stock, --get-stock). */
int admin_asked(void)
{
    return svc.set_stock >= 0 || svc.get_stock;
}

/* The operation asked for on one item; 0, or 1 after printing why not. */
static int one_item(struct store *s, const char *item)
{
    struct error err = { 0 };
    long long stock = 0, sold = 0, entries = 0;
    char msg[192] = "";
    enum sale_result res;

    if (svc.set_stock >= 0 && s->ops->set_stock(s, item, svc.set_stock, &err) != 0) {
        fprintf(stderr, "inventory-service: %s: setting the stock: %s\n", item, err.msg);
        return 1;
    }
    if (!svc.get_stock)
        return 0;
    if ((res = s->ops->read(s, item, &stock, &sold, msg, sizeof(msg))) != SALE_OK) {
        fprintf(stderr, "inventory-service: %s: %s%s%s\n", item, sale_error(res), msg[0] ? ": " : "", msg);
        return 1;
    }
    if (s->ops->ledger(s, item, NULL, &entries, NULL, &err) != 0) {
        fprintf(stderr, "inventory-service: %s: the ledger: %s\n", item, err.msg);
        return 1;
    }
    printf("%s %lld %lld %lld\n", item, stock, sold, entries);
    return 0;
}

/* Runs the admin operation on the store; the exit status. */
int admin_run(void)
{
    struct error err = { 0 };
    char item[ITEM_MAX + 1];
    int failed = 0;

    if ((svc_store = store_open(&svc, &err)) == NULL) {
        fprintf(stderr, "inventory-service: store: %s\n", err.msg);
        return 1;
    }
    if (svc.items > 0)
        for (int i = 1; i <= svc.items; i++) {
            snprintf(item, sizeof(item), "item%04d", i);
            failed |= one_item(svc_store, item);
        }
    else
        failed = one_item(svc_store, svc.item ? svc.item : ITEM_DEFAULT);
    store_close(svc_store);
    return failed;
}
