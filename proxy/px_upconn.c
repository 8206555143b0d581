/* Upstream connections: resolve through the upstream resolver, refuse forbidden destinations
 * (px_dest.h), connect with a timeout, TLS with full verification, the pool of idle connections
 * keyed by host:port:scheme, and the end of a tunnel; placing a request on one (or failing it).
 * A connection's bytes go to its protocol's operations (u->ops): HTTP/1.1 until a handshake
 * picks h2. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "proxy/px_upstream_int.h"

static void on_conn_timer(uv_timer_t *t);
static const px_sock_cbs_t px__conn_cbs;

/* ---- the pool ----------------------------------------------------------------------------------
 */

unsigned px__up_hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % PX__POOL_BUCKETS;
}

void px__up_pool_remove(px_upconn_t *u)
{
    if (!u->in_pool)
        return;
    px_upmgr_t *m = u->m;
    if (u->pool_prev != NULL)
        u->pool_prev->pool_next = u->pool_next;
    else
        m->buckets[u->bucket] = u->pool_next;
    if (u->pool_next != NULL)
        u->pool_next->pool_prev = u->pool_prev;
    u->pool_next = u->pool_prev = NULL;
    u->in_pool = 0;
    m->idle--;
}

px_upconn_t *px__up_pool_take(px_upmgr_t *m, const char *key)
{
    for (px_upconn_t *u = m->buckets[px__up_hash(key)]; u != NULL; u = u->pool_next) {
        if (!u->ops->multi && strcmp(u->key, key) == 0) { /* h2 ones are found shared */
            px__up_pool_remove(u);
            return u;
        }
    }
    return NULL;
}

/* The exchange on u ended cleanly: keep u for the same host, port and scheme, or close it.
 * Up to PX_POOL_CORE_PER_KEY idle ones per key wait PX_POOL_IDLE_MS; more (a burst's surplus,
 * up to PX_POOL_PER_KEY_MAX) only PX_POOL_SURPLUS_MS. The pool is taken from its newest end,
 * so under steady load the same connections come back within moments and none expires. */
void px__up_pool_put(px_upconn_t *u)
{
    px_upmgr_t *m = u->m;
    size_t same = 0;
    for (px_upconn_t *x = m->buckets[u->bucket]; x != NULL; x = x->pool_next)
        if (strcmp(x->key, u->key) == 0)
            same++;
    if (same >= PX_POOL_PER_KEY_MAX || m->idle >= PX_POOL_IDLE_MAX || u->closing) {
        px__up_conn_close(u);
        return;
    }
    u->in_pool = 1;
    u->pool_prev = NULL;
    u->pool_next = m->buckets[u->bucket];
    if (u->pool_next != NULL)
        u->pool_next->pool_prev = u;
    m->buckets[u->bucket] = u;
    m->idle++;
    px_sock_read_start(&u->sock); /* any byte or EOF now means the connection is done */
    uv_timer_start(&u->timer, on_conn_timer,
                   same < PX_POOL_CORE_PER_KEY ? PX_POOL_IDLE_MS : PX_POOL_SURPLUS_MS, 0);
}

void px__up_key(char *out, size_t cap, const char *host, uint16_t port, int tls, int raw)
{
    snprintf(out, cap, "%s:%u:%s", host, port, raw ? "raw" : tls ? "https" : "http");
}

/* ---- requests ----------------------------------------------------------------------------------
 */

void px__up_req_free(px_upreq_t *r)
{
    free(r->head);
    free(r->h2head);
    free(r->pend);
    free(r->trailers);
    free(r);
}

static void on_req_failed(px_defer_t *d)
{
    px_upreq_t *r = px_container_of(d, px_upreq_t, defer);
    const px_up_cbs_t *cbs = r->cbs;
    void *owner = r->owner;
    char why[sizeof(r->why)];
    memcpy(why, r->why, sizeof(why));
    px__up_req_free(r);
    if (cbs != NULL)
        cbs->on_error(owner, why);
}

void px__up_req_fail(px_upreq_t *r, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    px_defer_cancel(r->m->loop, &r->resume);
    if (r->ops != NULL) {
        r->ops->release(r, 0); /* HTTP/1.1: the connection closes; h2: the stream alone */
    } else if (r->wait != NULL) {
        px__up_h2_unwait(r);
    } else if (r->conn != NULL) {
        px_upconn_t *u = r->conn;
        r->conn = NULL;
        u->req = NULL;
        px__up_h2_waiters(u, r->why); /* a dial's waiters share its fate */
        px__up_conn_close(u);
    }
    px_defer(r->m->loop, &r->defer, on_req_failed);
}

static void on_req_ready(px_defer_t *d)
{
    px_upreq_t *r = px_container_of(d, px_upreq_t, defer);
    if (r->cbs == NULL)
        return;
    /* the owner was told "full" while the bytes waited for the connection; they may have left
     * at once on attaching (the socket then never went over its mark, so no drain from it).
     * Told before on_ready: an owner may let go of r in on_ready (a passthrough dial does). */
    if (r->full && px__up_queued(r) < PX_WQ_LOW) {
        r->full = 0;
        if (r->cbs->on_drain != NULL)
            r->cbs->on_drain(r->owner);
    }
    if (r->cbs->on_ready != NULL)
        r->cbs->on_ready(r->owner);
}

void px__up_ready_later(px_upreq_t *r)
{
    px_defer(r->m->loop, &r->defer, on_req_ready);
}

void px__up_dispatch(px_upreq_t *r)
{
    char key[PX__KEY_MAX];
    px__up_key(key, sizeof(key), r->host, r->port, r->tls, 0);
    if (r->h2ok && px__up_h2_share(r, key))
        return;
    px_upconn_t *u = px__up_pool_take(r->m, key);
    if (u != NULL) {
        u->reused = 1;
        u->ops->attach(u, r);
        return;
    }
    px__up_connect_new(r, key);
}

/* ---- connections -------------------------------------------------------------------------------
 */

static void on_conn_timer(uv_timer_t *t)
{
    px_upconn_t *u = t->data;
    px_upreq_t *r = u->req;
    if (r == NULL) {
        px__up_conn_close(u); /* idle too long in the pool */
        return;
    }
    if (u->state == PX__C_CONNECT)
        px__up_req_fail(r, "Connection failed: connect timed out");
    else
        px__up_req_fail(r, "Connection failed: TLS handshake with upstream timed out");
}

static void px__dial(px_upconn_t *u, const char *last_err);

static void on_conn_connect(px_sock_t *s, int status)
{
    px_upconn_t *u = s->data;
    px_upreq_t *r = u->req;
    if (r == NULL) {
        px__up_conn_close(u);
        return;
    }
    if (status < 0) {
        /* a fresh socket for the next address: uv_tcp_connect once per handle */
        px__dial(u, uv_strerror(status));
        return;
    }
    if (!u->tls || r->raw) {
        u->state = PX__C_READY;
        u->ops->attach(u, r);
        return;
    }
    u->state = PX__C_HANDSHAKE;
    /* a WebSocket upgrade must not land on h2: it offers http/1.1 alone */
    static const unsigned char h1[] = "\x08http/1.1";
    int rc = px_sock_tls_client(&u->sock, u->m->tls, u->host, u->port, u->h1only ? h1 : NULL,
                                u->h1only ? sizeof(h1) - 1 : 0);
    if (rc != 0) {
        px__up_req_fail(r, "Connection failed: %s",
                        px_sock_tls_error(&u->sock)[0] ? px_sock_tls_error(&u->sock)
                                                       : "cannot set up TLS");
        return;
    }
    uv_timer_start(&u->timer, on_conn_timer, u->m->cfg->connect_ms, 0);
}

static void on_conn_handshake(px_sock_t *s, int status)
{
    px_upconn_t *u = s->data;
    px_upreq_t *r = u->req;
    if (r == NULL) {
        px__up_conn_close(u);
        return;
    }
    if (status < 0) {
        px__up_req_fail(r, "Connection failed: %s", px_sock_tls_error(s));
        return;
    }
    if (px__up_h2_handshake(u))
        return;
    u->state = PX__C_READY;
    u->ops->attach(u, r); /* HTTP/1.1: h2 took it above */
}

px_upconn_t *px__up_conn_new(px_upmgr_t *m, const char *key, const char *host, uint16_t port,
                             int tls);

/* Connects to the next address that passed the destination check; a new socket each time. */
static void px__dial(px_upconn_t *u, const char *last_err)
{
    px_upreq_t *r = u->req;
    if (u->next_addr >= u->naddrs) {
        px__up_req_fail(r, "Connection failed: %s", last_err);
        return;
    }
    px_upconn_t *nu = u;
    if (u->next_addr > 0) {
        nu = px__up_conn_new(u->m, u->key, u->host, u->port, u->tls);
        if (nu == NULL) {
            px__up_req_fail(r, "out of memory");
            return;
        }
        memcpy(nu->addrs, u->addrs, sizeof(u->addrs));
        nu->naddrs = u->naddrs;
        nu->next_addr = u->next_addr;
        nu->req = r;
        r->conn = nu;
        u->req = NULL;
        px__up_h2_move(u, nu);
        px__up_conn_close(u);
    }
    nu->state = PX__C_CONNECT;
    const struct sockaddr *sa = (const struct sockaddr *)&nu->addrs[nu->next_addr++];
    int rc = px_sock_connect(&nu->sock, sa);
    if (rc < 0) {
        px__dial(nu, uv_strerror(rc));
        return;
    }
    uv_timer_start(&nu->timer, on_conn_timer, nu->m->cfg->connect_ms, 0);
}

static void on_resolved(int status, const struct sockaddr_storage *addrs, size_t naddrs,
                        const char *err, void *data)
{
    px_upconn_t *u = data;
    u->resolving = NULL;
    px_upreq_t *r = u->req;
    if (r == NULL) {
        px__up_conn_close(u);
        return;
    }
    if (status != 0) {
        px__up_req_fail(r, "Connection failed: %s", err != NULL ? err : "lookup failed");
        return;
    }
    char why[200] = "";
    for (size_t i = 0; i < naddrs && u->naddrs < DNS_RESOLVE_ADDRS_MAX; i++)
        if (!px_dest_forbidden(&u->m->dest, (const struct sockaddr *)&addrs[i], why, sizeof(why)))
            u->addrs[u->naddrs++] = addrs[i];
    if (u->naddrs == 0) {
        px__up_req_fail(r, "Connection failed: %s", why[0] ? why : "no usable address");
        return;
    }
    px__dial(u, "no address");
}

/* A new connection for r: resolve, then dial. */
void px__up_connect_new(px_upreq_t *r, const char *key)
{
    px_upconn_t *u = px__up_conn_new(r->m, key, r->host, r->port, r->tls);
    if (u == NULL) {
        px__up_req_fail(r, "out of memory");
        return;
    }
    u->req = r;
    r->conn = u;
    u->h1only = r->tls && !r->h2ok && !r->raw;
    if (r->h2ok)
        px__up_h2_share_dial(u);
    int rc = dns_resolve(r->m->resolver, r->host, r->port, on_resolved, u, &u->resolving);
    if (rc < 0)
        px__up_req_fail(r, "Connection failed: %s",
                        rc == UV_EBUSY ? "too many lookups in flight" : "invalid host name");
}

/* ---- tunnels ------------------------------------------------------------------------------------
 */

static void end_write(void *end, const char *data, size_t len)
{
    px_upconn_t *u = end;
    px_sock_write(&u->sock, data, len);
}

static int end_full(void *end)
{
    px_upconn_t *u = end;
    return px_sock_full(&u->sock);
}

static void end_read(void *end, int on)
{
    px_upconn_t *u = end;
    if (on)
        px_sock_read_start(&u->sock);
    else
        px_sock_read_stop(&u->sock);
}

static void end_shutdown(void *end)
{
    px_upconn_t *u = end;
    px_sock_shutdown(&u->sock);
}

static void end_finish(void *end)
{
    px_upconn_t *u = end;
    px_sock_close_when_flushed(&u->sock);
}

static void end_close(void *end)
{
    px__up_conn_close(end);
}

void px_up_tunnel(px_upreq_t *r, px_tunnel_t *t, int side)
{
    px_upconn_t *u = r->conn;
    r->conn = NULL;
    r->cbs = NULL;
    px_defer_cancel(r->m->loop, &r->defer);
    px__up_req_free(r);
    px_tunnel_end_t e = {end_write, end_full, end_read, end_shutdown, end_finish, end_close, u};
    u->req = NULL;
    u->state = PX__C_TUNNEL;
    u->tun = t;
    uv_timer_stop(&u->timer);
    px_tunnel_attach(t, side, &e);
    if (u->in_len > 0 && px_tunnel_ready(t)) {
        px_tunnel_data(t, side, u->in, u->in_len);
        u->in_len = 0;
    }
}

/* ---- lifetime -----------------------------------------------------------------------------------
 */

static void px__conn_free_if_done(px_upconn_t *u)
{
    if (--u->handles > 0)
        return;
    px_h1_free(&u->parser);
    px_h2c_free(u->h2);
    free(u->in);
    free(u);
}

static void on_conn_timer_closed(uv_handle_t *h)
{
    px__conn_free_if_done(h->data);
}

/* Everything but the socket: the pool's link, a lookup, the deferred call, the timer. */
static void px__conn_shut(px_upconn_t *u)
{
    if (u->closing)
        return;
    u->closing = 1;
    px__up_pool_remove(u);
    if (u->resolving != NULL) {
        dns_resolve_cancel(u->resolving);
        u->resolving = NULL;
    }
    px_defer_cancel(u->m->loop, &u->defer);
    px_defer_cancel(u->m->loop, &u->flush);
    px_quiet_cancel(u->m->loop, &u->quiet);
    px__up_h2_unshare(u);
    px__up_h2_shut(u, "Connection failed: connection closed");
    uv_timer_stop(&u->timer);
    uv_close((uv_handle_t *)&u->timer, on_conn_timer_closed);
}

static void on_conn_closed(px_sock_t *s)
{
    px_upconn_t *u = s->data;
    if (u->tun != NULL) {
        px_tunnel_release(u->tun, 1);
        u->tun = NULL;
    }
    px__conn_shut(u); /* the socket may close by itself (a tunnel's end, flushed) */
    px__conn_free_if_done(u);
}

/* The one close path: the memory goes in the last close callback. */
void px__up_conn_close(px_upconn_t *u)
{
    px__conn_shut(u);
    px_sock_close(&u->sock);
}

/* The socket's events go to the connection's protocol, a tunnel's end aside. */
static void on_conn_read(px_sock_t *s, const char *data, size_t len)
{
    px_upconn_t *u = s->data;
    u->got_bytes = 1;
    u->ops->read(u, data, len);
}

static void on_conn_eof(px_sock_t *s, int err)
{
    px_upconn_t *u = s->data;
    if (u->state == PX__C_TUNNEL)
        px_tunnel_eof(u->tun, 1, err);
    else
        u->ops->eof(u, err);
}

static void on_conn_drain(px_sock_t *s)
{
    px_upconn_t *u = s->data;
    if (u->state == PX__C_TUNNEL)
        px_tunnel_drain(u->tun, 1);
    else
        u->ops->flush(u);
}

static const px_sock_cbs_t px__conn_cbs = {
    .on_read = on_conn_read,
    .on_eof = on_conn_eof,
    .on_drain = on_conn_drain,
    .on_handshake = on_conn_handshake,
    .on_connect = on_conn_connect,
    .on_closed = on_conn_closed,
};

px_upconn_t *px__up_conn_new(px_upmgr_t *m, const char *key, const char *host, uint16_t port,
                             int tls)
{
    px_upconn_t *u = calloc(1, sizeof(*u));
    if (u == NULL)
        return NULL;
    u->m = m;
    u->ops = &px__up_h1_conn;
    px_sock_init(m->loop, &u->sock, &px__conn_cbs, u);
    uv_timer_init(m->loop->uv, &u->timer);
    u->timer.data = u;
    u->handles = 2;
    snprintf(u->key, sizeof(u->key), "%s", key);
    u->bucket = px__up_hash(u->key);
    snprintf(u->host, sizeof(u->host), "%s", host);
    u->port = port;
    u->tls = tls;
    px_h1_init(&u->parser, 0, &px__up_h1_resp_cbs, u);
    return u;
}

/* ---- the manager
 * --------------------------------------------------------------------------------- */

px_upmgr_t *px_upmgr_new(px_loop_t *loop, const px_config_t *cfg, dns_resolver_t *resolver,
                         SSL_CTX *tls)
{
    px_upmgr_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->loop = loop;
    m->cfg = cfg;
    m->resolver = resolver;
    m->tls = tls;
    m->dest.cfg = cfg;
    return m;
}

void px_upmgr_set_own(px_upmgr_t *m, const struct px_cidr *own, size_t n_own, uint32_t proxy_ip)
{
    m->dest.own = own;
    m->dest.n_own = n_own;
    m->dest.proxy_ip = proxy_ip;
}

void px_upmgr_close_idle(px_upmgr_t *m)
{
    for (size_t b = 0; b < PX__POOL_BUCKETS; b++)
        while (m->buckets[b] != NULL)
            px__up_conn_close(m->buckets[b]);
}

size_t px_upmgr_idle(const px_upmgr_t *m)
{
    return m->idle;
}

void px_upmgr_free(px_upmgr_t *m)
{
    free(m);
}
