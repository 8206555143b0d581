#include "proxy/px_upstream.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dns/dns_resolve.h"
#include "proxy/px_config.h"
#include "proxy/px_dest.h"
#include "proxy/px_err.h"
#include "proxy/px_h1.h"
#include "proxy/px_log.h"
#include "proxy/px_sock.h"

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
    px_cidr_t own[64];
    size_t n_own;
    uint32_t proxy_ip;
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

static void px__conn_close(px_upconn_t *u);
static void px__req_fail(px_upreq_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void px__conn_deliver(px_upconn_t *u, const char *data, size_t len);

/* ---- destinations ------------------------------------------------------------------------------ */

/* The address bytes of sa (4, or 16; an IPv4-mapped IPv6 address gives its 4) and its port,
 * or 0 for another family. */
static size_t px__addr_bytes(const struct sockaddr *sa, const uint8_t **bytes, uint16_t *port)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (sa->sa_family == AF_INET) {
        *bytes = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
        *port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        *bytes = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        *port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
        if (memcmp(*bytes, mapped, 12) == 0) {
            *bytes += 12;
            return 4;
        }
        return 16;
    }
    return 0;
}

/* 1 when the address (n bytes) is one of this machine's own or the proxy IP. */
static int px__is_own(const px_upmgr_t *m, const uint8_t *a, size_t n)
{
    if (n == 4 && memcmp(a, &m->proxy_ip, 4) == 0)
        return 1;
    for (size_t i = 0; i < m->n_own; i++)
        if (m->own[i].family == (n == 4 ? AF_INET : AF_INET6) && memcmp(m->own[i].addr, a, n) == 0)
            return 1;
    return 0;
}

/* 1 when sa is one of airlock's own listening sockets (at that address, or at any local
 * address for a wildcard listener): connecting there would make airlock its own upstream. */
static int px__is_listener(const px_upmgr_t *m, const struct sockaddr *sa)
{
    const px_config_t *cfg = m->cfg;
    const px_listen_t *ls[] = {&cfg->listen_dns, &cfg->listen_http, &cfg->listen_https,
                               &cfg->listen_proxy, &cfg->listen_transparent};
    const uint8_t *a;
    uint16_t port;
    size_t n = px__addr_bytes(sa, &a, &port);
    if (n == 0)
        return 0;
    int local = px__is_own(m, a, n) || (n == 4 && a[0] == 127) ||
                (n == 16 && memcmp(a, in6addr_loopback.s6_addr, 16) == 0);
    for (size_t i = 0; i < sizeof(ls) / sizeof(ls[0]); i++) {
        if (!ls[i]->enabled)
            continue;
        const uint8_t *la;
        uint16_t lport;
        size_t ln = px__addr_bytes((const struct sockaddr *)&ls[i]->addr, &la, &lport);
        if (ln == 0 || lport != port)
            continue;
        static const uint8_t zero[16] = {0};
        if (memcmp(la, zero, ln) == 0) {
            if (local && (ln == 16 || n == 4)) /* IPv6 "::" takes IPv4 too (dual stack) */
                return 1;
        } else if (ln == n && memcmp(la, a, n) == 0) {
            return 1;
        }
    }
    return 0;
}

int px_up_addr_forbidden(const px_upmgr_t *m, const struct sockaddr *sa, char *why, size_t cap)
{
    char detail[96];
    int listener = px__is_listener(m, sa);
    int reopened = 0; /* --allow-upstream-cidr re-opens a range, never airlock itself */
    for (size_t i = 0; !reopened && i < m->cfg->n_allow_cidrs; i++)
        reopened = px_cidr_contains(&m->cfg->allow_cidrs[i], sa);
    if (reopened && !listener)
        return 0;
    const char *kind = NULL;
    if (!reopened)
        kind = px_dest_special(sa, detail, sizeof(detail));
    if (kind == NULL && !reopened) {
        const uint8_t *a;
        uint16_t port;
        size_t n = px__addr_bytes(sa, &a, &port);
        if (n != 0 && px__is_own(m, a, n))
            kind = "the proxy's own address";
    }
    if (kind == NULL && listener)
        kind = "airlock's own listener";
    if (kind == NULL)
        return 0;
    char text[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, text, sizeof(text));
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, text, sizeof(text));
    snprintf(why, cap, "destination %s is not allowed (%s)", text, kind);
    return 1;
}

/* ---- the pool ---------------------------------------------------------------------------------- */

static unsigned px__hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % PX__POOL_BUCKETS;
}

static void px__pool_remove(px_upconn_t *u)
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

static px_upconn_t *px__pool_take(px_upmgr_t *m, const char *key)
{
    for (px_upconn_t *u = m->buckets[px__hash(key)]; u != NULL; u = u->pool_next) {
        if (strcmp(u->key, key) == 0) {
            px__pool_remove(u);
            return u;
        }
    }
    return NULL;
}

static void on_conn_timer(uv_timer_t *t);

/* The exchange on u ended cleanly: keep u for the same host, port and scheme, or close it. */
static void px__pool_put(px_upconn_t *u)
{
    px_upmgr_t *m = u->m;
    size_t same = 0;
    for (px_upconn_t *x = m->buckets[u->bucket]; x != NULL; x = x->pool_next)
        if (strcmp(x->key, u->key) == 0)
            same++;
    if (same >= PX_POOL_PER_KEY_MAX || m->idle >= PX_POOL_IDLE_MAX || u->closing) {
        px__conn_close(u);
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
    uv_timer_start(&u->timer, on_conn_timer, PX_POOL_IDLE_MS, 0);
}

/* ---- requests ---------------------------------------------------------------------------------- */

static void px__req_free(px_upreq_t *r)
{
    free(r->head);
    free(r->pend);
    free(r);
}

static void on_req_failed(px_defer_t *d)
{
    px_upreq_t *r = px_container_of(d, px_upreq_t, defer);
    const px_up_cbs_t *cbs = r->cbs;
    void *owner = r->owner;
    char why[sizeof(r->why)];
    memcpy(why, r->why, sizeof(why));
    px__req_free(r);
    if (cbs != NULL)
        cbs->on_error(owner, why);
}

/* The request fails: its connection (if any) closes, the owner hears it from the loop. */
static void px__req_fail(px_upreq_t *r, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    px_upconn_t *u = r->conn;
    r->conn = NULL;
    if (u != NULL) {
        u->req = NULL;
        px__conn_close(u);
    }
    px_defer(r->m->loop, &r->defer, on_req_failed);
}

static void px__put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*cap - *len < n) {
        size_t c = *cap ? *cap : 1024;
        while (c - *len < n)
            c *= 2;
        char *nb = realloc(*buf, c);
        if (nb == NULL)
            return; /* the caller checks *len */
        *buf = nb;
        *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
}

/* The request head for HTTP/1.1 from the addon view: fields marked removed stay out; a
 * WebSocket upgrade gets its Connection and Upgrade back. Returns 0 or PX_ENOMEM. */
static int px__serialize(px_upreq_t *r, const addon_req_t *q)
{
    size_t cap = 64 + q->method.len + q->path.len;
    for (size_t i = 0; i < q->nheaders; i++)
        cap += q->headers[i].name.len + q->headers[i].value.len + 4;
    char *out = malloc(cap + 64);
    if (out == NULL)
        return PX_ENOMEM;
    size_t n = 0;
    int upgrade = 0;
#define PX__PUT(s, l)                                                                          \
    do {                                                                                       \
        memcpy(out + n, (s), (l));                                                             \
        n += (l);                                                                              \
    } while (0)
    PX__PUT(q->method.base, q->method.len);
    PX__PUT(" ", 1);
    PX__PUT(q->path.base, q->path.len);
    PX__PUT(" HTTP/1.1\r\n", 11);
    for (size_t i = 0; i < q->nheaders; i++) {
        const addon_header_t *h = &q->headers[i];
        if (h->name.len == 7 && strncasecmp(h->name.base, "upgrade", 7) == 0 && h->removed &&
            h->value.len == 9 && strncasecmp(h->value.base, "websocket", 9) == 0)
            upgrade = 1;
        if (h->removed)
            continue;
        PX__PUT(h->name.base, h->name.len);
        PX__PUT(": ", 2);
        PX__PUT(h->value.base, h->value.len);
        PX__PUT("\r\n", 2);
    }
    if (upgrade)
        PX__PUT("Connection: Upgrade\r\nUpgrade: websocket\r\n", 41);
    PX__PUT("\r\n", 2);
#undef PX__PUT
    r->head = out;
    r->head_len = n;
    return 0;
}

/* Bytes of the request toward the connection, or kept until it is ready. */
static void px__req_write(px_upreq_t *r, const char *data, size_t len)
{
    if (r->failed || len == 0)
        return;
    if (r->conn != NULL && r->conn->state == PX__C_READY) {
        px_sock_write(&r->conn->sock, data, len);
        return;
    }
    size_t before = r->pend_len;
    px__put(&r->pend, &r->pend_len, &r->pend_cap, data, len);
    if (r->pend_len == before)
        px__req_fail(r, "out of memory");
}

/* ---- connections ------------------------------------------------------------------------------- */

static const px_sock_cbs_t px__conn_cbs;

static void on_req_ready(px_defer_t *d)
{
    px_upreq_t *r = px_container_of(d, px_upreq_t, defer);
    if (r->cbs != NULL && r->cbs->on_ready != NULL)
        r->cbs->on_ready(r->owner);
}

/* The connection is ready for r: what r wrote so far goes out; on_ready from the loop. */
static void px__attach(px_upconn_t *u, px_upreq_t *r)
{
    u->req = r;
    r->conn = u;
    u->got_bytes = 0;
    u->reusable = 0;
    uv_timer_stop(&u->timer);
    px_h1_next(&u->parser);
    if (r->is_head)
        px_h1_expect_no_body(&u->parser);
    if (r->raw) {
        free(r->pend);
        r->pend = NULL;
        r->pend_len = r->pend_cap = 0;
        px_defer(r->m->loop, &r->defer, on_req_ready);
        return;
    }
    if (r->pend_len > 0)
        px_sock_write(&u->sock, r->pend, r->pend_len);
    free(r->pend);
    r->pend = NULL;
    r->pend_len = r->pend_cap = 0;
    if (!r->paused)
        px_sock_read_start(&u->sock);
    px_defer(r->m->loop, &r->defer, on_req_ready);
}

static void on_conn_timer(uv_timer_t *t)
{
    px_upconn_t *u = t->data;
    px_upreq_t *r = u->req;
    if (r == NULL) {
        px__conn_close(u); /* idle too long in the pool */
        return;
    }
    if (u->state == PX__C_CONNECT)
        px__req_fail(r, "Connection failed: connect timed out");
    else
        px__req_fail(r, "Connection failed: TLS handshake with upstream timed out");
}

static void px__dial(px_upconn_t *u, const char *last_err);

static void on_conn_connect(px_sock_t *s, int status)
{
    px_upconn_t *u = s->data;
    px_upreq_t *r = u->req;
    if (r == NULL) {
        px__conn_close(u);
        return;
    }
    if (status < 0) {
        /* a fresh socket for the next address: uv_tcp_connect once per handle */
        px__dial(u, uv_strerror(status));
        return;
    }
    if (!u->tls || r->raw) {
        u->state = PX__C_READY;
        px__attach(u, r);
        return;
    }
    u->state = PX__C_HANDSHAKE;
    int rc = px_sock_tls_client(&u->sock, u->m->tls, u->host, u->port);
    if (rc != 0) {
        px__req_fail(r, "Connection failed: %s",
                     u->sock.tls_err[0] ? u->sock.tls_err : "cannot set up TLS");
        return;
    }
    uv_timer_start(&u->timer, on_conn_timer, u->m->cfg->connect_ms, 0);
}

static void on_conn_handshake(px_sock_t *s, int status)
{
    px_upconn_t *u = s->data;
    px_upreq_t *r = u->req;
    if (r == NULL) {
        px__conn_close(u);
        return;
    }
    if (status < 0) {
        px__req_fail(r, "Connection failed: %s", px_sock_tls_error(s));
        return;
    }
    u->state = PX__C_READY;
    px__attach(u, r);
}

static px_upconn_t *px__conn_new(px_upmgr_t *m, const char *key, const char *host, uint16_t port,
                                 int tls);

/* Connects to the next address that passed the destination check; a new socket each time. */
static void px__dial(px_upconn_t *u, const char *last_err)
{
    px_upreq_t *r = u->req;
    if (u->next_addr >= u->naddrs) {
        px__req_fail(r, "Connection failed: %s", last_err);
        return;
    }
    px_upconn_t *nu = u;
    if (u->next_addr > 0) {
        nu = px__conn_new(u->m, u->key, u->host, u->port, u->tls);
        if (nu == NULL) {
            px__req_fail(r, "out of memory");
            return;
        }
        memcpy(nu->addrs, u->addrs, sizeof(u->addrs));
        nu->naddrs = u->naddrs;
        nu->next_addr = u->next_addr;
        nu->req = r;
        r->conn = nu;
        u->req = NULL;
        px__conn_close(u);
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
        px__conn_close(u);
        return;
    }
    if (status != 0) {
        px__req_fail(r, "Connection failed: %s", err != NULL ? err : "lookup failed");
        return;
    }
    char why[200] = "";
    for (size_t i = 0; i < naddrs && u->naddrs < DNS_RESOLVE_ADDRS_MAX; i++)
        if (!px_up_addr_forbidden(u->m, (const struct sockaddr *)&addrs[i], why, sizeof(why)))
            u->addrs[u->naddrs++] = addrs[i];
    if (u->naddrs == 0) {
        px__req_fail(r, "Connection failed: %s", why[0] ? why : "no usable address");
        return;
    }
    px__dial(u, "no address");
}

/* A new connection for r: resolve, then dial. */
static void px__connect_new(px_upreq_t *r, const char *key)
{
    px_upconn_t *u = px__conn_new(r->m, key, r->host, r->port, r->tls);
    if (u == NULL) {
        px__req_fail(r, "out of memory");
        return;
    }
    u->req = r;
    r->conn = u;
    int rc = dns_resolve(r->m->resolver, r->host, r->port, on_resolved, u, &u->resolving);
    if (rc < 0)
        px__req_fail(r, "Connection failed: %s",
                     rc == UV_EBUSY ? "too many lookups in flight" : "invalid host name");
}

static void px__key(char *out, size_t cap, const char *host, uint16_t port, int tls, int raw)
{
    snprintf(out, cap, "%s:%u:%s", host, port, raw ? "raw" : tls ? "https" : "http");
}

static px_upreq_t *px__req_new(px_upmgr_t *m, const char *host, uint16_t port, int tls,
                               const px_up_cbs_t *cbs, void *owner)
{
    px_upreq_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->m = m;
    r->cbs = cbs;
    r->owner = owner;
    snprintf(r->host, sizeof(r->host), "%s", host);
    r->port = port;
    r->tls = tls;
    return r;
}

px_upreq_t *px_up_open(px_upmgr_t *m, const char *host, uint16_t port, int tls,
                       const addon_req_t *req, px_up_body_t body, int is_head,
                       const px_up_cbs_t *cbs, void *owner)
{
    px_upreq_t *r = px__req_new(m, host, port, tls, cbs, owner);
    if (r == NULL)
        return NULL;
    r->body = body;
    r->is_head = is_head;
    if (px__serialize(r, req) != 0) {
        px__req_free(r);
        return NULL;
    }
    char key[PX__KEY_MAX];
    px__key(key, sizeof(key), host, port, tls, 0);
    px_upconn_t *u = px__pool_take(m, key);
    px__req_write(r, r->head, r->head_len);
    if (u != NULL) {
        u->reused = 1;
        px__attach(u, r);
        return r;
    }
    px__connect_new(r, key);
    return r;
}

px_upreq_t *px_up_open_raw(px_upmgr_t *m, const char *host, uint16_t port,
                           const px_up_cbs_t *cbs, void *owner)
{
    px_upreq_t *r = px__req_new(m, host, port, 0, cbs, owner);
    if (r == NULL)
        return NULL;
    r->raw = 1;
    char key[PX__KEY_MAX];
    px__key(key, sizeof(key), host, port, 0, 1);
    px__connect_new(r, key);
    return r;
}

void px_up_data(px_upreq_t *r, const char *data, size_t len)
{
    if (len == 0)
        return;
    if (r->body == PX_UP_BODY_CHUNKED) {
        char h[20];
        px__req_write(r, h, px_h1_chunk_head(h, len));
        px__req_write(r, data, len);
        px__req_write(r, "\r\n", 2);
        return;
    }
    px__req_write(r, data, len);
}

void px_up_end(px_upreq_t *r, const px_fields_t *t)
{
    r->ended = 1;
    if (r->body == PX_UP_BODY_CHUNKED) {
        char last[PX_H1_LAST_CHUNK_MAX];
        px__req_write(r, last, px_h1_last_chunk(last, t));
    }
}

size_t px_up_queued(const px_upreq_t *r)
{
    return r->pend_len + (r->conn != NULL ? px_sock_queued(&r->conn->sock) : 0);
}

int px_up_full(const px_upreq_t *r)
{
    if (px_up_queued(r) <= PX_WQ_HIGH)
        return 0;
    ((px_upreq_t *)r)->full = 1;
    return 1;
}

static void on_conn_resume(px_defer_t *d)
{
    px_upconn_t *u = px_container_of(d, px_upconn_t, defer);
    px_upreq_t *r = u->req;
    if (u->closing || r == NULL || r->paused)
        return;
    if (u->in_len > 0) {
        char *buf = u->in;
        size_t n = u->in_len;
        u->in = NULL;
        u->in_len = 0;
        px__conn_deliver(u, buf, n);
        free(buf);
    }
    if (!u->closing && u->req == r && !r->paused)
        px_sock_read_start(&u->sock);
}

void px_up_pause(px_upreq_t *r, int pause)
{
    r->paused = pause;
    px_upconn_t *u = r->conn;
    if (u == NULL || u->state != PX__C_READY)
        return;
    if (pause)
        px_sock_read_stop(&u->sock);
    else
        px_defer(u->m->loop, &u->defer, on_conn_resume);
}

/* The owner lets go: no callback comes any more; the connection is pooled or closed. */
static void px__release(px_upreq_t *r, int clean)
{
    r->cbs = NULL;
    px_defer_cancel(r->m->loop, &r->defer);
    px_upconn_t *u = r->conn;
    r->conn = NULL;
    if (r->failed) {
        /* on_req_failed is cancelled with the defer above */
        px__req_free(r);
        return;
    }
    px__req_free(r);
    if (u == NULL)
        return;
    u->req = NULL;
    if (clean && u->reusable && !u->closing && u->state == PX__C_READY)
        px__pool_put(u);
    else
        px__conn_close(u);
}

void px_up_done(px_upreq_t *r)
{
    px__release(r, 1);
}

void px_up_abort(px_upreq_t *r)
{
    px__release(r, 0);
}

/* ---- responses --------------------------------------------------------------------------------- */

static int on_resp_head(void *owner, px_msg_t *m)
{
    px_upconn_t *u = owner;
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL) {
        px_msg_free(m);
        return 1;
    }
    free(r->head); /* past the point of a retry */
    r->head = NULL;
    u->keepalive = (m->flags & PX_MSG_KEEPALIVE) && !(m->flags & PX_MSG_UNTIL_CLOSE);
    r->cbs->on_head(r->owner, m);
    return u->req != r || r->cbs == NULL || r->paused;
}

static int on_resp_data(void *owner, const char *data, size_t len)
{
    px_upconn_t *u = owner;
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL)
        return 1;
    r->cbs->on_data(r->owner, data, len);
    return u->req != r || r->cbs == NULL || r->paused;
}

static int on_resp_end(void *owner, const px_fields_t *t)
{
    px_upconn_t *u = owner;
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL)
        return 1;
    r->resp_done = 1;
    u->reusable = u->keepalive && r->ended;
    r->cbs->on_end(r->owner, t);
    return 1;
}

static const px_h1_cbs_t px__resp_cbs = {on_resp_head, on_resp_data, on_resp_end};

/* Response bytes: parsed and handed to the request's owner while it takes them. */
static void px__conn_deliver(px_upconn_t *u, const char *data, size_t len)
{
    size_t off = 0;
    while (off < len && !u->closing) {
        if (u->state == PX__C_TUNNEL) {
            px_tunnel_data(u->tun, 1, data + off, len - off);
            return;
        }
        px_upreq_t *r = u->req;
        if (r == NULL || r->cbs == NULL) {
            px__conn_close(u); /* bytes nobody asked for: the connection is done */
            return;
        }
        if (r->paused) {
            char *nb = realloc(u->in, u->in_len + (len - off));
            if (nb == NULL) {
                px__req_fail(r, "out of memory");
                return;
            }
            memcpy(nb + u->in_len, data + off, len - off);
            u->in = nb;
            u->in_len += len - off;
            px_sock_read_stop(&u->sock);
            return;
        }
        if (u->parser.state == PX_H1_DONE || u->parser.state == PX_H1_UPGRADED) {
            u->reusable = 0; /* bytes after a complete response: a broken upstream */
            return;
        }
        size_t used = 0;
        int rc = px_h1_feed(&u->parser, data + off, len - off, &used);
        if (rc < 0) {
            px__req_fail(r, "invalid response from upstream: %s", u->parser.reason);
            return;
        }
        off += used;
        if (used == 0 && u->req == r && !r->paused && u->parser.state != PX_H1_DONE)
            break;
    }
}

static void on_conn_read(px_sock_t *s, const char *data, size_t len)
{
    px_upconn_t *u = s->data;
    u->got_bytes = 1;
    if (u->in_pool) {
        px__conn_close(u); /* idle in the pool: any byte means the connection is done */
        return;
    }
    px__conn_deliver(u, data, len);
}

static void on_conn_eof(px_sock_t *s, int err)
{
    px_upconn_t *u = s->data;
    if (u->state == PX__C_TUNNEL) {
        px_tunnel_eof(u->tun, 1, err);
        return;
    }
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL) {
        px__conn_close(u);
        return;
    }
    if (u->reused && !u->got_bytes && r->head != NULL && r->ended &&
        r->body == PX_UP_BODY_NONE && !r->retried) {
        /* a pooled connection the server had closed: once more on a fresh one */
        r->retried = 1;
        u->req = NULL;
        r->conn = NULL;
        px__conn_close(u);
        px__req_write(r, r->head, r->head_len);
        char key[PX__KEY_MAX];
        px__key(key, sizeof(key), r->host, r->port, r->tls, 0);
        px__connect_new(r, key);
        return;
    }
    if (err == UV_EOF && u->parser.state == PX_H1_BODY && px_h1_finish(&u->parser) == 0) {
        u->reusable = 0; /* the response ended with the connection (on_end has fired) */
        return;
    }
    if (r->resp_done) {
        u->reusable = 0; /* the response is complete; the request's owner decides */
        return;
    }
    if (u->parser.state == PX_H1_BODY)
        px__req_fail(r, "Server disconnected during the response (%s)",
                     err == UV_EOF ? "connection closed" : uv_strerror(err));
    else
        px__req_fail(r, "Server disconnected before sending a response (%s)",
                     err == UV_EOF ? "connection closed" : uv_strerror(err));
}

static void on_conn_drain(px_sock_t *s)
{
    px_upconn_t *u = s->data;
    if (u->state == PX__C_TUNNEL) {
        px_tunnel_drain(u->tun, 1);
        return;
    }
    px_upreq_t *r = u->req;
    if (r != NULL && r->cbs != NULL && r->full && px_up_queued(r) < PX_WQ_LOW) {
        r->full = 0;
        if (r->cbs->on_drain != NULL)
            r->cbs->on_drain(r->owner);
    }
}

/* ---- tunnels ------------------------------------------------------------------------------------ */

static void end_write(void *end, const char *data, size_t len)
{
    px_upconn_t *u = end;
    px_sock_write(&u->sock, data, len);
}

static size_t end_queued(void *end)
{
    px_upconn_t *u = end;
    return px_sock_queued(&u->sock);
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
    px__conn_close(end);
}

void px_up_tunnel(px_upreq_t *r, px_tunnel_t *t, int side)
{
    px_upconn_t *u = r->conn;
    r->conn = NULL;
    r->cbs = NULL;
    px_defer_cancel(r->m->loop, &r->defer);
    px__req_free(r);
    px_tunnel_end_t e = {end_write, end_queued, end_read, end_shutdown, end_finish, end_close, u};
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

/* ---- lifetime ----------------------------------------------------------------------------------- */

static void px__conn_free_if_done(px_upconn_t *u)
{
    if (--u->handles > 0)
        return;
    px_h1_free(&u->parser);
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
    px__pool_remove(u);
    if (u->resolving != NULL) {
        dns_resolve_cancel(u->resolving);
        u->resolving = NULL;
    }
    px_defer_cancel(u->m->loop, &u->defer);
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
static void px__conn_close(px_upconn_t *u)
{
    px__conn_shut(u);
    px_sock_close(&u->sock);
}

static const px_sock_cbs_t px__conn_cbs = {
    .on_read = on_conn_read,
    .on_eof = on_conn_eof,
    .on_drain = on_conn_drain,
    .on_handshake = on_conn_handshake,
    .on_connect = on_conn_connect,
    .on_closed = on_conn_closed,
};

static px_upconn_t *px__conn_new(px_upmgr_t *m, const char *key, const char *host, uint16_t port,
                                 int tls)
{
    px_upconn_t *u = calloc(1, sizeof(*u));
    if (u == NULL)
        return NULL;
    u->m = m;
    px_sock_init(m->loop, &u->sock, &px__conn_cbs, u);
    uv_timer_init(m->loop->uv, &u->timer);
    u->timer.data = u;
    u->handles = 2;
    snprintf(u->key, sizeof(u->key), "%s", key);
    u->bucket = px__hash(u->key);
    snprintf(u->host, sizeof(u->host), "%s", host);
    u->port = port;
    u->tls = tls;
    px_h1_init(&u->parser, 0, &px__resp_cbs, u);
    return u;
}

/* ---- the manager --------------------------------------------------------------------------------- */

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
    return m;
}

void px_upmgr_set_own(px_upmgr_t *m, const struct px_cidr *own, size_t n_own, uint32_t proxy_ip)
{
    if (n_own > sizeof(m->own) / sizeof(m->own[0]))
        n_own = sizeof(m->own) / sizeof(m->own[0]);
    memcpy(m->own, own, n_own * sizeof(*own));
    m->n_own = n_own;
    m->proxy_ip = proxy_ip;
}

void px_upmgr_close_idle(px_upmgr_t *m)
{
    for (size_t b = 0; b < PX__POOL_BUCKETS; b++)
        while (m->buckets[b] != NULL)
            px__conn_close(m->buckets[b]);
}

size_t px_upmgr_idle(const px_upmgr_t *m)
{
    return m->idle;
}

void px_upmgr_free(px_upmgr_t *m)
{
    free(m);
}
