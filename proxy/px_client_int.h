/* Internals shared by the client connection's files: px_client.c (the socket, TLS, reading,
 * timers, the close), px_h1srv.c (the HTTP/1 server side), px_h2srv.c (the HTTP/2 one) and
 * px_connect.c (explicit-proxy CONNECT and tunnels). Nothing else includes this header. */
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
    PX__SOCKS,      /* the SOCKS5 greeting and request (px_connect.c) */
} px__mode_t;

typedef struct px__h1srv px__h1srv_t; /* the HTTP/1 server side (px_h1srv.c) */
typedef struct px__h2srv px__h2srv_t; /* the HTTP/2 server side (px_h2srv.c) */
typedef struct px__tun px__tun_t;     /* a passthrough CONNECT or a tunnel (px_connect.c) */
typedef struct px__socks px__socks_t; /* a SOCKS5 handshake being read (px_connect.c) */

/* Bytes read and not taken yet: a partial head, a pipelined request, a paused body, a
 * ClientHello being gathered, what a tunnel sends first. Capped at PX_IN_MAX. */
typedef struct px__in {
    char *p;
    size_t len, cap;
} px__in_t;

/* What every connection has. What runs on it is one protocol object, made when the protocol is
 * known (the sniff, the ALPN, a CONNECT's answer or an upgrade) and freed when the connection
 * leaves that protocol or closes: h1, h2 or tn. h1 outlives its mode only until it may be freed
 * outside its own calls (a CONNECT is answered inside the parser; an upgrade's exchange finishes
 * after the tunnel began). */
struct px_client {
    px_client_t *prev, *next; /* ctx->clients */
    px_sock_t sock;
    px_tmo_t tmo;            /* handshake, request-head deadline, idle keep-alive, hello */
    px_defer_t defer;        /* input to process again after a pause */
    px_ctx_t *ctx;
    px_scope_t *scope;       /* what it runs under: ctx->conv, or its sandbox's (a reference) */
    px_snapshot_t *snap;     /* scope's snapshot when c last looked (a reference; px__cl_snap) */
    px_upmgr_t *up;          /* scope's upstream pool on c's loop */
    unsigned scope_gen;      /* scope->gen when c last found its source in scope */
    int sb_left;             /* its sandbox went, or c's source left it: no new request */
    uint8_t src[16];         /* its source address, IPv4 mapped (px_srcnet.h) */
    px_log_t *log;           /* its network log: scope->log, or ctx->log before it has a scope */
    px_listener_kind_t kind;
    px__mode_t mode;
    int closing;
    int tls;                 /* the requests are https */
    int socks;               /* came in on the SOCKS listener: its decisions log method SOCKS */
    uint16_t tunnel_port;
    uint16_t orig_port;      /* transparent: the port the client dialed */
    uint8_t tmo_done;        /* the socket closed: tmo is not armed again */
    /* Names, each a string of its own (px__cl_set_name) or px__cl_noname (""): an idle TLS
     * connection keeps its SNI's length, not two PX_HOST_MAX arrays (issue 34's idle memory). */
    char *sni;               /* the ClientHello's server name, normalized */
    char *tunnel;            /* inside an accepted CONNECT: its host */
    px__h1srv_t *h1;         /* PX__HTTP */
    px__h2srv_t *h2;         /* PX__H2 */
    px__tun_t *tn;           /* PX__HELLO, PX__DIAL, PX__TUNNEL */
    px__socks_t *sk;         /* PX__SOCKS: the handshake so far (px_connect.c) */
};

extern char px__cl_noname[1]; /* "": the name not known (px_client.c) */

/* Sets *slot (c->sni or c->tunnel) to a copy of name. Returns 0 or PX_ENOMEM (*slot unchanged). */
int px__cl_set_name(char **slot, const char *name); /* px_client.c */

px_snapshot_t *px__cl_snap_take(px_client_t *c); /* px_client.c */

/* The configuration, upstream pool and budgets of c's scope. The snapshot is c's own reference,
 * taken again only when a reload swapped the scope's (a reload may run on another loop). */
static inline px_snapshot_t *px__cl_snap(px_client_t *c)
{
    if (c->snap != __atomic_load_n(&c->scope->snap, __ATOMIC_ACQUIRE))
        return px__cl_snap_take(c);
    return c->snap;
}
static inline px_upmgr_t *px__cl_up(const px_client_t *c)
{
    return c->up;
}
static inline struct addon_budget_table **px__cl_budgets(px_client_t *c)
{
    return &c->scope->budgets;
}

#define PX__LINGER_MS 5000 /* a closing connection's last bytes may take this long to leave */

/* px_client.c */
void px__cl_close(px_client_t *c);       /* now */
void px__cl_close_flush(px_client_t *c); /* once what was written is out */
void px__cl_timer(px_client_t *c, uint64_t ms); /* armed again unless the socket closed */
void px__cl_timer_stop(px_client_t *c);
void px__cl_read(px_sock_t *s, const char *data, size_t len);
int px__cl_sb_left(px_client_t *c); /* 1: its sandbox went or its source left it: no request */

/* px_h1srv.c */
int px__in_keep(px__in_t *in, const char *data, size_t len); /* PX_ETOOBIG past PX_IN_MAX */
void px__in_drop(px__in_t *in, size_t n);
void px__cl_start_http(px_client_t *c); /* makes c->h1 (an old one goes); closes c on failure */
void px__cl_h1_free(px_client_t *c);    /* outside the parser's and the exchange's calls */
void px__cl_h1_read(px_client_t *c, const char *data, size_t len);
int px__cl_h1_eof(px_client_t *c, int err); /* 1: c stays (its response still goes out) */
void px__cl_h1_drain(px_client_t *c);
int px__cl_h1_mid_head(px_client_t *c); /* 1: part of a head came, no exchange yet */
int px__cl_h1_in_flight(px_client_t *c);
void px__cl_h1_close_after(px_client_t *c); /* the connection ends after this response */
void px__cl_h1_abort(px_client_t *c, const char *reason); /* the exchange, if any */
void px__cl_deferred(px_defer_t *d);
void px__cl_bad_request(px_client_t *c, int status, const char *reason);

/* px_h2srv.c */
void px__cl_start_h2(px_client_t *c);
void px__cl_h2_input(px_client_t *c, const char *data, size_t len);
void px__cl_h2_pump(px_client_t *c);
void px__cl_h2_shut(px_client_t *c, const char *reason);
void px__cl_h2_retire(px_client_t *c); /* GOAWAY; WebSocket streams end, requests finish */
size_t px__cl_h2_streams(const px_client_t *c); /* the streams with an exchange or a tunnel */
void px__cl_h2_free(px_client_t *c);            /* the last close callback */
int px__cl_is_h2c(const char *data, size_t len);
void px__cl_h2c_refuse(px_client_t *c);

/* px_connect.c */
void px__cl_connect(px_client_t *c, px_msg_t *m, const px_pre_t *pre);
/* The same decision for a SOCKS request (c->socks): target[0..tlen) is what the guard scans;
 * the answers are SOCKS replies (px__cl_socks_reply) instead of HTTP ones. */
void px__cl_connect_to(px_client_t *c, px_msg_t *m, const char *target, size_t tlen,
                       const px_pre_t *pre);
void px__cl_hello_input(px_client_t *c, const char *data, size_t len);
/* c's end of tunnel t (taken); in: what the client sent first (taken, may be NULL) */
void px__cl_tunnel_mode(px_client_t *c, px_tunnel_t *t, px__in_t *in);
void px__cl_tun_read(px_client_t *c, const char *data, size_t len);
void px__cl_tun_eof(px_client_t *c, int err);
void px__cl_tun_drain(px_client_t *c);
void px__cl_tun_shut(px_client_t *c);   /* a dial in progress ends */
void px__cl_tun_closed(px_client_t *c); /* the socket is gone: the tunnel lets go of it */
void px__cl_tun_free(px_client_t *c);   /* the last close callback */

/* px_connect.c: SOCKS5 */
void px__cl_socks_input(px_client_t *c, const char *data, size_t len);
void px__cl_socks_reply(px_client_t *c, int rep); /* with c's local address when rep is 0 */
void px__cl_socks_timeout(px_client_t *c);         /* the handshake deadline passed */
void px__cl_socks_free(px_client_t *c);            /* the last close callback */

#endif
