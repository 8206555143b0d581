/* The client side of a connection: read a request head, run the pre-checks and the policy,
 * answer or hand the request to the upstream side, stream the request body, relay the
 * response, log exactly one line, then loop for keep-alive (DESIGN.md §3). */
#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/px_answer.h"
#include "proxy/px_err.h"
#include "proxy/px_int.h"
#include "proxy/px_policy.h"
#include "proxy/px_tls.h"
#include "proxy/px_hello.h"
#include "ca/ca.h"
#include "proxy/px_upstream.h"
#include "proxy/px_write.h"

void px__conn_set_state(px_conn_t *c, px_state_t st)
{
    c->state = st;
}


/* ---- closing ---------------------------------------------------------------------------- */

/* Lets every addon release its per-request state. */
void px__addons_end(px_conn_t *c)
{
    if (c->req == NULL || c->req->method.len == 0)
        return;
    for (const addon_t *const *a = px_addons(); *a != NULL; a++)
        if ((*a)->on_request_end != NULL)
            (*a)->on_request_end(*a, c->req);
}

static void on_conn_handle_closed(uv_handle_t *h)
{
    px_conn_t *c = h->data;
    if (--c->handles_open > 0)
        return;
    px_engine_conn_closed(c->eng, c);
    px_head_free(&c->rq);
    px_head_free(&c->rs);
    free(c->pending);
    free(c->bodybuf);
    free(c->outbody);
    if (c->req != NULL) {
        px__addons_end(c);
        addon_req_reset(c->req);
        free(c->req);
    }
    px_snapshot_unref(c->snap);
    px_tls_free(c->tls_state);
    free(c);
}

void px_conn_close(px_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    px__conn_set_state(c, PX_ST_CLOSING);
    px__up_drop(c);
    px_upstream_cancel(c);
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

/* Takes the upstream off the connection (NULL when there is none) for the caller to release
 * or close. The pause flags belonged to that exchange and go with it: left set, the next
 * exchange would never pause either side. */
px_upstream_t *px__up_detach(px_conn_t *c)
{
    px_upstream_t *u = c->up;
    c->up = NULL;
    c->up_paused = 0;
    c->paused_by_upstream = 0;
    if (u != NULL)
        u->conn = NULL;
    return u;
}

/* Detaches and closes the upstream, if any. */
void px__up_drop(px_conn_t *c)
{
    px_upstream_t *u = px__up_detach(c);
    if (u != NULL)
        px_upstream_close(u);
}

/* ---- writing ---------------------------------------------------------------------------- */

static void on_client_write(uv_write_t *req, int status)
{
    px_conn_t *c = px_write_done(req);
    if (c->closing)
        return;
    if (status < 0) {
        if (!c->logged && c->req != NULL && c->resp_started)
            px_conn_log_line(c, "ERROR", -1, "client connection lost");
        px_conn_close(c);
        return;
    }
    size_t q = c->tcp.write_queue_size;
    if (c->up != NULL && q < PX_WQ_LOW && c->up_paused) {
        c->up_paused = 0;
        if (c->state == PX_ST_READ_RESPONSE || c->state == PX_ST_UPGRADED)
            uv_timer_stop(&c->timer);
        if (c->state != PX_ST_UPGRADED)
            px_upstream_first_byte_timer(c->up, c->eng->cfg->upstream_first_byte_ms);
        px_upstream_read_start(c->up);
    }
    if (c->close_after_write && q == 0) {
        px_conn_close(c);
        return;
    }
    if (c->answers_paused && q < PX_WQ_LOW) {
        c->answers_paused = 0;
        px__process_pending(c);
    }
}

static void px__send_raw(px_conn_t *c, const char *data, size_t len, char *owned);

/* Encrypts (on TLS) and queues. owned, when not NULL, is taken. */
static void px__send(px_conn_t *c, const char *data, size_t len, char *owned)
{
    if (c->closing) {
        free(owned);
        return;
    }
    if (c->tls_state == NULL) {
        px__send_raw(c, data, len, owned);
        return;
    }
    int rc = px_tls_write(c->tls_state, data, len);
    free(owned);
    if (rc != 0) {
        px_conn_close(c);
        return;
    }
    size_t n;
    char *out = px_tls_take_output(c->tls_state, &n);
    if (out != NULL)
        px__send_raw(c, out, n, out);
}

/* Sends whatever OpenSSL wants to write (handshake records, alerts, tickets). */
static void px__tls_flush(px_conn_t *c)
{
    size_t n;
    char *out = px_tls_take_output(c->tls_state, &n);
    if (out != NULL)
        px__send_raw(c, out, n, out);
}

static void px__send_raw(px_conn_t *c, const char *data, size_t len, char *owned)
{
    if (c->closing) {
        free(owned);
        return;
    }
    if (px_write((uv_stream_t *)&c->tcp, data, len, owned, c, on_client_write) < 0)
        px_conn_close(c);
}

void px_conn_send(px_conn_t *c, const char *data, size_t len)
{
    px__send(c, data, len, NULL);
}

void px_conn_send_take(px_conn_t *c, char *buf, size_t len)
{
    px__send(c, buf, len, buf);
}

void px__close_when_flushed(px_conn_t *c)
{
    c->close_after_write = 1;
    px__client_read_stop(c);
    if (c->tcp.write_queue_size == 0)
        px_conn_close(c);
}

/* ---- the log line ----------------------------------------------------------------------- */

void px_conn_log_line(px_conn_t *c, const char *verdict, int status, const char *tail)
{
    if (c->logged)
        return;
    c->logged = 1;
    const char *annot = c->req != NULL ? c->req->annot : "";
    if (status < 0)
        px_log_printf(c->eng->log, "%s %s %s -> %s", verdict, c->method, c->url,
                      tail != NULL ? tail : "unknown error");
    else
        px_log_printf(c->eng->log, "%s %s %s -> %d%s%s", verdict, c->method, c->url, status,
                      annot, tail != NULL ? tail : "");
}


/* ---- reading ---------------------------------------------------------------------------- */

static void on_client_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    (void)hint;
    buf->base = malloc(PX_READ_BUF);
    buf->len = buf->base != NULL ? PX_READ_BUF : 0;
}

static void px__client_data(px_conn_t *c, char *data, size_t len, char *owned);
static void on_client_timer(uv_timer_t *t);
static void px__client_eof(px_conn_t *c, int err);

/* Client bytes arrived. Idle keep-alive: the idle timer restarts. A head has a deadline from
 * its first byte (so one byte a second cannot hold a connection). A request body restarts
 * the idle timer on every piece. */
static void px__client_activity(px_conn_t *c)
{
    if (c->state == PX_ST_READ_HEAD && c->rq.len == 0 && c->pending_len == 0)
        uv_timer_again(&c->timer);
    else if ((c->state == PX_ST_RELAY_BODY || c->state == PX_ST_DISCARD_BODY) && !c->req_done)
        px__client_idle_start(c);
}

void px__client_idle_start(px_conn_t *c)
{
    uv_timer_start(&c->timer, on_client_timer, c->eng->cfg->client_idle_ms, 0);
}

static void px__client_eof(px_conn_t *c, int err)
{
    if (c->state == PX_ST_UPGRADED && c->up != NULL && err == UV_EOF) {
        px__client_read_stop(c);
        px_upstream_shutdown(c->up);
        return;
    }
    if (c->req != NULL && !c->logged && c->state != PX_ST_READ_HEAD &&
        c->state != PX_ST_TLS_HANDSHAKE)
        px_conn_log_line(c, "ERROR", -1,
                         c->req_done ? "Client disconnected."
                                     : "Client disconnected before the request ended.");
    px_conn_close(c);
}

/* Moves decrypted bytes to the request logic while the connection wants them; what is not
 * wanted yet stays inside OpenSSL until reading restarts. */
static void px__tls_pump(px_conn_t *c)
{
    if (c->in_pump) {
        c->pump_again = 1;
        return;
    }
    c->in_pump = 1;
    do {
        c->pump_again = 0;
        while (!c->closing && c->reading) {
            char *plain = malloc(PX_TLS_READ_CHUNK);
            if (plain == NULL) {
                px_conn_close(c);
                break;
            }
            int n = px_tls_read(c->tls_state, plain, PX_TLS_READ_CHUNK);
            if (n <= 0) {
                free(plain);
                px__tls_flush(c);
                if (n < 0)
                    px__client_eof(c, n == UV_EOF ? UV_EOF : UV_EPROTO);
                break;
            }
            px__client_activity(c);
            px__client_data(c, plain, (size_t)n, plain);
        }
    } while (c->pump_again && !c->closing);
    c->in_pump = 0;
    if (!c->closing)
        px__tls_flush(c);
}

/* The first bytes of a connection: TLS (port 443, or a ClientHello on port 80) or not. */
static int px__sniff(px_conn_t *c, const char *data, size_t len)
{
    c->sniffed = 1;
    int is_tls = px_tls_sniff(data, len);
    if ((c->kind == PX_LISTEN_HTTPS || c->in_tunnel) && !is_tls)
        return PX_EPARSE; /* not TLS on the TLS port or in a tunnel: close without a word */
    if (!is_tls)
        return 0;
    if (c->eng->tls_server == NULL)
        return PX_EUNSUPPORTED;
    c->tls_state = px_tls_new(c->eng->tls_server, 1, c);
    if (c->tls_state == NULL)
        return PX_ENOMEM;
    c->tls = 1;
    px__conn_set_state(c, PX_ST_TLS_HANDSHAKE);
    uv_timer_start(&c->timer, on_client_timer, c->eng->cfg->handshake_ms, 0);
    return 0;
}

static void on_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    px_conn_t *c = s->data;
    if (nread == 0) {
        free(buf->base);
        return;
    }
    if (nread < 0) {
        free(buf->base);
        px__client_eof(c, (int)nread);
        return;
    }
    px__client_raw(c, buf->base, (size_t)nread);
}

/* Passthrough tunnel: gather the ClientHello, check its SNI against the CONNECT host, then
 * connect upstream and relay everything unread. */
static void px__tunnel_hello(px_conn_t *c, char *buf, size_t len)
{
    px_head_t *h = &c->rq;
    if (h->len + len > PX_HELLO_MAX) {
        free(buf);
        px_log_printf(c->eng->log, "BLOCKED CONNECT %s:%u -> 403 (tunnel: no TLS ClientHello)",
                      c->tunnel_host, c->tunnel_port);
        px_conn_close(c);
        return;
    }
    char *nb = realloc(h->buf, h->len + len);
    if (nb == NULL) {
        free(buf);
        px_conn_close(c);
        return;
    }
    h->buf = nb;
    h->cap = h->len + len;
    memcpy(h->buf + h->len, buf, len);
    h->len += len;
    free(buf);
    char sni[PX_HOST_MAX + 2];
    int rc = px_hello_sni((const unsigned char *)h->buf, h->len, sni, sizeof(sni));
    if (rc == 0)
        return;
    char norm[PX_HOST_MAX + 1] = "";
    if (rc == 1 && px__norm_host(norm, sizeof(norm), sni, strlen(sni)) < 0)
        rc = -1; /* longer than any name the CONNECT could have named */
    if (rc < 0 || strcmp(norm, c->tunnel_host) != 0) {
        px_log_printf(c->eng->log, "BLOCKED CONNECT %s:%u -> 403 (host mismatch: connect=%s, sni=%s)",
                      c->tunnel_host, c->tunnel_port, c->tunnel_host, rc < 0 ? "none" : norm);
        px_conn_close(c);
        return;
    }
    px__client_read_stop(c);
    uv_timer_stop(&c->timer);
    snprintf(c->method, sizeof(c->method), "CONNECT");
    snprintf(c->url, sizeof(c->url), "%s:%u", c->tunnel_host, c->tunnel_port);
    snprintf(c->host, sizeof(c->host), "%s", c->tunnel_host);
    c->port = c->tunnel_port;
    c->tls = 0; /* our side never speaks TLS in a passthrough tunnel */
    px_upstream_start(c);
}

/* Bytes from the client's socket (taken): sniffed, decrypted when TLS, then handed on. */
void px__client_raw(px_conn_t *c, char *buf, size_t len)
{
    if (c->state == PX_ST_TUNNEL_HELLO) {
        px__tunnel_hello(c, buf, len);
        return;
    }
    if (!c->sniffed && px__sniff(c, buf, len) != 0) {
        free(buf);
        px_conn_close(c);
        return;
    }
    if (c->tls_state == NULL) {
        px__client_activity(c);
        px__client_data(c, buf, len, buf);
        return;
    }
    int rc = px_tls_feed(c->tls_state, buf, len);
    free(buf);
    if (rc != 0) {
        px_conn_close(c);
        return;
    }
    if (!c->tls_done) {
        char err[256];
        rc = px_tls_handshake(c->tls_state, err, sizeof(err));
        px__tls_flush(c);
        if (rc < 0) {
            px_diag(PX_DIAG_INFO, "client TLS handshake failed: %s", err);
            px__close_when_flushed(c);
            return;
        }
        if (rc == 0)
            return;
        c->tls_done = 1;
        px__conn_set_state(c, PX_ST_READ_HEAD);
        uv_timer_start(&c->timer, on_client_timer, c->eng->cfg->client_idle_ms,
                       c->eng->cfg->client_idle_ms);
    }
    px__tls_pump(c);
}

void px__client_read_start(px_conn_t *c)
{
    if (c->reading || c->closing || c->close_after_write)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_client_alloc, on_client_read) == 0)
        c->reading = 1;
    /* plaintext may already wait inside OpenSSL */
    if (c->reading && c->tls_state != NULL && c->tls_done)
        px__tls_pump(c);
}

void px__client_read_stop(px_conn_t *c)
{
    if (!c->reading)
        return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

void px__pending_add(px_conn_t *c, const char *data, size_t len)
{
    if (len == 0)
        return;
    if (c->pending_len + len > PX_HEAD_BUF_MAX) {
        px__client_read_stop(c);
        px_conn_close(c);
        return;
    }
    char *p = realloc(c->pending, c->pending_len + len);
    if (p == NULL) {
        px_conn_close(c);
        return;
    }
    memcpy(p + c->pending_len, data, len);
    c->pending = p;
    c->pending_len += len;
}


static void px__client_data(px_conn_t *c, char *data, size_t len, char *owned)
{
    switch (c->state) {
    case PX_ST_READ_HEAD: {
        const char *reason;
        int rc = px_head_feed(&c->rq, &c->req_parser, data, len, &reason);
        free(owned);
        if (rc < 0) {
            px__bad_request(c, rc == PX_ETOOBIG ? 431 : 400, reason);
            return;
        }
        if (rc == 1)
            px__request_head_done(c);
        return;
    }
    case PX_ST_RELAY_BODY:
    case PX_ST_DISCARD_BODY:
        if (!c->req_done) {
            int took;
            size_t used = px__body_feed(c, data, len, owned, &took);
            if (c->closing) {
                if (!took)
                    free(owned);
                return;
            }
            if (c->req_done) {
                px__pending_add(c, data + used, len - used);
                if (c->state == PX_ST_DISCARD_BODY)
                    px__exchange_done(c);
                else
                    px__client_read_stop(c);
            }
            if (!took)
                free(owned);
            return;
        }
        break;
    case PX_ST_UPGRADED:
        if (c->up != NULL) {
            px_upstream_send_take(c->up, owned, len);
            if (px_upstream_queued(c->up) > PX_WQ_HIGH)
                px__pause_client(c);
            return;
        }
        break;
    default:
        break;
    }
    /* Bytes of a later (pipelined) request: keep them for their turn. */
    px__pending_add(c, data, len);
    free(owned);
    if (!c->closing && c->pending_len > PX_HEAD_MAX)
        px__client_read_stop(c);
}

/* ---- exchange end and keep-alive --------------------------------------------------------- */

void px__exchange_done(px_conn_t *c)
{
    if (c->resp_started)
        px_conn_log_line(c, "allowed", c->resp_status, NULL);
    if (c->up != NULL) {
        /* whether upstream may be reused depends on upstream alone: the client's own
         * Connection: close is hop-by-hop and never went there */
        int reusable = c->resp_done && c->req_done && c->resp_started &&
                       !llhttp_message_needs_eof(&c->resp_parser) &&
                       llhttp_should_keep_alive(&c->resp_parser);
        px_upstream_t *u = px__up_detach(c);
        px_upstream_release(u, reusable);
    }
    int close = !c->req_keepalive || c->resp_close || c->eng->stopping;
    /* reset for the next request */
    if (c->req != NULL) {
        px__addons_end(c);
        addon_req_reset(c->req);
        free(c->req); /* an idle keep-alive connection keeps no request view */
        c->req = NULL;
    }
    px_snapshot_unref(c->snap);
    c->snap = NULL;
    px_head_free(&c->rq); /* nor a head buffer */
    px_head_free(&c->rs);
    free(c->bodybuf);
    free(c->outbody);
    c->bodybuf = c->outbody = NULL;
    c->bodylen = c->bodycap = c->outlen = c->outcap = 0;
    c->filter = c->rechunk = c->filter_err = 0;
    c->req_done = c->resp_done = c->resp_started = 0;
    c->resp_status = 0;
    c->resp_close = 0;
    c->interim = 0;
    c->logged = 0;
    c->discarded = 0;
    c->method[0] = '\0';
    c->url[0] = '\0';
    if (close) {
        px__close_when_flushed(c);
        return;
    }
    px__conn_set_state(c, PX_ST_READ_HEAD);
    llhttp_init(&c->req_parser, HTTP_REQUEST, &c->eng->req_settings);
    c->req_parser.data = &c->rq;
    px__process_pending(c);
}

static void on_client_timer(uv_timer_t *t)
{
    px_conn_t *c = t->data;
    if (c->state == PX_ST_READ_HEAD && c->rq.len > 0 && !c->logged) {
        snprintf(c->method, sizeof(c->method), "-");
        snprintf(c->url, sizeof(c->url), "-");
        px_conn_log_line(c, "BLOCKED", 408, " (request head not received in time)");
    } else if (c->req != NULL && c->method[0] != '\0' && !c->logged) {
        px_conn_log_line(c, "ERROR", -1,
                         c->req_done ? "Client stopped reading the response"
                                     : "Client stalled during the request body");
    }
    px_conn_close(c);
}

/* Parses buffered pipelined bytes, one request at a time; then reads the socket again. */
void px__process_pending(px_conn_t *c)
{
    /* Requests answered at once (403s) end inside px__client_data and land here again:
     * the outer loop takes the next one, so thousands of pipelined requests never nest. */
    if (c->in_pending)
        return;
    c->in_pending = 1;
    while (!c->closing && c->state == PX_ST_READ_HEAD && c->pending_len > 0) {
        if (c->tcp.write_queue_size > PX_WQ_HIGH) {
            /* our own answers (403s to pipelined requests) wait for the client to read them:
             * the rest waits too, and so does reading (on_client_write picks it up again) */
            c->answers_paused = 1;
            c->in_pending = 0;
            px__client_read_stop(c);
            uv_timer_start(&c->timer, on_client_timer, c->eng->cfg->client_idle_ms, 0);
            return;
        }
        char *p = c->pending;
        size_t n = c->pending_len;
        c->pending = NULL;
        c->pending_len = 0;
        px__client_data(c, p, n, p);
    }
    c->in_pending = 0;
    if (!c->closing && c->state == PX_ST_READ_HEAD) {
        uv_timer_start(&c->timer, on_client_timer, c->eng->cfg->client_idle_ms,
                       c->eng->cfg->client_idle_ms);
        px__client_read_start(c);
    }
}

/* OpenSSL asks for the certificate once the ClientHello is read: mint (or take from the
 * cache) a leaf for the SNI, or for the proxy IP when there is none. */
static int on_tls_cert(SSL *ssl, void *arg)
{
    (void)arg;
    px_conn_t *c = SSL_get_app_data(ssl);
    px_engine_t *eng = c->eng;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    char ipbuf[64];
    char norm[CA_NAME_MAX + 1];
    if (name != NULL && name[0] != '\0') {
        if (ca_name_normalize(name, strlen(name), norm, sizeof(norm), NULL) != 0)
            return 0; /* a name no certificate can carry: fail the handshake */
        snprintf(c->sni, sizeof(c->sni), "%s", norm);
        c->has_sni = 1;
        name = norm;
        if (c->in_tunnel && strcmp(norm, c->tunnel_host) != 0) {
            /* a tunnel to one host, a handshake for another */
            px_log_printf(eng->log,
                          "BLOCKED CONNECT %s:%u -> 403 (host mismatch: connect=%s, sni=%s)",
                          c->tunnel_host, c->tunnel_port, c->tunnel_host, norm);
            return 0;
        }
    } else if (c->in_tunnel) {
        name = c->tunnel_host;
    } else {
        inet_ntop(AF_INET, &eng->proxy_ip, ipbuf, sizeof(ipbuf));
        name = ipbuf;
    }
    ca_leaf_t *leaf = NULL;
    if (ca_leaf_acquire(eng->ca, name, strlen(name), &leaf) != 0)
        return 0;
    int ok = SSL_use_certificate(ssl, ca_leaf_get_cert(leaf)) == 1 &&
             SSL_use_PrivateKey(ssl, ca_leaf_get_key(leaf)) == 1 &&
             SSL_set1_chain(ssl, ca_leaf_get_chain(leaf)) == 1;
    ca_leaf_release(leaf);
    return ok ? 1 : 0;
}

int px_conn_tls_cert_cb(SSL *ssl, void *arg)
{
    return on_tls_cert(ssl, arg);
}

static void on_accept_failed_closed(uv_handle_t *h)
{
    free(h->data);
}

void px_conn_accept(px_listener_t *l)
{
    px_engine_t *eng = l->eng;
    px_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->eng = eng;
    c->kind = l->kind;
    c->tls = l->kind == PX_LISTEN_HTTPS;
    uv_tcp_init(eng->loop, &c->tcp);
    c->tcp.data = c;
    c->handles_open = 1;
    if (uv_accept((uv_stream_t *)&l->tcp, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_accept_failed_closed);
        return;
    }
    uv_timer_init(eng->loop, &c->timer);
    c->timer.data = c;
    c->handles_open = 2;
    c->id = ++eng->next_id;
    c->prev = NULL;
    c->next = eng->conns;
    if (eng->conns != NULL)
        eng->conns->prev = c;
    eng->conns = c;
    eng->nconns++;
    if (eng->nconns > eng->nconns_peak)
        eng->nconns_peak = eng->nconns;
    if (eng->nconns > PX_CONNS_MAX || eng->stopping) {
        px_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (l->kind == PX_LISTEN_TRANSPARENT) {
        /* redirected by the kernel: the port the client dialed is part of the policy */
        uv_os_fd_t fd;
        struct sockaddr_storage od;
        socklen_t olen = sizeof(od);
        int ok = uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 &&
                 getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &od, &olen) == 0;
        if (!ok) {
            olen = sizeof(od);
            ok = uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 &&
                 getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &od, &olen) == 0;
        }
        if (!ok) {
            px_diag(PX_DIAG_WARN, "transparent connection without an original destination");
            px_conn_close(c);
            return;
        }
        c->orig_port = ntohs(od.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&od)->sin6_port
                                                      : ((struct sockaddr_in *)&od)->sin_port);
    }
    llhttp_init(&c->req_parser, HTTP_REQUEST, &eng->req_settings);
    c->req_parser.data = &c->rq;
    px__conn_set_state(c, PX_ST_READ_HEAD);
    px__process_pending(c);
}
