/* The engine: one libuv loop running the DNS responder and the proxy listeners, and the
 * context every connection and exchange of that loop shares; with --workers N, N-1 more loops
 * that serve connections beside it (app/px_worker.h). */
#ifndef PX_ENGINE_H
#define PX_ENGINE_H

#include <stdint.h>
#include <uv.h>

#include "proxy/px_config.h"
#include "app/px_sandbox.h"
#include "proxy/px_ctx.h"
#include "proxy/px_log.h"
#include "net/px_loop.h"
#include "proxy/px_precheck.h"

typedef struct px_engine px_engine_t;
typedef struct px_snapshot px_snapshot_t;
typedef struct px_upmgr px_upmgr_t;
typedef struct px_client px_client_t;
typedef struct dns_server dns_server_t;
typedef struct dns_resolver dns_resolver_t;
typedef struct ca ca_t;
typedef struct ssl_ctx_st SSL_CTX;

#define PX_ENGINE_LISTENERS 8 /* TCP listeners: http, https, proxy, transparent, socks */

typedef struct px_listener {
    uv_tcp_t tcp;
    px_engine_t *eng;
    px_listener_kind_t kind;
} px_listener_t;

/* The engine: the context its connections share (ctx, first), and what only it touches. */
struct px_engine {
    px_ctx_t ctx;
    px_cidr_t own[64];          /* the machine's own addresses (refused upstream) */
    size_t n_own;
    px_listener_t listeners[PX_ENGINE_LISTENERS];
    int nlisteners;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_check_t log_kick;        /* hands the loop turn's log lines to the writer */
    uv_timer_t log_timer;       /* hands lines left pending to the writer within PX_LOG_DELAY_MS */
    uv_timer_t trim;            /* returns a finished burst's heap to the OS */
    dns_server_t *dns;
    dns_resolver_t *resolver;
    px_sandboxes_t sandboxes;   /* --sandboxes (px_sandbox.h) */
    struct px_metrics_http *metrics; /* --metrics: its listener (px_metrics_http.h), or NULL */
    struct px_control *control;      /* --control: the deciders' socket (px_control.h), or NULL */
    struct px_decide *decide;        /* --decide-url: the decision webhook (px_decide.h), or NULL */
    uint64_t reads_seen;        /* loop.reads at the last trim check */
    uint64_t reads_trimmed;     /* ... and at the last trim */
    size_t conns_peak;          /* --workers: every loop's connections, highest seen by the trim */
    struct px_secretfetch *secrets; /* values fetched from AWS (px_secretfetch.h), or NULL */
    int nworkers;                   /* loops serving connections, the engine's included */
    struct px_workers *workers;     /* the other nworkers-1 (px_worker.h), or NULL */
};

/* Runs airlock until SIGTERM/SIGINT. Borrows cfg. Returns the process exit code: 0 after a
 * clean shutdown, 1 when start-up failed (the reason went to stderr). */
int px_engine_run(const px_config_t *cfg);

#endif
