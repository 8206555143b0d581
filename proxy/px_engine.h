/* The engine: one libuv loop running the DNS responder and the proxy listeners, and the
 * context every connection and exchange of that loop shares. */
#ifndef PX_ENGINE_H
#define PX_ENGINE_H

#include <stdint.h>
#include <uv.h>

#include "proxy/px_config.h"
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

typedef struct px_listener {
    uv_tcp_t tcp;
    px_engine_t *eng;
    px_listener_kind_t kind;
} px_listener_t;

/* The loop context: read by the connections and exchanges of this loop, changed only here. */
struct px_engine {
    px_loop_t loop;
    const px_config_t *cfg;
    px_log_t *log;
    px_snapshot_t *snap;        /* current configuration (a reference) */
    px_upmgr_t *up;             /* upstream requests and their pool */
    struct addon_budget_table *budgets; /* egress budget counters, kept across reloads; NULL
                                           until a policy sets budgets */
    ca_t *ca;
    SSL_CTX *tls_server;        /* client side: airlock is the server */
    SSL_CTX *tls_client;        /* upstream side */
    uint32_t proxy_ip;          /* network order */
    px_cidr_t own[64];          /* the machine's own addresses (refused upstream) */
    size_t n_own;
    int stopping;
    /* the engine's own */
    px_listener_t listeners[4];
    int nlisteners;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_check_t log_kick;        /* hands the loop turn's log lines to the writer */
    uv_timer_t log_timer;       /* hands lines left pending to the writer within PX_LOG_DELAY_MS */
    uv_timer_t trim;            /* returns a finished burst's heap to the OS */
    dns_server_t *dns;
    dns_resolver_t *resolver;
    size_t h2_heads;              /* decoded HTTP/2 request header bytes held (px_h2_share) */
    struct px_sandbox *sandboxes; /* --sandboxes: every sandbox (px_sandbox.h) */
    size_t nsandboxes;          /* ... not removed */
    px_client_t *clients;       /* every client connection, for the shutdown */
    size_t nclients;
    size_t nclients_peak;       /* highest since the last heap trim */
    uint64_t next_id;           /* connections accepted so far */
    uint64_t reads_seen;        /* loop.reads at the last trim check */
    uint64_t reads_trimmed;     /* ... and at the last trim */
    /* TLS REJECTED lines written lately: at most one per host per PX_REJECT_EVERY_MS */
    struct {
        char host[PX_HOST_MAX + 1];
        uint64_t at;
    } rejected[PX_REJECT_HOSTS];
    size_t rejected_next;
};

/* Runs airlock until SIGTERM/SIGINT. Borrows cfg. Returns the process exit code: 0 after a
 * clean shutdown, 1 when start-up failed (the reason went to stderr). */
int px_engine_run(const px_config_t *cfg);

/* A reference to the configuration now in force (SIGHUP swaps it; a request keeps its own). */
px_snapshot_t *px_engine_snapshot_ref(px_engine_t *eng);

/* Client connections report themselves (px_client.c). */
void px_engine_client_added(px_engine_t *eng, px_client_t *c);
void px_engine_client_removed(px_engine_t *eng, px_client_t *c);

#endif
