/* The process's metrics (`airlock run --metrics ADDR`, docs/metrics.md): counters the proxy
 * bumps where it decides, two latency histograms, and the text the Prometheus exposition format
 * (version 0.0.4) gives them. Labels come only from fixed sets (a decision, an event kind, an
 * error kind): no host, path or sandbox name ever becomes a label, so the number of series is
 * fixed whatever the traffic.
 *
 * One loop runs the proxy, so the counters are plain integers, bumped from that loop only.
 * Counting costs an increment and, for the histograms, a short scan of the bucket bounds. */
#ifndef PX_METRICS_H
#define PX_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "audit/audit_event.h"

/* Where an upstream request failed (the reason's text decides: px_metrics_up_error). */
typedef enum px_metrics_uperr {
    PX_M_UP_DESTINATION = 0, /* the destination check refused the address */
    PX_M_UP_RESOLVE,         /* the name did not resolve */
    PX_M_UP_CONNECT,         /* TCP connect failed or was refused */
    PX_M_UP_TLS,             /* the TLS handshake or certificate check failed */
    PX_M_UP_TIMEOUT,         /* connect, handshake or the first byte took too long */
    PX_M_UP_PROTOCOL,        /* an invalid response */
    PX_M_UP_OTHER,
    PX_M_UP_KINDS
} px_metrics_uperr_t;

#define PX_M_HIST_BUCKETS 12 /* upper bounds: 5 ms .. 60 s (px_metrics.c), then +Inf */

typedef struct px_metrics_hist {
    uint64_t counts[PX_M_HIST_BUCKETS + 1]; /* per bucket (not cumulative); the last is +Inf */
    uint64_t n;
    double sum; /* seconds */
} px_metrics_hist_t;

typedef struct px_metrics {
    /* one per network-log event: [kind][verdict] (audit_event.h's enums) */
    uint64_t events[AUDIT_EV_GRAPHQL_SCOPE + 1][AUDIT_EV_REJECTED + 1];
    uint64_t leak_refusals;   /* the secret guard refused a request or a tunnel */
    uint64_t budget_refusals; /* an egress budget refused or cut one */
    uint64_t upstream_errors[PX_M_UP_KINDS];
    uint64_t reloads_ok, reloads_failed;
    uint64_t bytes_up;                    /* request body bytes sent toward upstreams */
    uint64_t bytes_down;                  /* response body bytes sent toward clients */
    px_metrics_hist_t request_seconds;    /* a request's head read to its last byte out */
    px_metrics_hist_t first_byte_seconds; /* a request's head read to the upstream's answer */
} px_metrics_t;

/* What the proxy counts now (gauges), read when the metrics are written. */
typedef struct px_metrics_gauges {
    uint64_t connections;                        /* client connections open */
    uint64_t accepted;                           /* client connections accepted since the start */
    uint64_t leaf_cache_hits, leaf_cache_misses; /* the CA's minted-leaf cache */
} px_metrics_gauges_t;

/* The process's counters (static storage, zero at start). */
px_metrics_t *px_metrics(void);

/* Counts one written network-log event. */
void px_metrics_event(const audit_event_t *ev);

/* The kind of an upstream failure from its reason text (as the log line says it). */
px_metrics_uperr_t px_metrics_up_error(const char *why);

/* Adds one observation of s seconds to h. */
void px_metrics_observe(px_metrics_hist_t *h, double s);

/* Writes m and g in the Prometheus text format into buf (cap bytes, NUL-terminated). Returns the
 * length, or the length it needed (>= cap) when buf was too small (snprintf-style). */
size_t px_metrics_render(const px_metrics_t *m, const px_metrics_gauges_t *g, char *buf,
                         size_t cap);

#endif
