/* http.h - The HTTP handler given to libmicrohttpd. */
#ifndef HTTP_H
#define HTTP_H

#include <microhttpd.h>

/* The MHD_AccessHandlerCallback of the service: routes, checks, answers in JSON. */
enum MHD_Result http_handle(void *cls, struct MHD_Connection *conn, const char *url,
                            const char *method, const char *version, const char *upload_data,
                            size_t *upload_data_size, void **req_cls);

/* MHD_OPTION_NOTIFY_COMPLETED: frees a queued sale's job. */
void http_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                    enum MHD_RequestTerminationCode toe);

#endif
