/* Internals shared by the upstream client's files: px_upstream.c (the requests' API),
 * px_upconn.c (connections, the pool, placing and failing requests), and the two protocols
 * behind one interface each, px_uph1.c (HTTP/1.1) and px_uph2.c (HTTP/2, with the sharing of
 * its sessions and dials). Nothing outside these files includes this header. */
#ifndef PX_UPSTREAM_INT_H
#define PX_UPSTREAM_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "dns/dns_resolve.h"
#include "proxy/px_config.h"
#include "proxy/px_dest.h"
#include "http/px_h1.h"
#include "http/px_h2cli.h"
#include "net/px_sock.h"
#include "proxy/px_upstream.h"

#define PX__POOL_BUCKETS 64
#define PX__KEY_MAX (PX_HOST_MAX + 16)

typedef struct px_upconn px_upconn_t;

/* The request side of a protocol: what carries a request once it landed on a connection
 * (HTTP/1.1) or a stream (HTTP/2). Picked once, when it lands (r->ops); the request API calls
 * only these, so it never knows which protocol carries the request. */
typedef struct px__up_stream_ops {
    /* Body bytes (len > 0, r not failed), framed as the protocol wants. */
    void (*data)(px_upreq_t *r, const char *data, size_t len);
    /* The body ended (r not failed); trailers t may be NULL (borrowed). */
    void (*end)(px_upreq_t *r, const px_fields_t *t);
    /* Bytes queued toward upstream for r, and the mark above which px_up_full() says 1. */
    size_t (*queued)(const px_upreq_t *r);
    size_t high;
    /* Stops (1) or restarts (0) reading r's response. */
    void (*pause)(px_upreq_t *r, int pause);
    /* r leaves its carrier (r->ops and r->conn go NULL): clean 1 gives it back (the connection
     * pooled, the stream closed), 0 cancels (the connection closes, the stream is reset). */
    void (*release)(px_upreq_t *r, int clean);
} px__up_stream_ops_t;

/* The connection side of a protocol. A new connection is HTTP/1.1 (px__up_h1_conn) until its
 * TLS handshake picks h2; px_upconn.c's socket callbacks call these (a tunnel aside). */
typedef struct px__up_conn_ops {
    /* r lands on u (READY): the head and what r wrote so far go out; on_ready from the loop. */
    void (*attach)(px_upconn_t *u, px_upreq_t *r);
    void (*read)(px_upconn_t *u, const char *data, size_t len);
    void (*eof)(px_upconn_t *u, int err);
    /* The socket's queue fell below its low mark. */
    void (*flush)(px_upconn_t *u);
    int multi; /* carries several requests: found through the shared list, not the pool */
} px__up_conn_ops_t;

/* What the manager remembers of a key's last TLS handshake: whether the upstream picked h2,
 * so requests only wait for a connection in progress when it may be shared. */
typedef struct px__alpn {
    char key[PX__KEY_MAX];
    int h1; /* the upstream picked http/1.1 (or nothing) */
} px__alpn_t;

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
    /* connections that may carry several requests at once: h2 ones with streams, and TLS
     * dials that may turn out h2 (requests of the same key wait on those) */
    px_upconn_t *shared[PX__POOL_BUCKETS];
    px__alpn_t alpn[PX__POOL_BUCKETS]; /* one key per bucket, the last one seen */
};

struct px_upconn {
    px_sock_t sock;
    const px__up_conn_ops_t *ops; /* its protocol: HTTP/1.1 until the handshake picks h2 */
    uv_timer_t timer;             /* connect, TLS handshake, idle in the pool */
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
    px_upreq_t *req; /* the request on it, NULL while pooled */
    px_h1_t parser;  /* the responses */
    dns_resolve_req_t *resolving;
    struct sockaddr_storage addrs[DNS_RESOLVE_ADDRS_MAX];
    size_t naddrs, next_addr;
    char *in; /* response bytes not delivered yet (a pause, after a 101) */
    size_t in_len;
    px_tunnel_t *tun;
    int reused;     /* came out of the pool */
    int got_bytes;  /* a response byte since it was (re)used */
    int reusable;   /* the last exchange left it clean */
    int keepalive;  /* the final response allows another request */
    int delivering; /* inside px__deliver (px_uph1.c): response bytes are being read */
    int pool_later; /* released clean meanwhile: pooled once the bytes read are all its own */
    int handles;
    int closing;
    /* HTTP/2 (px_uph2.c) */
    px_h2c_t *h2;        /* the upstream picked h2: req stays NULL, h2reqs carry streams */
    px_upreq_t *h2reqs;  /* requests with a stream on it */
    px_upreq_t *waiters; /* requests waiting for this dial to tell h2 or not */
    size_t nwaiters;
    px_upconn_t *sh_next, *sh_prev;
    int in_shared;
    int h1only;       /* offered http/1.1 alone (a WebSocket upgrade) */
    px_defer_t flush; /* the codec's output to the socket */
    px_quiet_t quiet; /* pooled h2: the codec gives its pages back once the session is quiet */
    char peer[48];    /* "ip:port" it is connected to, told once (px_up_peer); "": not yet */
};

struct px_upreq {
    px_upmgr_t *m;
    const px_up_cbs_t *cbs; /* NULL once the owner let go (done or abort) */
    void *owner;
    px_upconn_t *conn;
    const px__up_stream_ops_t *ops; /* its carrier; NULL until it lands (bytes wait in pend) */
    px_defer_t defer;
    char host[PX_HOST_MAX + 1];
    uint16_t port;
    int tls;
    int raw;
    px_up_body_t body;
    int is_head;
    char *head; /* the serialized head, kept for one retry on a stale connection */
    size_t head_len;
    char *pend; /* bytes written before a connection was ready */
    size_t pend_len, pend_cap;
    int ended; /* the request body ended */
    int resp_done;
    int paused;
    int full; /* px_up_full() said 1: on_drain comes */
    int retried;
    int failed;
    char why[320];
    /* HTTP/2 (px_uph2.c) */
    int h2ok;                      /* may go over h2: TLS, not raw, not a WebSocket upgrade */
    px_h2c_req_t *h2head;          /* the head for h2, one block (until the response head) */
    px_h2cs_t *st;                 /* its stream, on an h2 connection */
    px_upconn_t *wait;             /* the dial it waits on (not its conn) */
    px_upreq_t *h2_next, *h2_prev; /* the connection's streams, or its dial's waiters */
    px_fields_t *trailers;         /* px_up_end's trailers, before a connection was ready */
    px_defer_t resume;             /* held response bytes after a pause */
};

/* Bytes of r queued toward upstream: kept until it lands, plus its carrier's queue (before it
 * lands: its dial's socket's, the TLS handshake). */
static inline size_t px__up_queued(const px_upreq_t *r)
{
    if (r->ops != NULL)
        return r->pend_len + r->ops->queued(r);
    return r->pend_len + (r->conn != NULL ? px_sock_queued(&r->conn->sock) : 0);
}

/* px_upconn.c */
px_upconn_t *px__up_pool_take(px_upmgr_t *m, const char *key);
void px__up_pool_put(px_upconn_t *u);
px_upconn_t *px__up_conn_new(px_upmgr_t *m, const char *key, const char *host, uint16_t port,
                             int tls);
/* A new connection for r: resolve, then dial; failures go to r. */
void px__up_connect_new(px_upreq_t *r, const char *key);
void px__up_conn_close(px_upconn_t *u);
void px__up_key(char *out, size_t cap, const char *host, uint16_t port, int tls, int raw);
unsigned px__up_hash(const char *key);
void px__up_pool_remove(px_upconn_t *u);
void px__up_req_free(px_upreq_t *r);
/* The request fails: its carrier lets go (a connection closes, a stream is reset), the owner
 * hears why from the loop. */
void px__up_req_fail(px_upreq_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Places r: a shared h2 connection or dial, a pooled connection, or a new one. */
void px__up_dispatch(px_upreq_t *r);
/* on_ready (and a pending on_drain) from the loop. */
void px__up_ready_later(px_upreq_t *r);

/* px_uph1.c: HTTP/1.1, the protocol of every connection until a handshake picks h2 */
extern const px__up_conn_ops_t px__up_h1_conn;
extern const px_h1_cbs_t px__up_h1_resp_cbs; /* a connection's response parser */

/* px_uph2.c: HTTP/2 (its stream and connection operations are reached through r->ops and
 * u->ops, set when a request gets a stream and when a handshake picks h2) */
/* The head of q for h2, in one malloc'd block; NULL when out of memory. */
px_h2c_req_t *px__up_h2_head(const addon_req_t *q, const char *host, uint16_t port);
/* Finds a connection of key r may share: an h2 one with room (the stream opens now), or a dial
 * of the same key to wait on. Returns 1 when r was placed. */
int px__up_h2_share(px_upreq_t *r, const char *key);
/* The dial of u ended in a TLS handshake: h2 when the upstream picked it. Returns 1 when u
 * became an h2 connection (its owner request and waiters got streams or were sent on). */
int px__up_h2_handshake(px_upconn_t *u);
/* The dial u takes no more waiters; they are sent on (fail: they fail with why). */
void px__up_h2_waiters(px_upconn_t *u, const char *why);
void px__up_h2_unshare(px_upconn_t *u);
/* A dial of an h2ok request: lists u for requests of its key to wait on, unless the key's
 * upstream is known to pick http/1.1. */
void px__up_h2_share_dial(px_upconn_t *u);
/* The dial nu replaces u (the next address): the listing and the waiters move. */
void px__up_h2_move(px_upconn_t *u, px_upconn_t *nu);
/* The owner of dial u let go: its first waiter takes the dial over. Returns 1 when one did. */
int px__up_h2_handover(px_upconn_t *u);
/* u closes: its waiters and streams fail (why). */
void px__up_h2_shut(px_upconn_t *u, const char *why);
/* r leaves the waiters of its dial (released or failed). */
void px__up_h2_unwait(px_upreq_t *r);

#endif
