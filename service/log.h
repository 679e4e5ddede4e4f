/* log.h - The service's log: one line per event on stderr: time, level, instance, message.
 * Nothing at info level on the request path. */
#ifndef SERVICE_LOG_H
#define SERVICE_LOG_H

/* Names the instance in every later line (default "inventory"); before other threads run. */
void log_set_name(const char *name);
/* One line: "<UTC time> <level> <instance> <message>". */
void log_event(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
