/* Internals shared by px_upstream.c (requests and responses) and px_upconn.c (connections and
 * the pool). Nothing outside these two files includes this header. */
#ifndef PX_UPSTREAM_INT_H
#define PX_UPSTREAM_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "dns/dns_resolve.h"
#include "proxy/px_config.h"
#include "proxy/px_dest.h"
#include "proxy/px_h1.h"
#include "proxy/px_sock.h"
#include "proxy/px_upstream.h"

#define PX__POOL_BUCKETS 64
#define PX__KEY_MAX (PX_HOST_MAX + 16)

typedef struct px_upconn px_upconn_t;

typedef enum px__cstate {
    PX__C_RESOLVE = 0,
    PX__C_CONNECT,
    PX__C_HANDSHAKE,
    PX__C_READY,  /* carrying a request, or idle in the pool */
    PX__C_TUNNEL, /* bytes relayed unread */
} px__cstate_t;

struct px_upmgr {
    px_loop_t *loop;
    const px_config_t *cfg;
    dns_resolver_t *resolver;
    SSL_CTX *tls;
    px_dest_ctx_t dest;
    px_upconn_t *buckets[PX__POOL_BUCKETS];
    size_t idle;
};

struct px_upconn {
    px_sock_t sock;
    uv_timer_t timer;         /* connect, TLS handshake, idle in the pool */
    px_defer_t defer;
    px_upmgr_t *m;
    px__cstate_t state;
    char key[PX__KEY_MAX];
    unsigned bucket;
    char host[PX_HOST_MAX + 1];
    uint16_t port;
    int tls;
    px_upconn_t *pool_next, *pool_prev;
    int in_pool;
    px_upreq_t *req;          /* the request on it, NULL while pooled */
    px_h1_t parser;           /* the responses */
    dns_resolve_req_t *resolving;
    struct sockaddr_storage addrs[DNS_RESOLVE_ADDRS_MAX];
    size_t naddrs, next_addr;
    char *in;                 /* response bytes not delivered yet (a pause, after a 101) */
    size_t in_len;
    px_tunnel_t *tun;
    int reused;               /* came out of the pool */
    int got_bytes;            /* a response byte since it was (re)used */
    int reusable;             /* the last exchange left it clean */
    int keepalive;            /* the final response allows another request */
    int handles;
    int closing;
};

struct px_upreq {
    px_upmgr_t *m;
    const px_up_cbs_t *cbs;   /* NULL once the owner let go (done or abort) */
    void *owner;
    px_upconn_t *conn;
    px_defer_t defer;
    char host[PX_HOST_MAX + 1];
    uint16_t port;
    int tls;
    int raw;
    px_up_body_t body;
    int is_head;
    char *head;               /* the serialized head, kept for one retry on a stale connection */
    size_t head_len;
    char *pend;               /* bytes written before a connection was ready */
    size_t pend_len, pend_cap;
    int ended;                /* the request body ended */
    int resp_done;
    int paused;
    int full;                 /* px_up_full() said 1: on_drain comes */
    int retried;
    int failed;
    char why[320];
};

/* px_upconn.c */
px_upconn_t *px__up_pool_take(px_upmgr_t *m, const char *key);
void px__up_pool_put(px_upconn_t *u);
px_upconn_t *px__up_conn_new(px_upmgr_t *m, const char *key, const char *host, uint16_t port,
                             int tls);
/* A new connection for r: resolve, then dial; failures go to r. */
void px__up_connect_new(px_upreq_t *r, const char *key);
void px__up_conn_close(px_upconn_t *u);
void px__up_key(char *out, size_t cap, const char *host, uint16_t port, int tls, int raw);

/* px_upstream.c */
extern const px_h1_cbs_t px__up_resp_cbs; /* a connection's response parser */
void px__up_req_free(px_upreq_t *r);
void px__up_attach(px_upconn_t *u, px_upreq_t *r);
void px__up_req_fail(px_upreq_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void px__up_deliver(px_upconn_t *u, const char *data, size_t len);
void px__up_conn_read(px_sock_t *s, const char *data, size_t len);
void px__up_conn_eof(px_sock_t *s, int err);
void px__up_conn_drain(px_sock_t *s);

#endif
