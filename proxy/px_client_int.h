/* Internals shared by the client connection's files: px_client.c (the socket, TLS, reading,
 * timers, the close), px_h1srv.c (the HTTP/1 server side) and px_connect.c (explicit-proxy
 * CONNECT and tunnels). Nothing else includes this header. */
#ifndef PX_CLIENT_INT_H
#define PX_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/px_client.h"
#include "http/px_h1.h"
#include "proxy/px_ctx.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_precheck.h"
#include "proxy/px_scope.h"
#include "net/px_sock.h"
#include "net/px_tunnel.h"
#include "proxy/px_upstream.h"
#include "proxy/px_xchg.h"

typedef enum px__mode {
    PX__SNIFF = 0,  /* the first bytes decide: TLS or not */
    PX__HANDSHAKE,  /* TLS handshake with the client */
    PX__HTTP,       /* HTTP/1 requests */
    PX__HELLO,      /* passthrough CONNECT: reading the ClientHello for its SNI */
    PX__DIAL,       /* passthrough CONNECT: connecting upstream */
    PX__TUNNEL,     /* bytes relayed unread */
    PX__H2,         /* HTTP/2 streams (px_h2srv.c) */
} px__mode_t;

typedef struct px__h2s px__h2s_t; /* an HTTP/2 stream's exchange (px_h2srv.c) */
typedef struct px_h2 px_h2_t;

struct px_client {
    px_client_t *prev, *next; /* ctx->clients */
    px_sock_t sock;
    uv_timer_t timer;        /* handshake, request-head deadline, idle keep-alive, hello */
    px_defer_t defer;        /* input to process again after a pause */
    px_ctx_t *ctx;
    px_scope_t *scope;       /* what it runs under: ctx->scope, or its sandbox's (a reference) */
    unsigned scope_gen;      /* scope->gen when c last found its source in scope */
    int sb_left;             /* its sandbox went, or c's source left it: no new request */
    uint8_t src[16];         /* its source address, IPv4 mapped (px_srcnet.h) */
    px_log_t *log;           /* its network log: scope->log, or ctx->log before it has a scope */
    px_listener_kind_t kind;
    px__mode_t mode;
    int handles;
    int closing;
    int tls;                 /* the requests are https */
    char sni[PX_HOST_MAX + 1];
    char tunnel[PX_HOST_MAX + 1]; /* inside an accepted CONNECT: its host */
    uint16_t tunnel_port;
    uint16_t orig_port;      /* transparent: the port the client dialed */
    char connect_url[PX_HOST_MAX + 8]; /* the CONNECT target host:port, for log lines */
    /* bytes read and not taken yet (a partial head, a pipelined request, a paused body) */
    char *in;
    size_t in_len, in_cap;
    /* HTTP/1 */
    px_h1_t parser;
    px_xchg_t *x;            /* the exchange of the request being read or answered */
    int body_paused;
    int resp_chunked;        /* the response going out is re-framed in chunks */
    int close_after;         /* the connection ends after this response */
    /* HTTP/2 */
    px_h2_t *h2;
    px__h2s_t *h2s;          /* the streams with an exchange */
    size_t h2n;
    px_defer_t h2pump;       /* output to take from the codec, from the loop */
    int h2_busy;             /* inside px_h2_feed() */
    /* tunnels */
    px_tunnel_t *tun;
    px_upreq_t *dial;        /* passthrough: the upstream being connected */
    int eof;                 /* the client half-closed after a whole request */
    int timer_closed;
};

/* The configuration, upstream pool and budgets of c's scope. */
static inline px_snapshot_t *px__cl_snap(const px_client_t *c)
{
    return c->scope->snap;
}
static inline px_upmgr_t *px__cl_up(const px_client_t *c)
{
    return c->scope->up;
}
static inline struct addon_budget_table **px__cl_budgets(px_client_t *c)
{
    return &c->scope->budgets;
}

#define PX__LINGER_MS 5000 /* a closing connection's last bytes may take this long to leave */

/* px_client.c */
void px__cl_close(px_client_t *c);       /* now */
void px__cl_close_flush(px_client_t *c); /* once what was written is out */
void px__cl_timer(px_client_t *c, uint64_t ms);
void px__cl_read(px_sock_t *s, const char *data, size_t len);
void px__cl_start_http(px_client_t *c);
int px__cl_sb_left(px_client_t *c); /* 1: its sandbox went or its source left it: no request */

/* px_h1srv.c */
extern const px_h1_cbs_t px__cl_req_cbs;
extern const px_down_ops_t px__cl_down;
int px__cl_in_keep(px_client_t *c, const char *data, size_t len);
void px__cl_in_drop(px_client_t *c, size_t n);
size_t px__cl_http_input(px_client_t *c, const char *data, size_t len);
void px__cl_process(px_client_t *c);
void px__cl_deferred(px_defer_t *d);
void px__cl_bad_request(px_client_t *c, int status, const char *reason);

/* px_h2srv.c */
void px__cl_start_h2(px_client_t *c);
void px__cl_h2_input(px_client_t *c, const char *data, size_t len);
void px__cl_h2_pump(px_client_t *c);
void px__cl_h2_shut(px_client_t *c, const char *reason);
void px__cl_h2_retire(px_client_t *c); /* GOAWAY; WebSocket streams end, requests finish */
int px__cl_is_h2c(const char *data, size_t len);
void px__cl_h2c_refuse(px_client_t *c);

/* px_connect.c */
void px__cl_connect(px_client_t *c, px_msg_t *m, const px_pre_t *pre);
void px__cl_hello(px_client_t *c);
void px__cl_tunnel_mode(px_client_t *c, px_tunnel_t *t);

#endif
