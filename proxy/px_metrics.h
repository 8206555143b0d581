/* The process's metrics (`airlock run --metrics ADDR`, docs/metrics.md): counters the proxy
 * bumps where it decides, two latency histograms, and the text the Prometheus exposition format
 * (version 0.0.4) gives them. Labels come only from fixed sets (a decision, an event kind, an
 * error kind, a TLS failure reason) and the sandboxes' names (--sandboxes: the operator's
 * folders, at most PX_METRICS_SANDBOXES_MAX of them named, the rest counted together): no host
 * or path ever becomes a label, so the number of series is bounded whatever the traffic.
 *
 * Each loop counts in its own px_metrics_t (the engine's, or a worker's registered with
 * px_metrics_thread_begin()), so the counters are plain integers bumped by one thread; the
 * metrics page adds them up (px_metrics_sum()). Counting costs an increment and, for the
 * histograms, a short scan of the bucket bounds. */
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

/* Why a client's TLS handshake failed (px_metrics_tls_reason() tells it). */
typedef enum px_metrics_tlsfail {
    PX_M_TLS_UNTRUSTED = 0,  /* the client rejected airlock's certificate (a certificate alert,
                                or it closed right after the certificate) */
    PX_M_TLS_UNKNOWN_NAME,   /* airlock refused the name the ClientHello asked for */
    PX_M_TLS_NO_SNI,         /* the same refusal for a ClientHello that named no server */
    PX_M_TLS_PROTOCOL,       /* versions, ciphers, malformed records, another client alert */
    PX_M_TLS_CLIENT_ABORTED, /* the client went away mid-handshake, without an alert */
    PX_M_TLS_OTHER,
    PX_M_TLS_REASONS
} px_metrics_tlsfail_t;

/* How a call to the decision webhook (--decide-url, proxy/px_decide.h) ended. */
typedef enum px_metrics_decide {
    PX_M_DECIDE_ALLOW = 0, /* it answered allow */
    PX_M_DECIDE_DENY,      /* it answered deny */
    PX_M_DECIDE_TIMEOUT,   /* no answer within the call's time-out or the hold's deadline */
    PX_M_DECIDE_ERROR,     /* no connection, a failed exchange, a status that is not 2xx */
    PX_M_DECIDE_MALFORMED, /* a 2xx answer that is not the JSON asked for (or over its cap) */
    PX_M_DECIDE_OUTCOMES
} px_metrics_decide_t;

/* Sandboxes (--sandboxes) with series of their own; decisions in any further sandbox are
 * counted under the one name PX_METRICS_SANDBOX_OTHER, so the series stay bounded. */
#define PX_METRICS_SANDBOXES_MAX 64
#define PX_METRICS_SANDBOX_NAME_MAX 64 /* the log's own cap on a sandbox name, NUL included */
#define PX_METRICS_SANDBOX_OTHER "_other"

typedef struct px_metrics_sandbox {
    char name[PX_METRICS_SANDBOX_NAME_MAX];
    uint64_t requests[AUDIT_EV_REJECTED + 1]; /* request-shaped events by verdict */
} px_metrics_sandbox_t;

#define PX_METRICS_THREADS_MAX 64 /* worker loops with counters of their own */

#define PX_M_HIST_BUCKETS 12 /* upper bounds: 5 ms .. 60 s (px_metrics.c), then +Inf */

typedef struct px_metrics_hist {
    uint64_t counts[PX_M_HIST_BUCKETS + 1]; /* per bucket (not cumulative); the last is +Inf */
    uint64_t n;
    double sum; /* seconds */
} px_metrics_hist_t;

typedef struct px_metrics {
    /* one per network-log event: [kind][verdict] (audit_event.h's enums) */
    uint64_t events[AUDIT_EV_KIND_LAST + 1][AUDIT_EV_REJECTED + 1];
    uint64_t leak_refusals;   /* the secret guard refused a request or a tunnel */
    uint64_t budget_refusals; /* an egress budget refused or cut one */
    uint64_t upstream_errors[PX_M_UP_KINDS];
    uint64_t reloads_ok, reloads_failed;
    uint64_t bytes_up;                    /* request body bytes sent toward upstreams */
    uint64_t bytes_down;                  /* response body bytes sent toward clients */
    px_metrics_hist_t request_seconds;    /* a request's head read to its last byte out */
    px_metrics_hist_t first_byte_seconds; /* a request's head read to the upstream's answer */
    uint64_t tls_failures[PX_M_TLS_REASONS];
    int64_t h2_streams; /* HTTP/2 streams open on client connections (a gauge) */
    px_metrics_sandbox_t sandboxes[PX_METRICS_SANDBOXES_MAX];
    size_t nsandboxes;
    px_metrics_sandbox_t sandbox_other; /* every sandbox past the first MAX seen */
    uint64_t accepted;                  /* client connections this loop accepted */
    /* px_metrics_sum() only: each loop's `accepted` (the engine's first), for
     * airlock_loop_connections_total{loop} */
    uint64_t loops_accepted[PX_METRICS_THREADS_MAX + 1];
    size_t nloops;
    /* the decision webhook's (px_decide.c, on the engine's loop only: px_metrics_sum() copies
     * them with the engine's struct) */
    uint64_t decide_calls[PX_M_DECIDE_OUTCOMES];
    int64_t decide_breaker_open; /* gauge: 1 while the circuit breaker is open or half-open */
    int64_t decide_in_flight;    /* gauge: calls under way */
} px_metrics_t;

/* What the proxy counts now (gauges), read when the metrics are written. */
typedef struct px_metrics_gauges {
    uint64_t connections;                        /* client connections open */
    uint64_t accepted;                           /* client connections accepted since the start */
    uint64_t leaf_cache_hits, leaf_cache_misses; /* the CA's minted-leaf cache */
} px_metrics_gauges_t;

/* The calling loop's counters: a worker's own, else the engine's (static storage, zero at
 * start). */
px_metrics_t *px_metrics(void);

/* The calling thread (a worker's loop) counts into m (zeroed, kept until px_metrics_thread_end
 * on the same thread). 0, or -1 when PX_METRICS_THREADS_MAX are counting already. */
int px_metrics_thread_begin(px_metrics_t *m);
void px_metrics_thread_end(void);

/* Every loop's counters added up into out: what the metrics page shows. */
void px_metrics_sum(px_metrics_t *out);

/* Counts one written network-log event. */
void px_metrics_event(const audit_event_t *ev);

/* Counts one network-log event of sandbox name (NUL-terminated, borrowed; "" or NULL: the
 * host's log, not counted here): its request-shaped events by verdict. */
void px_metrics_sandbox_event(const char *name, const audit_event_t *ev);

/* Why a client's TLS handshake failed, from what the connection knows when it fails: alert is
 * the client's alert (px_tls_peer_alert(), -1: none), sent_cert 1 when airlock's certificate
 * went out (px_tls_sent_certificate()), has_sni 1 when the ClientHello named a server, err
 * the TLS error text (px_sock_tls_error(); NULL or "" when none). */
px_metrics_tlsfail_t px_metrics_tls_reason(int alert, int sent_cert, int has_sni, const char *err);

/* Counts one failed client TLS handshake. */
void px_metrics_tls_failed(px_metrics_tlsfail_t why);

/* An HTTP/2 stream opened (+1) or closed (-1) on a client connection. */
void px_metrics_h2_stream(int delta);

/* The kind of an upstream failure from its reason text (as the log line says it). */
px_metrics_uperr_t px_metrics_up_error(const char *why);

/* Adds one observation of s seconds to h. */
void px_metrics_observe(px_metrics_hist_t *h, double s);

/* Writes m and g in the Prometheus text format into buf (cap bytes, NUL-terminated). Returns the
 * length, or the length it needed (>= cap) when buf was too small (snprintf-style). */
size_t px_metrics_render(const px_metrics_t *m, const px_metrics_gauges_t *g, char *buf,
                         size_t cap);

#endif
