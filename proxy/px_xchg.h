/* An exchange: one request and its response, with the request's state and the response's state
 * kept apart so that the two directions run independently (the upstream may answer at any time;
 * the request body goes on flowing while it does). It runs the addons (policy, credentials, body
 * filters) on the request, answers itself when a request is refused, talks to the upstream
 * client, relays the response, keeps its own timers and writes the one log line.
 *
 * The side that carries the client (an HTTP/1 connection, later an HTTP/2 stream) creates it
 * and implements px_down_ops_t; the exchange calls those to send the response. Several
 * exchanges may exist on one client connection. */
#ifndef PX_XCHG_H
#define PX_XCHG_H

#include <stddef.h>
#include <stdint.h>

#include "http/px_msg.h"
#include "proxy/px_precheck.h"
#include "net/px_tunnel.h"

typedef struct px_xchg px_xchg_t;
typedef struct px_ctx px_ctx_t;

/* A response head going to the client. */
typedef enum px_resp_body {
    PX_RESP_NONE = 0,     /* no body (HEAD, 1xx, 204, 304, or a bodiless answer) */
    PX_RESP_LENGTH,       /* length bytes */
    PX_RESP_CHUNKED,      /* length unknown: pieces until end */
    PX_RESP_UNTIL_CLOSE,  /* length unknown, and the client connection closes after it */
} px_resp_body_t;

typedef struct px_resp {
    int status;
    const px_msg_t *fields; /* the fields to pass on (hop-by-hop ones are dropped); may be NULL */
    const char *reason;     /* may be NULL: the standard phrase */
    size_t reason_len;
    const char *ctype;      /* airlock's own answers: the Content-Type (NULL otherwise) */
    px_resp_body_t body;
    uint64_t length;        /* PX_RESP_LENGTH */
    int close;              /* the client connection ends after this response */
    int upgrade;            /* 101 for a WebSocket upgrade: Connection/Upgrade are kept */
} px_resp_t;

typedef struct px_down_ops {
    /* Sends a response head (interim or final). */
    void (*head)(void *down, const px_resp_t *r);
    /* Sends response body bytes (borrowed). */
    void (*data)(void *down, const char *data, size_t len);
    /* Ends the response (trailers t may be NULL). */
    void (*end)(void *down, const px_fields_t *t);
    /* 1 when what is queued toward the client is above its high mark (then drain comes). */
    int (*full)(void *down);
    /* Stops (1) or restarts (0) delivering request body bytes. */
    void (*pause_body)(void *down, int pause);
    /* After a 101: the client side becomes side 0 of t; what was read after the request goes
     * into t now. */
    void (*tunnel)(void *down, px_tunnel_t *t);
    /* The exchange is over (from the loop, never inside a px_xchg_* call). reuse 1: the client
     * connection may carry another request; 0: it closes once flushed; -1: it closes now (the
     * client stopped reading). The exchange is freed right after this returns. */
    void (*finished)(void *down, int reuse);
} px_down_ops_t;

typedef struct px_log px_log_t;
typedef struct px_snapshot px_snapshot_t;
typedef struct px_upmgr px_upmgr_t;

/* Where the request came from, for the pre-checks and the log; and the sandbox's own log,
 * configuration and upstream pool it is decided, logged and sent with. */
typedef struct px_xchg_from {
    const px_down_ops_t *ops;
    void *down;
    px_pre_ctx_t pre;     /* borrowed for the call */
    px_log_t *log;        /* borrowed: outlives the exchange */
    px_snapshot_t *snap;  /* the configuration in force (the exchange takes a reference) */
    px_upmgr_t *up;       /* borrowed: outlives the exchange */
    struct addon_budget_table **budgets; /* where the egress budget counters live (outlives it) */
} px_xchg_from_t;

/* Starts an exchange for request head m (taken) whose pre-check result is pre (copied). Bodies
 * then come with px_xchg_body()/px_xchg_body_end(). Returns the exchange, or NULL when out of
 * memory (m is freed; the caller closes the connection). */
px_xchg_t *px_xchg_start(px_ctx_t *ctx, const px_xchg_from_t *from, px_msg_t *m,
                         const px_pre_t *pre);

/* Request body bytes, framing removed (borrowed). */
void px_xchg_body(px_xchg_t *x, const char *data, size_t len);

/* The request body ended; trailers t (may be NULL) are borrowed. */
void px_xchg_body_end(px_xchg_t *x, const px_fields_t *t);

/* The request's framing was broken (the client connection will close); reason is static. */
void px_xchg_body_error(px_xchg_t *x, const char *reason);

/* The client's queue fell below the low-water mark. */
void px_xchg_drain(px_xchg_t *x);

/* The client went away or its connection is closing (reason for the log, e.g. "Client
 * disconnected."). The exchange ends at once; no px_down_ops_t call comes after this. */
void px_xchg_abort(px_xchg_t *x, const char *reason);


#endif
