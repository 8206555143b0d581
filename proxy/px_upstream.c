/* The upstream side: resolve through c-ares (dns_resolve), refuse forbidden destinations,
 * connect with a timeout, keep idle connections in a pool keyed by host:port:scheme. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns/dns_resolve.h"
#include "proxy/px_dest.h"
#include "proxy/px_err.h"
#include "proxy/px_int.h"
#include "proxy/px_upstream.h"
#include "proxy/px_tls.h"
#include "proxy/px_write.h"

/* Connect attempts: the addresses that passed the destination check. */
typedef struct px__dial {
    struct sockaddr_storage addrs[DNS_RESOLVE_ADDRS_MAX];
    size_t n;
    size_t next;
} px__dial_t;

static void px__key(char *out, size_t cap, const px_conn_t *c)
{
    snprintf(out, cap, "%s:%u:%s", c->host, c->port, c->tls ? "https" : "http");
}

static unsigned px__hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % PX_POOL_BUCKETS;
}

/* ---- destination check ------------------------------------------------------------------ */

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
static int px__is_own(const px_engine_t *eng, const uint8_t *a, size_t n)
{
    if (n == 4 && memcmp(a, &eng->proxy_ip, 4) == 0)
        return 1;
    for (size_t i = 0; i < eng->n_own; i++)
        if (eng->own[i].family == (n == 4 ? AF_INET : AF_INET6) && memcmp(eng->own[i].addr, a, n) == 0)
            return 1;
    return 0;
}

/* 1 when sa is one of airlock's own listening sockets (an address listener of any kind, at
 * that address or, for a wildcard listener, at any local address): connecting there would
 * make airlock its own upstream, request after request. */
static int px__is_listener(const px_engine_t *eng, const struct sockaddr *sa)
{
    const px_config_t *cfg = eng->cfg;
    const px_listen_t *ls[] = {&cfg->listen_dns, &cfg->listen_http, &cfg->listen_https,
                               &cfg->listen_proxy, &cfg->listen_transparent};
    const uint8_t *a;
    uint16_t port;
    size_t n = px__addr_bytes(sa, &a, &port);
    if (n == 0)
        return 0;
    int local = px__is_own(eng, a, n) || (n == 4 && a[0] == 127) ||
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
            /* a wildcard: IPv6 "::" takes IPv4 too (dual stack) */
            if (local && (ln == 16 || n == 4))
                return 1;
        } else if (ln == n && memcmp(la, a, n) == 0) {
            return 1;
        }
    }
    return 0;
}

int px_upstream_addr_forbidden(const px_engine_t *eng, const struct sockaddr *sa, char *why,
                               size_t cap)
{
    const px_config_t *cfg = eng->cfg;
    char detail[96];
    int listener = px__is_listener(eng, sa);
    int reopened = 0; /* --allow-upstream-cidr re-opens a range, never airlock itself */
    for (size_t i = 0; !reopened && i < cfg->n_allow_cidrs; i++)
        reopened = px_cidr_contains(&cfg->allow_cidrs[i], sa);
    if (reopened && !listener)
        return 0;
    const char *kind = NULL;
    if (!reopened)
        kind = px_dest_special(sa, detail, sizeof(detail));
    if (kind == NULL && !reopened) {
        const uint8_t *a;
        uint16_t port;
        size_t n = px__addr_bytes(sa, &a, &port);
        if (n != 0 && px__is_own(eng, a, n))
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

/* ---- closing ---------------------------------------------------------------------------- */

static void px__pool_remove(px_upstream_t *u)
{
    if (!u->in_pool)
        return;
    px_pool_t *p = &u->eng->pool;
    if (u->pool_prev != NULL)
        u->pool_prev->pool_next = u->pool_next;
    else
        p->buckets[u->bucket] = u->pool_next;
    if (u->pool_next != NULL)
        u->pool_next->pool_prev = u->pool_prev;
    u->pool_next = u->pool_prev = NULL;
    u->in_pool = 0;
    p->idle--;
}

static void on_up_handle_closed(uv_handle_t *h)
{
    px_upstream_t *u = h->data;
    if (--u->handles_open == 0) {
        free(u->dial);
        px_tls_free(u->tls);
        free(u);
    }
}

void px_upstream_close(px_upstream_t *u)
{
    if (u->closing)
        return;
    u->closing = 1;
    px__pool_remove(u);
    u->conn = NULL;
    uv_timer_stop(&u->timer);
    uv_close((uv_handle_t *)&u->tcp, on_up_handle_closed);
    uv_close((uv_handle_t *)&u->timer, on_up_handle_closed);
}

void px_upstream_cancel(px_conn_t *c)
{
    if (c->resolve_req != NULL) {
        dns_resolve_cancel(c->resolve_req);
        c->resolve_req = NULL;
    }
}

static void on_up_shutdown(uv_shutdown_t *req, int status)
{
    (void)status;
    free(req);
}

void px_upstream_shutdown(px_upstream_t *u)
{
    uv_shutdown_t *req = malloc(sizeof(*req));
    if (req == NULL || uv_shutdown(req, (uv_stream_t *)&u->tcp, on_up_shutdown) != 0)
        free(req);
}

/* ---- writing ---------------------------------------------------------------------------- */

static void on_up_write(uv_write_t *req, int status)
{
    px_upstream_t *u = px_write_done(req);
    if (u->closing)
        return;
    px_conn_t *c = u->conn;
    if (status < 0) {
        if (c != NULL) {
            char why[128];
            snprintf(why, sizeof(why), "Connection failed: %s", uv_strerror(status));
            px_conn_upstream_failed(c, why);
        } else {
            px_upstream_close(u);
        }
        return;
    }
    if (c != NULL && u->tcp.write_queue_size < PX_WQ_LOW)
        px_conn_upstream_drained(c);
}

static void px__send_raw(px_upstream_t *u, const char *data, size_t len, char *owned);

static void px__tls_flush(px_upstream_t *u)
{
    size_t n;
    char *out = px_tls_take_output(u->tls, &n);
    if (out != NULL)
        px__send_raw(u, out, n, out);
}

/* Encrypts (for https upstreams) and queues; owned, when not NULL, is taken. */
static void px__send(px_upstream_t *u, const char *data, size_t len, char *owned)
{
    if (u->closing) {
        free(owned);
        return;
    }
    if (u->tls == NULL) {
        px__send_raw(u, data, len, owned);
        return;
    }
    int rc = px_tls_write(u->tls, data, len);
    free(owned);
    if (rc != 0) {
        if (u->conn != NULL)
            px_conn_upstream_failed(u->conn, "TLS write to upstream failed");
        return;
    }
    px__tls_flush(u);
}

static void px__send_raw(px_upstream_t *u, const char *data, size_t len, char *owned)
{
    if (u->closing) {
        free(owned);
        return;
    }
    int rc = px_write((uv_stream_t *)&u->tcp, data, len, owned, u, on_up_write);
    if (rc < 0 && u->conn != NULL) {
        char why[128];
        snprintf(why, sizeof(why), "Connection failed: %s", px_strerror(rc));
        px_conn_upstream_failed(u->conn, why);
    }
}

void px_upstream_send(px_upstream_t *u, const char *data, size_t len)
{
    px__send(u, data, len, NULL);
}

void px_upstream_send_take(px_upstream_t *u, char *buf, size_t len)
{
    px__send(u, buf, len, buf);
}

size_t px_upstream_queued(px_upstream_t *u)
{
    return u->tcp.write_queue_size;
}

/* ---- reading ---------------------------------------------------------------------------- */

static void on_up_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    (void)hint;
    buf->base = malloc(PX_READ_BUF);
    buf->len = buf->base != NULL ? PX_READ_BUF : 0;
}

static void on_up_timer(uv_timer_t *t);

static void px__up_eof(px_upstream_t *u, int err)
{
    px_conn_t *c = u->conn;
    if (c == NULL) {
        px_upstream_close(u);
        return;
    }
    if (u->reused && !u->got_bytes && c->state == PX_ST_RELAY_BODY && c->req_done &&
        !c->resp_started && c->rq.len == c->rq.head_end) {
        /* a pooled connection the server had closed: retry once on a fresh one */
        px__up_drop(c);
        px_upstream_retry(c);
        return;
    }
    px_conn_upstream_eof(c, err);
}

static void px__up_data(px_upstream_t *u, const char *data, size_t len)
{
    px_conn_t *c = u->conn;
    u->got_bytes = 1;
    if (c->state != PX_ST_UPGRADED)
        uv_timer_start(&u->timer, on_up_timer, c->eng->cfg->upstream_first_byte_ms, 0);
    px_conn_upstream_data(c, data, len);
}

/* Decrypted bytes go to the connection while reading is wanted; the rest waits in OpenSSL. */
static void px__tls_pump(px_upstream_t *u)
{
    if (u->in_pump) {
        u->pump_again = 1;
        return;
    }
    u->in_pump = 1;
    char *plain = malloc(PX_TLS_READ_CHUNK);
    do {
        u->pump_again = 0;
        while (plain != NULL && !u->closing && u->reading && u->conn != NULL) {
            int n = px_tls_read(u->tls, plain, PX_TLS_READ_CHUNK);
            if (n == 0)
                break;
            if (n < 0) {
                px__up_eof(u, n == UV_EOF ? UV_EOF : UV_EPROTO);
                break;
            }
            px__up_data(u, plain, (size_t)n);
        }
    } while (u->pump_again && !u->closing);
    free(plain);
    u->in_pump = 0;
    if (!u->closing)
        px__tls_flush(u);
}

static void on_up_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    px_upstream_t *u = s->data;
    px_conn_t *c = u->conn;
    if (nread == 0) {
        free(buf->base);
        return;
    }
    if (c == NULL) {
        /* idle in the pool: any byte or EOF means the connection is done */
        free(buf->base);
        px_upstream_close(u);
        return;
    }
    if (nread < 0) {
        free(buf->base);
        if (u->tls != NULL && !u->tls_done) {
            px_conn_upstream_failed(c, "TLS handshake with upstream failed: connection closed");
            return;
        }
        px__up_eof(u, (int)nread);
        return;
    }
    if (u->tls == NULL) {
        px__up_data(u, buf->base, (size_t)nread);
        free(buf->base);
        return;
    }
    int rc = px_tls_feed(u->tls, buf->base, (size_t)nread);
    free(buf->base);
    if (rc != 0) {
        px_conn_upstream_failed(c, "out of memory");
        return;
    }
    if (!u->tls_done) {
        char err[256];
        rc = px_tls_handshake(u->tls, err, sizeof(err));
        px__tls_flush(u);
        if (rc < 0) {
            char why[320];
            snprintf(why, sizeof(why), "Connection failed: %s", err);
            px_conn_upstream_failed(c, why);
            return;
        }
        if (rc == 0)
            return;
        u->tls_done = 1;
        uv_timer_stop(&u->timer);
        px_upstream_read_stop(u);
        px_conn_upstream_ready(c); /* restarts reading, which pumps what is buffered */
        return;
    }
    px__tls_pump(u);
}

void px_upstream_read_start(px_upstream_t *u)
{
    if (u->reading || u->closing)
        return;
    if (uv_read_start((uv_stream_t *)&u->tcp, on_up_alloc, on_up_read) == 0)
        u->reading = 1;
    if (u->reading && u->tls != NULL && u->tls_done && u->conn != NULL)
        px__tls_pump(u);
}

void px_upstream_read_stop(px_upstream_t *u)
{
    if (!u->reading)
        return;
    uv_read_stop((uv_stream_t *)&u->tcp);
    u->reading = 0;
}

static void on_up_timer(uv_timer_t *t)
{
    px_upstream_t *u = t->data;
    px_conn_t *c = u->conn;
    if (c == NULL) {
        px_upstream_close(u); /* idle too long in the pool */
        return;
    }
    if (!u->connected)
        px_conn_upstream_failed(c, "Connection failed: connect timed out");
    else if (u->tls != NULL && !u->tls_done)
        px_conn_upstream_failed(c, "Connection failed: TLS handshake with upstream timed out");
    else if (!c->resp_started)
        px_conn_upstream_failed(c, "Upstream did not answer in time");
    else
        px_conn_upstream_failed(c, "Upstream stalled during the response");
}

void px_upstream_first_byte_timer(px_upstream_t *u, uint64_t ms)
{
    uv_timer_start(&u->timer, on_up_timer, ms, 0);
}

/* ---- pool ------------------------------------------------------------------------------- */

static px_upstream_t *px__pool_take(px_engine_t *eng, const char *key)
{
    unsigned b = px__hash(key);
    for (px_upstream_t *u = eng->pool.buckets[b]; u != NULL; u = u->pool_next) {
        if (strcmp(u->key, key) == 0) {
            px__pool_remove(u);
            return u;
        }
    }
    return NULL;
}

void px_upstream_release(px_upstream_t *u, int reusable)
{
    px_engine_t *eng = u->eng;
    u->conn = NULL;
    if (!reusable || eng->stopping || u->closing) {
        px_upstream_close(u);
        return;
    }
    px_pool_t *p = &eng->pool;
    size_t same = 0;
    for (px_upstream_t *x = p->buckets[u->bucket]; x != NULL; x = x->pool_next)
        if (strcmp(x->key, u->key) == 0)
            same++;
    if (same >= PX_POOL_PER_KEY_MAX || p->idle >= PX_POOL_IDLE_MAX) {
        px_upstream_close(u);
        return;
    }
    u->in_pool = 1;
    u->pool_prev = NULL;
    u->pool_next = p->buckets[u->bucket];
    if (u->pool_next != NULL)
        u->pool_next->pool_prev = u;
    p->buckets[u->bucket] = u;
    p->idle++;
    px_upstream_read_start(u);
    uv_timer_start(&u->timer, on_up_timer, PX_POOL_IDLE_MS, 0);
}

void px_pool_close_all(px_engine_t *eng)
{
    for (size_t b = 0; b < PX_POOL_BUCKETS; b++)
        while (eng->pool.buckets[b] != NULL)
            px_upstream_close(eng->pool.buckets[b]);
}

/* ---- connecting ------------------------------------------------------------------------- */

static void px__dial_next(px_upstream_t *u, const char *last_err);

static void on_up_connect(uv_connect_t *req, int status)
{
    px_upstream_t *u = px_container_of(req, px_upstream_t, connect_req);
    if (u->closing)
        return;
    px_conn_t *c = u->conn;
    if (c == NULL) {
        px_upstream_close(u);
        return;
    }
    if (status < 0) {
        if (status == UV_ECANCELED)
            return;
        px__dial_next(u, uv_strerror(status));
        return;
    }
    u->connected = 1;
    uv_timer_stop(&u->timer);
    uv_tcp_nodelay(&u->tcp, 1);
    if (!c->tls) {
        px_conn_upstream_ready(c);
        return;
    }
    /* https upstream: SNI = host, chain and name verified */
    u->tls = px_tls_new(c->eng->tls_client, 0, u);
    if (u->tls == NULL || px_tls_set_upstream_host(u->tls, c->host, c->port) != 0) {
        px_conn_upstream_failed(c, "Connection failed: cannot set up TLS");
        return;
    }
    c->state = PX_ST_UPSTREAM_TLS;
    char err[256];
    int rc = px_tls_handshake(u->tls, err, sizeof(err));
    px__tls_flush(u);
    if (rc < 0) {
        char why[320];
        snprintf(why, sizeof(why), "Connection failed: %s", err);
        px_conn_upstream_failed(c, why);
        return;
    }
    uv_timer_start(&u->timer, on_up_timer, c->eng->cfg->connect_ms, 0);
    px_upstream_read_start(u);
}

static void px__dial_next(px_upstream_t *u, const char *last_err)
{
    px_conn_t *c = u->conn;
    px__dial_t *d = u->dial;
    if (d->next >= d->n) {
        char why[200];
        snprintf(why, sizeof(why), "Connection failed: %s", last_err);
        px_conn_upstream_failed(c, why);
        return;
    }
    if (d->next > 0) {
        /* a fresh socket for the next address */
        px_upstream_t *nu = px_upstream_new(c->eng, u->key);
        if (nu == NULL) {
            px_conn_upstream_failed(c, "out of memory");
            return;
        }
        nu->dial = d;
        u->dial = NULL;
        c->up = nu;
        nu->conn = c;
        u->conn = NULL;
        px_upstream_close(u);
        u = nu;
    }
    const struct sockaddr *sa = (const struct sockaddr *)&d->addrs[d->next++];
    int rc = uv_tcp_connect(&u->connect_req, &u->tcp, sa, on_up_connect);
    if (rc < 0) {
        px__dial_next(u, uv_strerror(rc));
        return;
    }
    uv_timer_start(&u->timer, on_up_timer, c->eng->cfg->connect_ms, 0);
}

px_upstream_t *px_upstream_new(px_engine_t *eng, const char *key)
{
    px_upstream_t *u = calloc(1, sizeof(*u));
    if (u == NULL)
        return NULL;
    u->eng = eng;
    uv_tcp_init(eng->loop, &u->tcp);
    uv_timer_init(eng->loop, &u->timer);
    u->tcp.data = u;
    u->timer.data = u;
    u->handles_open = 2;
    snprintf(u->key, sizeof(u->key), "%s", key);
    u->bucket = px__hash(u->key);
    return u;
}

static void on_resolved(int status, const struct sockaddr_storage *addrs, size_t naddrs,
                        const char *err, void *data)
{
    px_conn_t *c = data;
    c->resolve_req = NULL;
    if (c->closing)
        return;
    if (status != 0) {
        char why[200];
        snprintf(why, sizeof(why), "Connection failed: %s", err != NULL ? err : "lookup failed");
        px_conn_upstream_failed(c, why);
        return;
    }
    px__dial_t *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        px_conn_upstream_failed(c, "out of memory");
        return;
    }
    char why[200] = "";
    for (size_t i = 0; i < naddrs && d->n < DNS_RESOLVE_ADDRS_MAX; i++) {
        if (px_upstream_addr_forbidden(c->eng, (const struct sockaddr *)&addrs[i], why,
                                       sizeof(why)))
            continue;
        d->addrs[d->n++] = addrs[i];
    }
    if (d->n == 0) {
        free(d);
        char msg[260];
        snprintf(msg, sizeof(msg), "Connection failed: %s",
                 why[0] ? why : "no usable address");
        px_conn_upstream_failed(c, msg);
        return;
    }
    char key[PX_HOST_MAX + 16];
    px__key(key, sizeof(key), c);
    px_upstream_t *u = px_upstream_new(c->eng, key);
    if (u == NULL) {
        free(d);
        px_conn_upstream_failed(c, "out of memory");
        return;
    }
    u->dial = d;
    u->conn = c;
    c->up = u;
    c->state = PX_ST_CONNECT;
    px__dial_next(u, "no address");
}

static void px__resolve(px_conn_t *c)
{
    dns_resolve_req_t *req = NULL;
    int rc = dns_resolve(c->eng->resolver, c->host, c->port, on_resolved, c, &req);
    if (rc < 0) {
        char why[160];
        snprintf(why, sizeof(why), "Connection failed: %s",
                 rc == UV_EBUSY ? "too many lookups in flight" : "invalid host name");
        px_conn_upstream_failed(c, why);
        return;
    }
    c->resolve_req = req;
}

void px_upstream_start(px_conn_t *c)
{
    char key[PX_HOST_MAX + 16];
    px__key(key, sizeof(key), c);
    px_upstream_t *u = px__pool_take(c->eng, key);
    if (u != NULL) {
        uv_timer_stop(&u->timer);
        px_upstream_read_stop(u);
        u->conn = c;
        u->reused = 1;
        u->got_bytes = 0;
        c->up = u;
        px_conn_upstream_ready(c);
        return;
    }
    px__resolve(c);
}

void px_upstream_retry(px_conn_t *c)
{
    px__resolve(c);
}
