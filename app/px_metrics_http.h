/* `--metrics ADDR`: a listener of its own (never one the agent's traffic reaches) that answers
 * `GET /metrics` with the process's metrics in the Prometheus text format (proxy/px_metrics.h),
 * and anything else 404 or 405. Each connection is one request: the head must arrive within
 * PX_METRICS_HEAD_MS and fit PX_METRICS_HEAD_MAX bytes, the answer is written, the connection
 * closes. At most PX_METRICS_CONNS connections at once (more are closed at accept). */
#ifndef PX_METRICS_HTTP_H
#define PX_METRICS_HTTP_H

#include <uv.h>

#include "proxy/px_config.h"
#include "proxy/px_ctx.h"

#define PX_METRICS_HEAD_MAX 4096
#define PX_METRICS_HEAD_MS 5000
#define PX_METRICS_CONNS 16

typedef struct px_metrics_http px_metrics_http_t;

/* Starts the listener on l for ctx's loop. Returns 0 with *out, or a negative libuv/airlock
 * code (said on stderr). */
int px_metrics_http_start(px_ctx_t *ctx, const px_listen_t *l, px_metrics_http_t **out);

/* Its listening handle (for the address it listens on). */
const uv_tcp_t *px_metrics_http_tcp(const px_metrics_http_t *h);

/* Closes the listener and its connections; the memory goes once their handles closed. */
void px_metrics_http_stop(px_metrics_http_t *h);

#endif
