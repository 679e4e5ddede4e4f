/* admin.h - The store's operations from the command line, for scripts and people: set an
 * item's stock, read it back (deploy/stock and deploy/status on a store without a client
 * of its own on this machine, as ZooKeeper's). */
#ifndef SERVICE_ADMIN_H
#define SERVICE_ADMIN_H

/* 1 when the flags ask for an operation instead of serving. */
int admin_asked(void);
/* Runs it on the store svc names (opened and closed here); the exit status: 0 done, 1
 * when the store failed (each failure printed). */
int admin_run(void);

#endif
