#include "proxy/px_client.h"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "ca/ca.h"
#include "proxy/px_answer.h"
#include "proxy/px_err.h"
#include "proxy/px_h1.h"
#include "proxy/px_hello.h"
#include "proxy/px_policy.h"
#include "proxy/px_sock.h"
#include "proxy/px_tls.h"
#include "proxy/px_upstream.h"
#include "proxy/px_xchg.h"

typedef enum px__mode {
    PX__SNIFF = 0,  /* the first bytes decide: TLS or not */
    PX__HANDSHAKE,  /* TLS handshake with the client */
    PX__HTTP,       /* HTTP/1 requests */
    PX__HELLO,      /* passthrough CONNECT: reading the ClientHello for its SNI */
    PX__DIAL,       /* passthrough CONNECT: connecting upstream */
    PX__TUNNEL,     /* bytes relayed unread */
} px__mode_t;

struct px_client {
    px_client_t *links[2];   /* the engine's list (px_engine_client_added) */
    px_sock_t sock;
    uv_timer_t timer;        /* handshake, request-head deadline, idle keep-alive, hello */
    px_defer_t defer;        /* input to process again after a pause */
    px_engine_t *eng;
    px_listener_kind_t kind;
    px__mode_t mode;
    int handles;
    int closing;
    int tls;                 /* the requests are https */
    char sni[PX_HOST_MAX + 1];
    char tunnel[PX_HOST_MAX + 1]; /* inside an accepted CONNECT: its host */
    uint16_t tunnel_port;
    uint16_t orig_port;      /* transparent: the port the client dialed */
    char connect_url[PX_URL_MAX]; /* the CONNECT target, for log lines */
    /* bytes read and not taken yet (a partial head, a pipelined request, a paused body) */
    char *in;
    size_t in_len, in_cap;
    /* HTTP/1 */
    px_h1_t parser;
    px_xchg_t *x;            /* the exchange of the request being read or answered */
    int body_paused;
    int resp_chunked;        /* the response going out is re-framed in chunks */
    int close_after;         /* the connection ends after this response */
    /* tunnels */
    px_tunnel_t *tun;
    px_upreq_t *dial;        /* passthrough: the upstream being connected */
    int eof;                 /* the client half-closed after a whole request */
    int timer_closed;
};

#define PX__LINGER_MS 5000 /* a closing connection's last bytes may take this long to leave */

static void px__close(px_client_t *c);
static void px__close_flush(px_client_t *c);
static const px_down_ops_t px__client_down;
static void px__process(px_client_t *c);
static void on_client_timer(uv_timer_t *t);

/* ---- input ----------------------------------------------------------------------------------- */

static int px__in_keep(px_client_t *c, const char *data, size_t len)
{
    if (len == 0)
        return 0;
    if (c->in_len + len > PX_IN_MAX)
        return PX_ETOOBIG;
    if (c->in_cap - c->in_len < len) {
        size_t cap = c->in_cap ? c->in_cap : 4096;
        while (cap - c->in_len < len)
            cap *= 2;
        char *nb = realloc(c->in, cap);
        if (nb == NULL)
            return PX_ENOMEM;
        c->in = nb;
        c->in_cap = cap;
    }
    memcpy(c->in + c->in_len, data, len);
    c->in_len += len;
    return 0;
}

static void px__in_drop(px_client_t *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
    if (c->in_len == 0 && c->in_cap > 16384) {
        free(c->in); /* an idle connection keeps no big buffer */
        c->in = NULL;
        c->in_cap = 0;
    }
}

/* ---- the HTTP/1 server side ------------------------------------------------------------------ */

static void px__timer(px_client_t *c, uint64_t ms)
{
    uv_timer_start(&c->timer, on_client_timer, ms, 0);
}

/* A head that cannot be parsed: 400 or 431, logged, then the connection closes. */
static void px__bad_request(px_client_t *c, int status, const char *reason)
{
    px_log_printf(c->eng->log, "BLOCKED - - -> %d (%s: %s)", status,
                  status == 431 ? "request head too large" : "malformed request", reason);
    char json[512];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": ");
    px_sbuf_adds(&b, status == 431 ? "\"request_header_fields_too_large\"" : "\"bad_request\"");
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, reason, strlen(reason));
    px_sbuf_adds(&b, "}");
    char out[PX_ANSWER_MAX];
    size_t n = px_answer_build(out, sizeof(out), status, json, b.len, 1);
    px_sock_write(&c->sock, out, n);
    px__close_flush(c);
}

static void px__connect(px_client_t *c, px_msg_t *m, const px_pre_t *pre);

static int on_req_head(void *owner, px_msg_t *m)
{
    px_client_t *c = owner;
    uv_timer_stop(&c->timer);
    px_pre_ctx_t ctx = {.kind = c->kind,
                        .tls = c->tls,
                        .sni = c->sni,
                        .tunnel = c->tunnel,
                        .tunnel_port = c->tunnel_port,
                        .orig_port = c->orig_port};
    px_pre_t *pre = malloc(sizeof(*pre));
    if (pre == NULL) {
        px_msg_free(m);
        px__close(c);
        return 1;
    }
    px_precheck(m, &ctx, pre);
    if (pre->verdict == PX_PRE_TUNNEL) {
        px__connect(c, m, pre);
        free(pre);
        return 1;
    }
    px_xchg_from_t from = {.ops = &px__client_down, .down = c, .pre = ctx};
    c->resp_chunked = 0;
    c->close_after = 0;
    c->x = px_xchg_start(c->eng, &from, m, pre);
    free(pre);
    if (c->x == NULL) {
        px__close(c);
        return 1;
    }
    return 0;
}

static int on_req_data(void *owner, const char *data, size_t len)
{
    px_client_t *c = owner;
    if (c->x != NULL)
        px_xchg_body(c->x, data, len);
    return c->body_paused || c->closing;
}

static int on_req_end(void *owner, const px_fields_t *t)
{
    px_client_t *c = owner;
    if (c->x != NULL)
        px_xchg_body_end(c->x, t);
    return 1;
}

static const px_h1_cbs_t px__req_cbs = {on_req_head, on_req_data, on_req_end};

/* Parses what it can of data: the current request's head and body; a further request waits for
 * the current exchange to finish. Returns the bytes taken. */
static size_t px__http_input(px_client_t *c, const char *data, size_t len)
{
    size_t off = 0;
    while (off < len && !c->closing && c->mode == PX__HTTP && !c->body_paused) {
        if (c->parser.state == PX_H1_DONE || c->parser.state == PX_H1_UPGRADED)
            break; /* the next request waits for this exchange */
        if (c->parser.state == PX_H1_HEAD && c->x != NULL)
            break;
        if (c->parser.state == PX_H1_HEAD && c->parser.hlen == 0)
            px__timer(c, c->eng->cfg->client_idle_ms); /* a head has a deadline from its start */
        size_t used = 0;
        int rc = px_h1_feed(&c->parser, data + off, len - off, &used);
        off += used;
        if (rc < 0) {
            if (c->x != NULL) {
                px_xchg_body_error(c->x, c->parser.reason);
                px_sock_read_stop(&c->sock);
                c->body_paused = 1; /* nothing more is read; the exchange closes us */
            } else {
                px__bad_request(c, rc == PX_ETOOBIG ? 431 : 400, c->parser.reason);
            }
            break;
        }
        if (used == 0)
            break;
    }
    return off;
}

/* Runs buffered input (after a pause, or when the next request may start). */
static void px__process(px_client_t *c)
{
    if (c->closing || c->mode != PX__HTTP)
        return;
    if (c->in_len > 0) {
        size_t used = px__http_input(c, c->in, c->in_len);
        if (!c->closing)
            px__in_drop(c, used);
    }
    if (c->closing)
        return;
    if (c->in_len >= PX_IN_MAX || c->body_paused)
        px_sock_read_stop(&c->sock);
    else
        px_sock_read_start(&c->sock);
}

static void on_client_read(px_sock_t *s, const char *data, size_t len);

/* Input kept while the connection changed what runs on it (a CONNECT became a tunnel): the
 * new mode reads it, from the loop. */
static void on_client_deferred(px_defer_t *d)
{
    px_client_t *c = px_container_of(d, px_client_t, defer);
    if (c->closing)
        return;
    if (c->mode == PX__HTTP) {
        px__process(c);
        return;
    }
    if ((c->mode == PX__SNIFF || c->mode == PX__HELLO) && c->in_len > 0) {
        char *buf = c->in;
        size_t n = c->in_len;
        c->in = NULL;
        c->in_len = c->in_cap = 0;
        on_client_read(&c->sock, buf, n);
        free(buf);
    }
    if (!c->closing && (c->mode == PX__SNIFF || c->mode == PX__HELLO))
        px_sock_read_start(&c->sock);
}

/* ---- the response toward the client (px_down_ops_t) ------------------------------------------- */

static void down_head(void *down, const px_resp_t *r)
{
    px_client_t *c = down;
    char line[256];
    const char *reason = r->reason;
    size_t rlen = r->reason_len;
    if (reason == NULL || rlen == 0) {
        reason = px_answer_reason(r->status);
        rlen = strlen(reason);
    }
    int n = snprintf(line, sizeof(line), "HTTP/1.1 %d %.*s\r\n", r->status,
                     (int)(rlen > 128 ? 128 : rlen), reason);
    px_sock_write(&c->sock, line, (size_t)n);
    const px_msg_t *m = r->fields;
    if (m != NULL) {
        int ci = px_msg_find(m, "connection");
        const char *cv = ci >= 0 ? m->buf + m->values[ci].off : NULL;
        size_t cl = ci >= 0 ? m->values[ci].len : 0;
        for (size_t i = 0; i < m->n; i++) {
            const char *name = m->buf + m->names[i].off;
            size_t nl = m->names[i].len;
            int keep = r->upgrade && ((nl == 10 && strncasecmp(name, "connection", 10) == 0) ||
                                      (nl == 7 && strncasecmp(name, "upgrade", 7) == 0));
            if (!keep && px_h1_hop_by_hop(name, nl, cv, cl))
                continue;
            px_sock_write(&c->sock, name, nl);
            px_sock_write(&c->sock, ": ", 2);
            px_sock_write(&c->sock, m->buf + m->values[i].off, m->values[i].len);
            px_sock_write(&c->sock, "\r\n", 2);
        }
    }
    if (r->ctype != NULL) {
        n = snprintf(line, sizeof(line), "Content-Type: %s\r\nContent-Length: %llu\r\n", r->ctype,
                     (unsigned long long)r->length);
        px_sock_write(&c->sock, line, (size_t)n);
    }
    if (r->status >= 200 && r->status != 101) {
        c->resp_chunked = r->body == PX_RESP_CHUNKED;
        if (r->close || r->body == PX_RESP_UNTIL_CLOSE) {
            c->close_after = 1;
            px_sock_write(&c->sock, "Connection: close\r\n", 19);
        }
    }
    px_sock_write(&c->sock, "\r\n", 2);
}

static void down_data(void *down, const char *data, size_t len)
{
    px_client_t *c = down;
    if (len == 0)
        return;
    if (c->resp_chunked) {
        char h[20];
        px_sock_write(&c->sock, h, px_h1_chunk_head(h, len));
        px_sock_write(&c->sock, data, len);
        px_sock_write(&c->sock, "\r\n", 2);
        return;
    }
    px_sock_write(&c->sock, data, len);
}

static void down_end(void *down, const px_fields_t *t)
{
    px_client_t *c = down;
    if (c->resp_chunked) {
        char last[PX_H1_LAST_CHUNK_MAX];
        px_sock_write(&c->sock, last, px_h1_last_chunk(last, t));
        c->resp_chunked = 0;
    }
}

static size_t down_queued(void *down)
{
    px_client_t *c = down;
    return px_sock_queued(&c->sock);
}

static void down_pause_body(void *down, int pause)
{
    px_client_t *c = down;
    c->body_paused = pause;
    if (pause) {
        px_sock_read_stop(&c->sock);
        return;
    }
    px_defer(&c->eng->loop, &c->defer, on_client_deferred);
}

static void px__tunnel_mode(px_client_t *c, px_tunnel_t *t);

static void down_tunnel(void *down, px_tunnel_t *t)
{
    px_client_t *c = down;
    px__tunnel_mode(c, t);
}

static void down_finished(void *down, int reuse)
{
    px_client_t *c = down;
    c->x = NULL;
    if (c->mode == PX__TUNNEL || c->closing)
        return;
    if (reuse < 0) {
        px__close(c);
        return;
    }
    if (reuse == 0 || c->close_after || c->eng->stopping || c->eof) {
        px__close_flush(c);
        return;
    }
    px_h1_next(&c->parser);
    c->body_paused = 0;
    px__timer(c, c->eng->cfg->client_idle_ms); /* idle keep-alive */
    px__process(c);
}

static const px_down_ops_t px__client_down = {
    .head = down_head,
    .data = down_data,
    .end = down_end,
    .queued = down_queued,
    .pause_body = down_pause_body,
    .tunnel = down_tunnel,
    .finished = down_finished,
};

/* ---- tunnels ---------------------------------------------------------------------------------- */

static void end_write(void *end, const char *data, size_t len)
{
    px_client_t *c = end;
    px_sock_write(&c->sock, data, len);
}

static size_t end_queued(void *end)
{
    px_client_t *c = end;
    return px_sock_queued(&c->sock);
}

static void end_read(void *end, int on)
{
    px_client_t *c = end;
    if (on)
        px_sock_read_start(&c->sock);
    else
        px_sock_read_stop(&c->sock);
}

static void end_shutdown(void *end)
{
    px_client_t *c = end;
    px_sock_shutdown(&c->sock);
}

static void end_finish(void *end)
{
    px_client_t *c = end;
    px_sock_close_when_flushed(&c->sock);
}

static void end_close(void *end)
{
    px_client_t *c = end;
    px__close(c);
}

static void on_tunnel_pending(px_defer_t *d)
{
    px_client_t *c = px_container_of(d, px_client_t, defer);
    if (c->closing || c->tun == NULL)
        return;
    if (c->in_len > 0 && px_tunnel_ready(c->tun)) {
        px_tunnel_data(c->tun, 0, c->in, c->in_len);
        c->in_len = 0;
    }
}

static void px__tunnel_mode(px_client_t *c, px_tunnel_t *t)
{
    px_tunnel_end_t e = {end_write, end_queued, end_read, end_shutdown, end_finish, end_close, c};
    c->mode = PX__TUNNEL;
    c->tun = t;
    uv_timer_stop(&c->timer);
    px_tunnel_attach(t, 0, &e);
    /* what the client sent after its request belongs to the new protocol: it goes once the
     * other end is attached too */
    if (c->in_len > 0)
        px_defer(&c->eng->loop, &c->defer, on_tunnel_pending);
}

/* ---- explicit proxy: CONNECT ------------------------------------------------------------------ */

static void on_dial_ready(void *owner);
static void on_dial_error(void *owner, const char *why);

static const px_up_cbs_t px__dial_cbs = {
    .on_ready = on_dial_ready,
    .on_error = on_dial_error,
};

/* `CONNECT host:port` on the explicit-proxy listener: refused at once when no entry names the
 * host; otherwise intercepted (TLS with a minted certificate inside, every request checked), or
 * relayed unread for `tls: passthrough` entries once the ClientHello's SNI matched. */
static void px__connect(px_client_t *c, px_msg_t *m, const px_pre_t *pre)
{
    snprintf(c->connect_url, sizeof(c->connect_url), "%s", pre->url);
    px_snapshot_t *snap = px_engine_snapshot_ref(c->eng);
    int passthrough = 0;
    addon_str_t h = {pre->host, pre->host_len};
    int ok = addon_policy_has_host(snap->cfg.policy, h, pre->port, 1, &passthrough);
    px_snapshot_unref(snap);
    if (!ok) {
        px_log_printf(c->eng->log, "BLOCKED CONNECT %s -> 403", c->connect_url);
        char json[1024];
        px_sbuf_t b;
        px_sbuf_init(&b, json, sizeof(json));
        px_sbuf_adds(&b, "{\"error\": \"blocked_by_network_allowlist\", \"host\": ");
        px_sbuf_json_str(&b, m->buf + m->target.off, m->target.len < 300 ? m->target.len : 300);
        px_sbuf_adds(&b, ", \"method\": \"CONNECT\", \"message\": ");
        px_sbuf_json_str(&b, ADDON_POLICY_MSG_HOST_PATH, sizeof(ADDON_POLICY_MSG_HOST_PATH) - 1);
        px_sbuf_adds(&b, "}");
        char out[PX_ANSWER_MAX];
        size_t n = px_answer_build(out, sizeof(out), 403, json, b.len, 1);
        px_sock_write(&c->sock, out, n);
        px_msg_free(m);
        px__close_flush(c);
        return;
    }
    px_msg_free(m);
    snprintf(c->tunnel, sizeof(c->tunnel), "%s", pre->norm_host);
    c->tunnel_port = pre->port;
    px_log_printf(c->eng->log, "allowed CONNECT %s -> 200%s", c->connect_url,
                  passthrough ? " tunnel" : "");
    px_sock_write(&c->sock, "HTTP/1.1 200 Connection established\r\n\r\n", 39);
    px_h1_free(&c->parser);
    px_h1_init(&c->parser, 1, &px__req_cbs, c);
    c->mode = passthrough ? PX__HELLO : PX__SNIFF;
    px__timer(c, c->eng->cfg->handshake_ms);
    /* what came after the CONNECT head belongs to the tunnel: the new mode reads it */
    px_defer(&c->eng->loop, &c->defer, on_client_deferred);
}

/* Passthrough: gathers the ClientHello and checks its SNI against the CONNECT host. */
static void px__hello(px_client_t *c)
{
    char sni[PX_HOST_MAX + 2];
    int rc = c->in_len > PX_HELLO_MAX ? PX_EPARSE
                                      : px_hello_sni((const unsigned char *)c->in, c->in_len, sni,
                                                     sizeof(sni));
    if (rc == 0)
        return;
    char norm[PX_HOST_MAX + 1] = "";
    if (rc == 1 && px_host_norm(norm, sizeof(norm), sni, strlen(sni)) < 0)
        rc = PX_EPARSE; /* longer than any name the CONNECT could have named */
    if (rc < 0 || strcmp(norm, c->tunnel) != 0) {
        if (c->in_len > PX_HELLO_MAX)
            px_log_printf(c->eng->log, "BLOCKED CONNECT %s -> 403 (tunnel: no TLS ClientHello)",
                          c->connect_url);
        else
            px_log_printf(c->eng->log,
                          "BLOCKED CONNECT %s -> 403 (host mismatch: connect=%s, sni=%s)",
                          c->connect_url, c->tunnel, rc < 0 ? "none" : norm);
        px__close(c);
        return;
    }
    c->mode = PX__DIAL;
    px_sock_read_stop(&c->sock);
    c->dial = px_up_open_raw(c->eng->up, c->tunnel, c->tunnel_port, &px__dial_cbs, c);
    if (c->dial == NULL)
        px__close(c);
}

static void on_dial_ready(void *owner)
{
    px_client_t *c = owner;
    px_tunnel_t *t = px_tunnel_new();
    if (t == NULL) {
        px_up_abort(c->dial);
        c->dial = NULL;
        px__close(c);
        return;
    }
    px_upreq_t *r = c->dial;
    c->dial = NULL;
    px__tunnel_mode(c, t); /* the ClientHello waits in c->in: it goes first */
    px_up_tunnel(r, t, 1);
}

static void on_dial_error(void *owner, const char *why)
{
    px_client_t *c = owner;
    c->dial = NULL;
    px_log_printf(c->eng->log, "ERROR CONNECT %s -> %s", c->connect_url, why);
    px__close(c);
}

/* ---- reading ---------------------------------------------------------------------------------- */

static void px__start_http(px_client_t *c)
{
    c->mode = PX__HTTP;
    px__timer(c, c->eng->cfg->client_idle_ms);
}

static void on_client_read(px_sock_t *s, const char *data, size_t len)
{
    px_client_t *c = s->data;
    switch (c->mode) {
    case PX__SNIFF: {
        int tls = px_tls_sniff(data, len);
        if ((c->kind == PX_LISTEN_HTTPS || c->tunnel[0] != '\0') && !tls) {
            px__close(c); /* not TLS on the TLS port or in a tunnel: close without a word */
            return;
        }
        if (tls) {
            if (c->eng->tls_server == NULL ||
                px_sock_tls_server(&c->sock, c->eng->tls_server, c, data, len) != 0) {
                px__close(c);
                return;
            }
            c->tls = 1;
            c->mode = PX__HANDSHAKE;
            px__timer(c, c->eng->cfg->handshake_ms);
            return;
        }
        px__start_http(c);
        /* fall through: these bytes are the first request */
    }
        /* fallthrough */
    case PX__HTTP: {
        if (c->in_len > 0) {
            if (px__in_keep(c, data, len) != 0) {
                px__close(c);
                return;
            }
            px__process(c);
            return;
        }
        size_t used = px__http_input(c, data, len);
        if (c->closing)
            return;
        if (px__in_keep(c, data + used, len - used) != 0) {
            px__close(c);
            return;
        }
        if (c->in_len >= PX_IN_MAX || c->body_paused || (c->in_len > 0 && c->x != NULL &&
                                                         c->parser.state != PX_H1_BODY))
            px_sock_read_stop(s); /* read on when this exchange is done */
        return;
    }
    case PX__HELLO:
        if (px__in_keep(c, data, len) != 0 || c->in_len > PX_HELLO_MAX) {
            px_log_printf(c->eng->log, "BLOCKED CONNECT %s -> 403 (tunnel: no TLS ClientHello)",
                          c->connect_url);
            px__close(c);
            return;
        }
        px__hello(c);
        return;
    case PX__TUNNEL:
        px_tunnel_data(c->tun, 0, data, len);
        return;
    default:
        return;
    }
}

/* A client that aborts the handshake over airlock's certificate most likely does not trust
 * airlock's CA: the most common failure of intercepting proxies, and a silent one for the
 * agent. One line per host per minute says so, with the runtime the ClientHello looked like
 * and the fix for it. */
static void px__tls_rejected(px_client_t *c)
{
    px_tls_t *t = c->sock.tls;
    int alert = px_tls_peer_alert(t);
    const char *why;
    char what[96];
    switch (alert) {
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_REVOKED:
        snprintf(what, sizeof(what), "client alert: %s",
                 SSL_alert_desc_string_long(alert));
        why = what;
        break;
    case -1:
        if (!px_tls_sent_certificate(t))
            return;
        why = "the client closed the connection after airlock's certificate";
        break;
    default:
        return;
    }
    char ip[64];
    const char *host = c->sni;
    if (host[0] == '\0') {
        inet_ntop(AF_INET, &c->eng->proxy_ip, ip, sizeof(ip));
        host = ip;
    }
    px_engine_t *eng = c->eng;
    uint64_t now = uv_now(eng->loop.uv);
    for (size_t i = 0; i < PX_REJECT_HOSTS; i++)
        if (eng->rejected[i].at != 0 && now - eng->rejected[i].at < PX_REJECT_EVERY_MS &&
            strcmp(eng->rejected[i].host, host) == 0)
            return;
    size_t slot = eng->rejected_next++ % PX_REJECT_HOSTS;
    snprintf(eng->rejected[slot].host, sizeof(eng->rejected[slot].host), "%s", host);
    eng->rejected[slot].at = now;
    px_runtime_t rt = px_tls_runtime(t);
    if (rt == PX_RT_UNKNOWN)
        px_log_printf(eng->log, "TLS REJECTED %s (%s; the client does not trust airlock's CA)",
                      host, why);
    else
        px_log_printf(eng->log,
                      "TLS REJECTED %s (%s; the client does not trust airlock's CA; it looks "
                      "like %s: %s)",
                      host, why, px_runtime_name(rt), px_runtime_fix(rt));
}

static void on_client_handshake(px_sock_t *s, int status)
{
    px_client_t *c = s->data;
    if (status < 0) {
        px_diag(PX_DIAG_INFO, "client TLS handshake failed: %s", px_sock_tls_error(s));
        px__tls_rejected(c);
        px__close_flush(c); /* the alert goes out */
        return;
    }
    px__start_http(c);
}

static void on_client_eof(px_sock_t *s, int err)
{
    px_client_t *c = s->data;
    if (c->mode == PX__TUNNEL) {
        px_tunnel_eof(c->tun, 0, err);
        return;
    }
    if (c->x != NULL) {
        if (err == UV_EOF && c->parser.state == PX_H1_DONE) {
            /* a half-close after a whole request: the response still goes out, then the
             * connection ends */
            c->eof = 1;
            return;
        }
        px_xchg_t *x = c->x;
        c->x = NULL;
        int reading = c->parser.state == PX_H1_BODY;
        px_xchg_abort(x, reading ? "Client disconnected before the request ended."
                                 : "Client disconnected.");
    }
    px__close(c);
}

static void on_client_drain(px_sock_t *s)
{
    px_client_t *c = s->data;
    if (c->mode == PX__TUNNEL)
        px_tunnel_drain(c->tun, 0);
    else if (c->x != NULL)
        px_xchg_drain(c->x);
}

static void on_client_timer(uv_timer_t *t)
{
    px_client_t *c = t->data;
    if (c->closing) {
        px_sock_close(&c->sock); /* the last bytes did not leave in time */
        return;
    }
    if (c->mode == PX__HTTP && c->x == NULL && px_h1_mid_head(&c->parser))
        px_log_printf(c->eng->log, "BLOCKED - - -> 408 (request head not received in time)");
    px__close(c);
}

/* ---- lifetime --------------------------------------------------------------------------------- */

static void px__free_if_done(px_client_t *c)
{
    if (--c->handles > 0)
        return;
    px_engine_client_removed(c->eng, c);
    px_h1_free(&c->parser);
    free(c->in);
    free(c);
}

static void on_timer_closed(uv_handle_t *h)
{
    px__free_if_done(h->data);
}

static void px__timer_close(px_client_t *c)
{
    if (c->timer_closed)
        return;
    c->timer_closed = 1;
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}

static void on_client_closed(px_sock_t *s)
{
    px_client_t *c = s->data;
    if (c->tun != NULL) {
        px_tunnel_release(c->tun, 0);
        c->tun = NULL;
    }
    px__timer_close(c);
    px__free_if_done(c);
}

/* What every close does first: the exchange (if any) and a dial end; nothing more is read. */
static void px__shut(px_client_t *c)
{
    c->closing = 1;
    if (c->x != NULL) {
        px_xchg_t *x = c->x;
        c->x = NULL;
        px_xchg_abort(x, NULL);
    }
    if (c->dial != NULL) {
        px_up_abort(c->dial);
        c->dial = NULL;
    }
    px_defer_cancel(&c->eng->loop, &c->defer);
}

/* The one way to close now. The memory goes in the last close callback. */
static void px__close(px_client_t *c)
{
    if (!c->closing)
        px__shut(c);
    px__timer_close(c);
    px_sock_close(&c->sock);
}

/* Closes once what was written (an answer, an alert) is out, within PX__LINGER_MS. */
static void px__close_flush(px_client_t *c)
{
    if (c->closing)
        return;
    px__shut(c);
    if (!c->timer_closed)
        px__timer(c, PX__LINGER_MS);
    px_sock_close_when_flushed(&c->sock);
}

void *px_client_links(px_client_t *c)
{
    return c->links;
}

void px_client_close(px_client_t *c, const char *reason)
{
    if (c->x != NULL) {
        px_xchg_t *x = c->x;
        c->x = NULL;
        px_xchg_abort(x, reason);
    }
    px__close(c);
}

static const px_sock_cbs_t px__client_sock_cbs = {
    .on_read = on_client_read,
    .on_eof = on_client_eof,
    .on_drain = on_client_drain,
    .on_handshake = on_client_handshake,
    .on_closed = on_client_closed,
};

/* Transparent listener: the port the client really dialed (the policy checks it). */
static int px__orig_port(px_client_t *c)
{
    uv_os_fd_t fd;
    struct sockaddr_storage od;
    socklen_t olen = sizeof(od);
    if (uv_fileno((uv_handle_t *)&c->sock.tcp, &fd) != 0)
        return -1;
    if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &od, &olen) != 0) {
        olen = sizeof(od);
        if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &od, &olen) != 0)
            return -1;
    }
    c->orig_port = ntohs(od.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&od)->sin6_port
                                                  : ((struct sockaddr_in *)&od)->sin_port);
    return 0;
}

void px_client_accept(px_listener_t *l)
{
    px_engine_t *eng = l->eng;
    px_client_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->eng = eng;
    c->kind = l->kind;
    px_sock_init(&eng->loop, &c->sock, &px__client_sock_cbs, c);
    uv_timer_init(eng->loop.uv, &c->timer);
    c->timer.data = c;
    c->handles = 2;
    px_h1_init(&c->parser, 1, &px__req_cbs, c);
    px_engine_client_added(eng, c);
    if (px_sock_accept(&c->sock, (uv_stream_t *)&l->tcp) != 0 || eng->stopping ||
        eng->nclients > PX_CONNS_MAX) {
        px_client_close(c, NULL);
        return;
    }
    if (l->kind == PX_LISTEN_TRANSPARENT && px__orig_port(c) != 0) {
        px_diag(PX_DIAG_WARN, "transparent connection without an original destination");
        px_client_close(c, NULL);
        return;
    }
    c->mode = PX__SNIFF;
    px__timer(c, l->kind == PX_LISTEN_HTTPS ? eng->cfg->handshake_ms : eng->cfg->client_idle_ms);
    px_sock_read_start(&c->sock);
}

/* ---- certificates ----------------------------------------------------------------------------- */

int px_client_cert_cb(SSL *ssl, void *arg)
{
    px_engine_t *eng = arg;
    px_client_t *c = SSL_get_app_data(ssl);
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    char ipbuf[64];
    char norm[CA_NAME_MAX + 1];
    if (name != NULL && name[0] != '\0') {
        if (ca_name_normalize(name, strlen(name), norm, sizeof(norm), NULL) != 0)
            return 0; /* a name no certificate can carry: fail the handshake */
        snprintf(c->sni, sizeof(c->sni), "%s", norm);
        name = norm;
        if (c->tunnel[0] != '\0' && strcmp(norm, c->tunnel) != 0) {
            /* a tunnel to one host, a handshake for another */
            px_log_printf(eng->log,
                          "BLOCKED CONNECT %s:%u -> 403 (host mismatch: connect=%s, sni=%s)",
                          c->tunnel, c->tunnel_port, c->tunnel, norm);
            return 0;
        }
    } else if (c->tunnel[0] != '\0') {
        name = c->tunnel;
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
