/* The context every client connection and exchange of one loop shares: the loop, the
 * configuration, the TLS contexts and the process's CA, the list of connections, and the scope
 * of single-conversation mode. The engine (app/px_engine.h) owns one and fills it in; the
 * connections read it and change only their own counters here (the list, the HTTP/2 header
 * bytes, the TLS REJECTED memory, which every loop shares). Nothing here knows about sandboxes: a
 * connection asks scope_for() for its scope when there is one to choose.
 *
 * With `--workers N` each of the N loops has a context of its own (app/px_worker.c): the
 * configuration, the log, the CA, the TLS contexts and the scopes are the engine's, shared;
 * the loop, the list of connections, the resolver and the upstream pools are the loop's. */
#ifndef PX_CTX_H
#define PX_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "base/px_limits.h"
#include "net/px_loop.h"
#include "proxy/px_config.h"
#include "proxy/px_scope.h"

typedef struct px_ctx px_ctx_t;
typedef struct px_client px_client_t;
typedef struct ssl_ctx_st SSL_CTX;

struct px_ctx {
    px_loop_t loop;
    const px_config_t *cfg;
    px_log_t *log;       /* the process's log (--log; the conversation's in one-scope mode) */
    ca_t *ca;            /* the process's CA (a scope may have its own) */
    SSL_CTX *tls_server; /* client side: airlock is the server */
    SSL_CTX *tls_client; /* upstream side */
    uint32_t proxy_ip;   /* network order */
    int stopping;
    px_scope_t scope; /* single-conversation mode: every connection's scope (the engine's) */
    px_scope_t *conv; /* that scope: &scope in the engine's context, the engine's in a worker's */
    int worker;       /* 0: the engine's loop; 1..N-1: a worker's (--workers) */
    /* a worker's upstream pool for a scope (its loop's own); NULL: the scope's (the engine's) */
    struct px_upmgr *(*pool_for)(px_ctx_t *ctx, px_scope_t *s);
    void *pool_arg;
    size_t *conns_all;      /* the connections of every loop (atomic; NULL: nclients is all) */
    uint64_t *accepted_all; /* ... and those accepted so far (atomic; with conns_all) */
    /* --sandboxes: the scope of a source address (a reference for the caller, taken while the
     * scope could not go), or NULL when the source is in none. NULL when every connection is
     * in `conv`. */
    px_scope_t *(*scope_for)(px_ctx_t *ctx, const uint8_t src[16]);
    void *scope_arg;       /* scope_for's */
    size_t h2_heads;       /* decoded HTTP/2 request header bytes held (px_h2_share) */
    struct px_hold *holds; /* requests held for a decider (proxy/px_hold.h); NULL: none held */
    px_client_t *clients;  /* every client connection, for the shutdown */
    size_t nclients;
    size_t nclients_peak; /* highest since the last heap trim */
    uint64_t next_id;     /* connections accepted so far */
    /* TLS REJECTED lines written lately: at most one per host per PX_REJECT_EVERY_MS, whichever
     * loop saw the handshake (rejected_of: the context whose memory every loop uses, the
     * engine's; NULL: this one; px_client.c locks it) */
    struct {
        char host[PX_HOST_MAX + 1];
        uint64_t at;
    } rejected[PX_REJECT_HOSTS];
    size_t rejected_next;
    px_ctx_t *rejected_of;
};

#endif
