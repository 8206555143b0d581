/* The upstream client: one request to host:port (plain or TLS with full verification), on a new
 * connection or an idle pooled one for exactly that host, port and scheme. It resolves through
 * the upstream resolver, refuses forbidden destinations (px_dest.h and airlock's own listeners),
 * connects with a timeout, speaks HTTP/1.1, or HTTP/2 when a TLS upstream picks it in ALPN (one
 * session per host:port shared by concurrent requests as streams), and hands the response to its
 * owner through callbacks: the same heads, bodies and trailers either way. The owner never sees the connection; the connection never sees the owner's
 * objects, only the opaque pointer it passes back.
 *
 * Callbacks come from the loop, never from inside a px_up_* call. After px_up_done() or
 * px_up_abort() nothing more comes. */
#ifndef PX_UPSTREAM_H
#define PX_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "addons/addon.h"
#include "http/px_msg.h"
#include "net/px_tunnel.h"
#include "proxy/px_config.h"

typedef struct px_upreq px_upreq_t;
typedef struct px_upmgr px_upmgr_t;
typedef struct px_loop px_loop_t;
typedef struct px_config px_config_t;
typedef struct dns_resolver dns_resolver_t;
typedef struct ssl_ctx_st SSL_CTX;

typedef struct px_up_cbs {
    /* Connected (TLS done) and the head sent: the wait for the answer starts now. For raw
     * connections (px_up_open_raw): the owner may px_up_tunnel() now. May be NULL. */
    void (*on_ready)(void *owner);
    /* A response head: interim (1xx) or final; m is taken (px_msg_free). From h2: version 2.0,
     * no reason phrase, and PX_MSG_CHUNKED (with no Transfer-Encoding field) when the length is
     * unknown: the body ends with the stream. */
    void (*on_head)(void *owner, px_msg_t *m);
    /* Response body bytes, framing removed (borrowed). */
    void (*on_data)(void *owner, const char *data, size_t len);
    /* The response ended; t (trailers, may be NULL) is borrowed. */
    void (*on_end)(void *owner, const px_fields_t *t);
    /* The request failed: lookup, refused destination, connect, TLS, a reset or a close before
     * the response ended (on h2: its stream reset, a GOAWAY that covers it, the session
     * broken), an invalid response. why is e.g. "Connection failed: ..."
     * (borrowed). Nothing more comes after it. */
    void (*on_error)(void *owner, const char *why);
    /* The request's queue fell below PX_WQ_LOW after px_up_full() had said 1. */
    void (*on_drain)(void *owner);
} px_up_cbs_t;

/* How the request body is framed toward upstream. */
typedef enum px_up_body {
    PX_UP_BODY_NONE = 0,
    PX_UP_BODY_LENGTH, /* Content-Length: the caller's header goes out as is */
    PX_UP_BODY_CHUNKED /* chunked: px_up_data() pieces are framed here */
} px_up_body_t;

/* The shared state of every upstream request: resolver, TLS context, pool. */
px_upmgr_t *px_upmgr_new(px_loop_t *loop, const px_config_t *cfg, dns_resolver_t *resolver,
                         SSL_CTX *tls);

/* This machine's own addresses and the proxy IP (network order), refused as destinations. own
 * is copied. */
void px_upmgr_set_own(px_upmgr_t *m, const struct px_cidr *own, size_t n_own, uint32_t proxy_ip);

/* Closes every pooled connection (requests in flight end with their owners). */
void px_upmgr_close_idle(px_upmgr_t *m);
void px_upmgr_free(px_upmgr_t *m);

/* Idle pooled connections now. */
size_t px_upmgr_idle(const px_upmgr_t *m);

/* Starts a request to host (normalized, borrowed)/port over TLS or not, with the head in req
 * (borrowed for the call: serialized now, fields marked removed are left out). is_head: the
 * response has no body. expect: the request asks for 100-continue. Returns the request, or NULL
 * (out of memory: no callback). */
px_upreq_t *px_up_open(px_upmgr_t *m, const char *host, uint16_t port, int tls,
                       const addon_req_t *req, px_up_body_t body, int is_head,
                       const px_up_cbs_t *cbs, void *owner);

/* A raw connection to host:port for a passthrough tunnel: on_ready when connected. */
px_upreq_t *px_up_open_raw(px_upmgr_t *m, const char *host, uint16_t port,
                           const px_up_cbs_t *cbs, void *owner);

/* Request body bytes (copied), framed as px_up_open said. */
void px_up_data(px_upreq_t *r, const char *data, size_t len);

/* The request body ended (trailers t may be NULL; sent on a chunked body only). Only the first
 * call counts. */
void px_up_end(px_upreq_t *r, const px_fields_t *t);

/* Bytes queued toward upstream; 1 when above the mark (PX_WQ_HIGH for an HTTP/1.1 connection,
 * PX_H2C_QUEUE_HIGH for an h2 stream; then on_drain comes). */
size_t px_up_queued(const px_upreq_t *r);
int px_up_full(const px_upreq_t *r);

/* Stops (1) or restarts (0) reading the response: the client is slow to take it. On h2 only
 * this stream stops: its window stays shut, the others go on. */
void px_up_pause(px_upreq_t *r, int pause);

/* After a 101 (or on_ready of a raw connection): the connection becomes side of tunnel t; the
 * bytes that followed the 101 head go to the other side now. The request object is gone. */
void px_up_tunnel(px_upreq_t *r, px_tunnel_t *t, int side);

/* The exchange ended cleanly: the connection goes back to the pool when it can carry another
 * request (both messages complete, keep-alive); an h2 stream is given back. r is gone. */
void px_up_done(px_upreq_t *r);

/* The exchange is abandoned: the connection closes (on h2: the stream is reset with CANCEL,
 * the session goes on). r is gone. */
void px_up_abort(px_upreq_t *r);

#endif
