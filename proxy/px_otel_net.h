/* The OTLP exporter's connection to its collector (docs/otel.md): HTTP/1.1 over TCP or TLS
 * with blocking-style I/O (non-blocking sockets and poll() deadlines) on the exporter's
 * thread only, kept alive across batches. */
#ifndef PX_OTEL_NET_H
#define PX_OTEL_NET_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/px_otel_conf.h"

#define PX_OTEL_ANSWER_BODY_MAX                                                                    \
    (64 * 1024) /* an answer's body read (and dropped) to reuse                                    \
                   the connection; a longer one closes it */

typedef struct ssl_ctx_st px_otel_ssl_ctx_t;
typedef struct ssl_st px_otel_ssl_t;

typedef struct px_otel_link {
    const px_otel_conf_t *conf; /* borrowed, for the link's life */
    px_otel_ssl_ctx_t *ctx;     /* https: the verification settings and client certificate */
    int fd;                     /* -1: not connected */
    px_otel_ssl_t *ssl;         /* https, while connected */
    uint64_t connects;          /* connections made since init (a test's and a bench's figure) */
} px_otel_link_t;

/* Prepares l for conf (borrowed until px_otel_link_free()); for https, loads the CA file (or
 * the system store) and the client certificate and key. Returns 0, or a negative code with
 * the reason in err (the variable and file named). Nothing is connected yet. */
int px_otel_link_init(px_otel_link_t *l, const px_otel_conf_t *conf, char *err, size_t errlen);

/* Closes the connection, frees the TLS settings. */
void px_otel_link_free(px_otel_link_t *l);

/* Sends one request (head and body, borrowed) and reads the answer, within deadline
 * (monotonic ms): on the open connection when it is still usable, else on a new one; a kept
 * connection that turns out closed before any answer byte is replaced once. The connection
 * stays open when the answer allows it. Returns the HTTP status with *retry_ms set from
 * Retry-After (0: none), or a negative code with the reason in why: PX_EFORBIDDEN when the
 * collector's certificate failed verification (why says how), which a retry would not change. */
int px_otel_link_post(px_otel_link_t *l, const char *head, size_t hlen, const char *body,
                      size_t blen, uint64_t deadline, unsigned *retry_ms, char *why, size_t whylen);

/* Closes the connection (the next post opens one). */
void px_otel_link_close(px_otel_link_t *l);

/* The monotonic clock in ms. */
uint64_t px_otel_mono_ms(void);

#endif
