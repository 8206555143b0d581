/* The HTTP/2 server side of a client connection: the codec (px_h2.h) reads frames; each request
 * stream becomes an exchange (px_xchg.h) exactly as an HTTP/1 request does (the same pre-checks,
 * policy, addons and log line), and its response goes back through px_down_ops_t as HEADERS,
 * DATA and trailers on that stream. A refused stream is answered on its own; the connection and
 * the other streams go on.
 *
 * Memory stays bounded per stream: request body bytes that arrive while the exchange paused the
 * body wait here (at most the stream's window, PX_H2_STREAM_WINDOW, because the window reopens
 * only as they are handed on), and response bytes wait in the codec's stream queue, whose high
 * mark pauses the upstream. Output is taken from the codec only while the socket has room. */
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "proxy/px_answer.h"
#include "proxy/px_client_int.h"
#include "proxy/px_metrics.h"
#include "http/px_h2.h"
#include "http/px_h2io.h"

typedef struct px__h2s px__h2s_t; /* an HTTP/2 stream's exchange, or its WebSocket tunnel */

struct px__h2s {
    px__h2s_t *next, *prev;
    px_client_t *c;
    int32_t sid;
    px_xchg_t *x;
    px_defer_t resume; /* a paused body goes on, from the loop */
    int paused;        /* the exchange paused the request body */
    char *hold;        /* body bytes that came while paused (not consumed: the window holds) */
    size_t hold_len, hold_cap;
    px_fields_t *end_t; /* the request ended while bytes were held: its trailers */
    int end_held;
    int resp_body; /* the response head said a body follows */
    int resp_ended;
    int ws;           /* an extended CONNECT for a WebSocket (RFC 8441) */
    px_tunnel_t *tun; /* after its 200: the stream is side 0 of this tunnel */
};

/* The HTTP/2 server side's state, made when the ALPN chose h2 (px__cl_start_h2), freed in the
 * connection's last close callback. */
struct px__h2srv {
    px_client_t *c;
    px_h2_t *codec;
    px__h2s_t *h2s; /* the streams with an exchange or a tunnel */
    size_t h2n;
    px_defer_t pump;  /* output to take from the codec, from the loop */
    px_quiet_t quiet; /* after a quiet period without streams, the codec gives pages back */
    int busy;         /* inside px_h2_feed() */
};

static const px_down_ops_t px__h2_down;

static px__h2s_t *px__find(px_client_t *c, int32_t sid)
{
    for (px__h2s_t *s = c->h2->h2s; s != NULL; s = s->next)
        if (s->sid == sid)
            return s;
    return NULL;
}

static void px__unlink(px__h2s_t *s)
{
    px_client_t *c = s->c;
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        c->h2->h2s = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    c->h2->h2n--;
    px_metrics_h2_stream(-1);
    px_defer_cancel(&c->ctx->loop, &s->resume);
    free(s->hold);
    free(s->end_t);
    free(s);
}

/* A tunnel stream's end: the tunnel goes without it. */
static void px__tun_gone(px__h2s_t *s)
{
    px_tunnel_t *t = s->tun;
    s->tun = NULL;
    px__unlink(s);
    if (t != NULL)
        px_tunnel_release(t, 0);
}

/* The stream ends from the client's side (a reset, or the connection going): its tunnel or
 * its exchange is told why (reason, for the log line), after the stream is gone. Apart from
 * the setup failures in on_h2_request and the exchange's own end (down_finished), every stream
 * ends here. */
static void px__h2s_drop(px__h2s_t *s, const char *reason)
{
    if (s->tun != NULL) {
        px__tun_gone(s);
        return;
    }
    px_xchg_t *x = s->x;
    s->x = NULL;
    px__unlink(s);
    if (x != NULL)
        px_xchg_abort(x, reason);
}

static void on_h2_pump(px_defer_t *d);

/* Output is taken from the loop: one batch of frames for everything the exchanges did. Inside
 * px_h2_feed() the input's end takes it. */
static void px__kick(px_client_t *c)
{
    if (!c->closing && !c->h2->busy)
        px_defer(&c->ctx->loop, &c->h2->pump, on_h2_pump);
}

/* ---- the codec's callbacks --------------------------------------------------------------- */

/* ---- WebSocket over HTTP/2 (RFC 8441) ----------------------------------------------------- */

/* Appends field name: value to head m. Returns 0 or -1 (no room, no memory). */
static int px__msg_add(px_msg_t *m, const char *name, const char *value, size_t vlen)
{
    size_t nl = strlen(name);
    if (m->n >= PX_HEADERS_MAX)
        return -1;
    char *nb = realloc(m->buf, m->len + nl + vlen);
    if (nb == NULL)
        return -1;
    m->buf = nb;
    memcpy(m->buf + m->len, name, nl);
    m->names[m->n] = (px_span_t){(uint32_t)m->len, (uint32_t)nl};
    m->len += nl;
    memcpy(m->buf + m->len, value, vlen);
    m->values[m->n] = (px_span_t){(uint32_t)m->len, (uint32_t)vlen};
    m->len += vlen;
    m->n++;
    return 0;
}

/* An extended CONNECT for a WebSocket becomes the HTTP/1.1 upgrade it stands for: a GET of its
 * :path with Upgrade: websocket and a fresh Sec-WebSocket-Key (RFC 8441 has none), decided by
 * the policy as any WebSocket is; the upstream's 101 becomes the stream's 200. */
static int px__ws_request(px_msg_t *m)
{
    unsigned char key[16];
    char b64[32];
    if (RAND_bytes(key, sizeof(key)) != 1)
        return -1;
    int n = EVP_EncodeBlock((unsigned char *)b64, key, sizeof(key));
    if (px__msg_add(m, "upgrade", "websocket", 9) != 0 ||
        px__msg_add(m, "connection", "Upgrade", 7) != 0 ||
        px__msg_add(m, "sec-websocket-key", b64, (size_t)n) != 0)
        return -1;
    m->method = HTTP_GET;
    m->flags |= PX_MSG_NO_BODY; /* what follows the 200 is the tunnel's */
    return 0;
}

static void on_tun_release(px_defer_t *d);

static void tun_write(void *end, const char *data, size_t len)
{
    px__h2s_t *s = end;
    if (s->resp_ended)
        return;
    if (px_h2_send_data(s->c->h2->codec, s->sid, data, len) != 0)
        px_h2_reset(s->c->h2->codec, s->sid, PX_H2_INTERNAL_ERROR);
    px__kick(s->c);
}

static int down_full(void *down);

static void on_resume(px_defer_t *d);

static void tun_read(void *end, int on)
{
    px__h2s_t *s = end;
    s->paused = !on;
    if (on && (s->hold_len > 0 || s->end_held))
        px_defer(&s->c->ctx->loop, &s->resume, on_resume);
}

static void tun_shutdown(void *end)
{
    px__h2s_t *s = end;
    if (!s->resp_ended) {
        s->resp_ended = 1;
        px_h2_end(s->c->h2->codec, s->sid, NULL);
        px__kick(s->c);
    }
}

/* Both halves ended (finish) or the tunnel failed (close): the stream lets go of the tunnel
 * from the loop (never inside the tunnel's own call). */
static void tun_finish(void *end)
{
    px__h2s_t *s = end;
    tun_shutdown(end);
    px_defer(&s->c->ctx->loop, &s->resume, on_tun_release);
}

static void tun_close(void *end)
{
    px__h2s_t *s = end;
    if (!s->resp_ended) {
        s->resp_ended = 1;
        px_h2_reset(s->c->h2->codec, s->sid, PX_H2_CANCEL);
        px__kick(s->c);
    }
    px_defer(&s->c->ctx->loop, &s->resume, on_tun_release);
}

static void on_tun_release(px_defer_t *d)
{
    px__tun_gone(px_container_of(d, px__h2s_t, resume));
}

static void on_h2_request(void *owner, int32_t sid, px_msg_t *m, const px_h2_req_t *rq)
{
    px_client_t *c = owner;
    if (c->closing) {
        px_msg_free(m);
        return;
    }
    px__h2s_t *s = calloc(1, sizeof(*s));
    px_pre_t *pre = malloc(sizeof(*pre));
    if (s == NULL || pre == NULL) {
        free(s);
        free(pre);
        px_msg_free(m);
        px_h2_reset(c->h2->codec, sid, PX_H2_INTERNAL_ERROR);
        return;
    }
    s->c = c;
    s->sid = sid;
    s->next = c->h2->h2s;
    if (c->h2->h2s != NULL)
        c->h2->h2s->prev = s;
    c->h2->h2s = s;
    c->h2->h2n++;
    px_metrics_h2_stream(1);
    if (m->method == HTTP_CONNECT && px_msg_span_ieq(m, rq->protocol, "websocket")) {
        if (px__ws_request(m) != 0) {
            px_msg_free(m);
            px_h2_reset(c->h2->codec, sid, PX_H2_INTERNAL_ERROR);
            px__unlink(s);
            free(pre);
            return;
        }
        s->ws = 1;
    }
    /* a body of unknown length goes on as chunked (toward an HTTP/1 upstream); every stream
     * is its own message, so the "connection" always stays */
    if (!(m->flags & (PX_MSG_LENGTH | PX_MSG_NO_BODY)) && m->method != HTTP_CONNECT)
        m->flags |= PX_MSG_CHUNKED;
    m->flags |= PX_MSG_KEEPALIVE;
    px_pre_ctx_t ctx = {.kind = c->kind,
                        .tls = c->tls,
                        .sni = c->sni,
                        .tunnel = c->tunnel,
                        .tunnel_port = c->tunnel_port,
                        .orig_port = c->orig_port};
    px_precheck(m, &ctx, pre);
    if (pre->verdict == PX_PRE_TUNNEL)
        pre->verdict = PX_PRE_NO_TUNNEL; /* a CONNECT stream never becomes a tunnel here */
    px_xchg_from_t from = {.ops = &px__h2_down,
                           .down = s,
                           .pre = ctx,
                           .log = c->log,
                           .snap = px__cl_snap(c),
                           .up = px__cl_up(c),
                           .budgets = px__cl_budgets(c)};
    px__cl_timer_stop(c);
    s->x = px_xchg_start(c->ctx, &from, m, pre);
    free(pre);
    if (s->x == NULL) {
        px_h2_reset(c->h2->codec, sid, PX_H2_INTERNAL_ERROR);
        px__unlink(s);
    }
}

static int px__hold(px__h2s_t *s, const char *data, size_t len)
{
    if (px_h2io_grow(&s->hold, &s->hold_cap, s->hold_len, len) != 0)
        return PX_ENOMEM;
    memcpy(s->hold + s->hold_len, data, len);
    s->hold_len += len;
    return 0;
}

static void on_h2_data(void *owner, int32_t sid, const char *data, size_t len)
{
    px_client_t *c = owner;
    px__h2s_t *s = px__find(c, sid);
    if (s == NULL || (s->x == NULL && s->tun == NULL)) {
        px_h2_consume(c->h2->codec, sid, len); /* nobody wants these: the window reopens */
        return;
    }
    if (s->paused || s->hold_len > 0 || (s->ws && (s->tun == NULL || !px_tunnel_ready(s->tun)))) {
        if (px__hold(s, data, len) != 0)
            px_h2_reset(c->h2->codec, sid, PX_H2_INTERNAL_ERROR);
        return;
    }
    if (s->tun != NULL)
        px_tunnel_data(s->tun, 0, data, len);
    else
        px_xchg_body(s->x, data, len);
    px_h2_consume(c->h2->codec, sid, len);
}

static void on_h2_end(void *owner, int32_t sid, const px_fields_t *t)
{
    px_client_t *c = owner;
    px__h2s_t *s = px__find(c, sid);
    if (s == NULL || (s->x == NULL && s->tun == NULL))
        return;
    if (s->hold_len > 0 || (s->ws && s->tun == NULL)) {
        s->end_held = 1;
        if (t != NULL && t->n > 0) {
            s->end_t = malloc(sizeof(*s->end_t));
            if (s->end_t != NULL)
                memcpy(s->end_t, t, sizeof(*t));
        }
        return;
    }
    if (s->tun != NULL)
        px_tunnel_eof(s->tun, 0, UV_EOF);
    else if (!s->ws)
        px_xchg_body_end(s->x, t);
}

static void on_h2_reset(void *owner, int32_t sid, uint32_t code)
{
    px_client_t *c = owner;
    px__h2s_t *s = px__find(c, sid);
    if (s == NULL)
        return;
    px__h2s_drop(s, code == PX_H2_CANCEL || code == PX_H2_NO_ERROR
                        ? "Client reset the stream."
                        : "Client stream failed (HTTP/2 stream error).");
}

static void on_h2_drain(void *owner, int32_t sid)
{
    px_client_t *c = owner;
    px__h2s_t *s = px__find(c, sid);
    if (s != NULL && s->tun != NULL)
        px_tunnel_drain(s->tun, 0);
    else if (s != NULL && s->x != NULL)
        px_xchg_drain(s->x);
}

static void on_h2_refused(void *owner, int32_t sid, int status, const char *reason)
{
    (void)sid;
    px_client_t *c = owner;
    audit_event_t ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_BLOCKED, NULL, NULL, status);
    px_log_eventf(c->log, &ev, "%s: %s",
                  status == 431   ? "request head too large"
                  : status == 503 ? "request refused"
                                  : "malformed request",
                  reason);
}

static const px_h2_cbs_t px__h2_cbs = {
    .on_request = on_h2_request,
    .on_data = on_h2_data,
    .on_end = on_h2_end,
    .on_reset = on_h2_reset,
    .on_drain = on_h2_drain,
    .on_refused = on_h2_refused,
};

/* ---- the connection ---------------------------------------------------------------------- */

/* Quiet (PX_QUIET_MS untouched): the codec frees its output buffer; without streams it also
 * gives back the pages of nghttp2's frame buffer and stream table (~8 KiB an idle connection
 * after one request). */
static void on_h2_quiet(px_quiet_t *q)
{
    px__h2srv_t *h = px_container_of(q, px__h2srv_t, quiet);
    if (h->h2n == 0)
        px_h2_trim(h->codec);
    else
        px_h2_trim_output(h->codec);
}

/* Frames out while the socket has room; then the idle timer or the end. */
void px__cl_h2_pump(px_client_t *c)
{
    if (c->closing || c->h2 == NULL)
        return;
    while (!px_sock_full(&c->sock)) {
        const char *d;
        size_t n;
        if (px_h2_take_output(c->h2->codec, &d, &n) != 0) {
            px__cl_close(c);
            return;
        }
        if (n == 0)
            break;
        px_sock_write(&c->sock, d, n);
    }
    if (px_h2_done(c->h2->codec)) {
        px__cl_close_flush(c);
        return;
    }
    if (c->h2->h2n == 0 && !px_tmo_armed(&c->tmo))
        px__cl_timer(c, c->ctx->cfg->client_idle_ms); /* an idle connection has a deadline */
    px_quiet_touch(&c->ctx->loop, &c->h2->quiet, on_h2_quiet);
}

static void on_h2_pump(px_defer_t *d)
{
    px__cl_h2_pump(px_container_of(d, px__h2srv_t, pump)->c);
}

void px__cl_start_h2(px_client_t *c)
{
    px__h2srv_t *h = calloc(1, sizeof(*h));
    if (h != NULL && (h->codec = px_h2_new(&px__h2_cbs, c)) == NULL) {
        free(h);
        h = NULL;
    }
    if (h == NULL) {
        px__cl_close(c);
        return;
    }
    h->c = c;
    c->h2 = h;
    /* the header bytes its streams hold count for its sandbox and the process too (until
     * px__cl_h2_shut: the sandbox may go before the codec) */
    px_h2_share_t sh[PX_H2_SHARES] = {
        {&c->ctx->h2_heads, PX_H2_PROCESS_HEADS_MAX,
         "all connections hold too many header bytes; stream reset (REFUSED_STREAM)"},
        {c->scope != c->ctx->conv ? &c->scope->h2_heads : NULL, PX_H2_SANDBOX_HEADS_MAX,
         "the sandbox's connections hold too many header bytes; stream reset (REFUSED_STREAM)"},
    };
    px_h2_share(c->h2->codec, sh, c->scope != c->ctx->conv ? 2 : 1);
    c->mode = PX__H2;
    px__cl_timer(c, c->ctx->cfg->client_idle_ms);
    px__cl_h2_pump(c); /* our SETTINGS */
}

void px__cl_h2_input(px_client_t *c, const char *data, size_t len)
{
    c->h2->busy = 1;
    int rc = px_h2_feed(c->h2->codec, data, len);
    c->h2->busy = 0;
    if (c->closing)
        return;
    if (rc != 0) {
        audit_event_t ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_BLOCKED, NULL, NULL, 400);
        px_log_eventf(c->log, &ev, "HTTP/2 connection error: %s", px_h2_reason(c->h2->codec));
    }
    px__cl_h2_pump(c);
    if (rc != 0 && !c->closing)
        px__cl_close_flush(c); /* the GOAWAY goes out first */
}

/* Every stream's exchange ends (the connection is closing); reason for their log lines. */
void px__cl_h2_shut(px_client_t *c, const char *reason)
{
    if (c->h2 == NULL)
        return;
    px_defer_cancel(&c->ctx->loop, &c->h2->pump);
    px_quiet_cancel(&c->ctx->loop, &c->h2->quiet);
    px_h2_unshare(c->h2->codec);
    while (c->h2->h2s != NULL)
        px__h2s_drop(c->h2->h2s, reason);
}

size_t px__cl_h2_streams(const px_client_t *c)
{
    return c->h2 != NULL ? c->h2->h2n : 0;
}

void px__cl_h2_free(px_client_t *c)
{
    if (c->h2 == NULL)
        return;
    px_quiet_cancel(&c->ctx->loop, &c->h2->quiet);
    px_h2_free(c->h2->codec);
    free(c->h2);
    c->h2 = NULL;
}

/* The connection's sandbox went (px_client.c): GOAWAY, so that no new stream starts; the
 * requests in flight finish, WebSocket streams end now. */
void px__cl_h2_retire(px_client_t *c)
{
    for (px__h2s_t *s = c->h2->h2s; s != NULL; s = s->next)
        if (s->tun != NULL)
            px_tunnel_cut(s->tun, -1); /* tun_close() lets the stream go from the loop */
    px_h2_shutdown(c->h2->codec);
    px__kick(c);
}

/* ---- the response toward the client (px_down_ops_t) ------------------------------------- */

static void down_head(void *down, const px_resp_t *r)
{
    px__h2s_t *s = down;
    px_client_t *c = s->c;
    px_h2_field_t f[PX_HEADERS_MAX + 2];
    size_t n = 0;
    const px_msg_t *m = r->fields;
    if (m != NULL) {
        int ci = px_msg_find(m, "connection");
        const char *cv = ci >= 0 ? m->buf + m->values[ci].off : NULL;
        size_t cl = ci >= 0 ? m->values[ci].len : 0;
        for (size_t i = 0; i < m->n && n < PX_HEADERS_MAX; i++) {
            const char *name = m->buf + m->names[i].off;
            size_t nl = m->names[i].len;
            if (px_h1_hop_by_hop(name, nl, cv, cl))
                continue;
            f[n++] = (px_h2_field_t){name, nl, m->buf + m->values[i].off, m->values[i].len};
        }
    }
    char len[24];
    if (r->ctype != NULL) {
        int ln = snprintf(len, sizeof(len), "%llu", (unsigned long long)r->length);
        f[n++] = (px_h2_field_t){"content-type", 12, r->ctype, strlen(r->ctype)};
        f[n++] = (px_h2_field_t){"content-length", 14, len, (size_t)ln};
    }
    int has_body = r->body != PX_RESP_NONE && !(r->ctype != NULL && r->length == 0);
    if (r->status == 101 && s->ws) {
        /* the upgrade took: the stream answers 200 and carries the WebSocket (the handshake's
         * own fields are HTTP/1.1's) */
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (!(f[i].name_len == 20 && strncasecmp(f[i].name, "sec-websocket-accept", 20) == 0) &&
                !(f[i].name_len == 7 && strncasecmp(f[i].name, "upgrade", 7) == 0))
                f[k++] = f[i];
        if (px_h2_respond(c->h2->codec, s->sid, 200, f, k, 1) != 0)
            px_h2_reset(c->h2->codec, s->sid, PX_H2_INTERNAL_ERROR);
        px__kick(c);
        return;
    }
    if (r->status < 200) {
        if (r->status != 101)
            px_h2_respond(c->h2->codec, s->sid, r->status, f, n, 0);
        return;
    }
    if (px_h2_respond(c->h2->codec, s->sid, r->status, f, n, has_body) != 0) {
        px_h2_reset(c->h2->codec, s->sid, PX_H2_INTERNAL_ERROR);
        s->resp_ended = 1;
    } else {
        s->resp_body = has_body;
        s->resp_ended = !has_body;
    }
    px__kick(c);
}

static void down_data(void *down, const char *data, size_t len)
{
    px__h2s_t *s = down;
    if (len == 0 || s->resp_ended)
        return;
    if (px_h2_send_data(s->c->h2->codec, s->sid, data, len) != 0) {
        px_h2_reset(s->c->h2->codec, s->sid, PX_H2_INTERNAL_ERROR);
        s->resp_ended = 1;
    }
    px__kick(s->c);
}

static void down_end(void *down, const px_fields_t *t)
{
    px__h2s_t *s = down;
    if (s->resp_ended)
        return;
    s->resp_ended = 1;
    if (px_h2_end(s->c->h2->codec, s->sid, t) != 0)
        px_h2_reset(s->c->h2->codec, s->sid, PX_H2_INTERNAL_ERROR);
    px__kick(s->c);
}

/* The stream's queue is full (the exchange, or the tunnel, stops feeding it until on_drain):
 * past PX_H2_QUEUE_HIGH, unless the turn's pump can send all of it (the socket has room and
 * the client's windows take it). One upstream read (64 KiB) lands before that pump: a fast
 * download stopped and restarted its upstream reads (two epoll_ctl calls and a wake-up) every
 * 40 KiB. Past four times HIGH it waits whatever the windows say. */
static int down_full(void *down)
{
    px__h2s_t *s = down;
    size_t q = px_h2_stream_queued(s->c->h2->codec, s->sid);
    if (q <= PX_H2_QUEUE_HIGH)
        return 0;
    return q > 4 * PX_H2_QUEUE_HIGH || px_sock_full(&s->c->sock) ||
           px_h2_stream_sendable(s->c->h2->codec, s->sid) < q;
}
static void on_resume(px_defer_t *d)
{
    px__h2s_t *s = px_container_of(d, px__h2s_t, resume);
    px_client_t *c = s->c;
    if (s->paused || (s->x == NULL && s->tun == NULL) || c->closing)
        return;
    size_t n = s->hold_len;
    if (n > 0) {
        s->hold_len = 0;
        if (s->tun != NULL)
            px_tunnel_data(s->tun, 0, s->hold, n);
        else
            px_xchg_body(s->x, s->hold, n);
        px_h2_consume(c->h2->codec, s->sid, n);
        if (s->paused)
            return; /* the end waits for the next resume */
    }
    if (s->end_held) {
        s->end_held = 0;
        if (s->tun != NULL)
            px_tunnel_eof(s->tun, 0, UV_EOF);
        else
            px_xchg_body_end(s->x, s->end_t);
    }
    px__kick(c);
}

static void down_pause_body(void *down, int pause)
{
    px__h2s_t *s = down;
    s->paused = pause;
    if (!pause && (s->hold_len > 0 || s->end_held))
        px_defer(&s->c->ctx->loop, &s->resume, on_resume);
}

static void down_tunnel(void *down, px_tunnel_t *t)
{
    px__h2s_t *s = down;
    if (!s->ws) {
        px_tunnel_release(t, 0); /* only a WebSocket stream becomes a tunnel */
        return;
    }
    s->tun = t;
    px_tunnel_end_t e = {.write = tun_write,
                         .full = down_full,
                         .read = tun_read,
                         .shutdown = tun_shutdown,
                         .finish = tun_finish,
                         .close = tun_close,
                         .end = s};
    px_tunnel_attach(t, 0, &e);
}

static void down_finished(void *down, int reuse)
{
    px__h2s_t *s = down;
    px_client_t *c = s->c;
    s->x = NULL;
    if (s->tun != NULL)
        return; /* the stream lives on as the tunnel's end */
    if (!s->resp_ended)
        px_h2_reset(c->h2->codec, s->sid, reuse < 0 ? PX_H2_CANCEL : PX_H2_INTERNAL_ERROR);
    else
        px_h2_discard(c->h2->codec, s->sid); /* an early answer: the rest of the body is dropped */
    px__unlink(s);
    if (c->closing)
        return;
    if (c->ctx->stopping)
        px_h2_shutdown(c->h2->codec);
    px__kick(c);
}

static const px_down_ops_t px__h2_down = {
    .head = down_head,
    .data = down_data,
    .end = down_end,
    .full = down_full,
    .pause_body = down_pause_body,
    .tunnel = down_tunnel,
    .finished = down_finished,
};

/* ---- cleartext HTTP/2 ------------------------------------------------------------------- */

/* The client preface of HTTP/2 with prior knowledge, without TLS. */
int px__cl_is_h2c(const char *data, size_t len)
{
    static const char pri[] = "PRI * HTTP/2.0\r\n";
    size_t n = len < sizeof(pri) - 1 ? len : sizeof(pri) - 1;
    return len >= 3 && memcmp(data, pri, n) == 0;
}

/* h2c is refused: a SETTINGS frame and a GOAWAY(HTTP_1_1_REQUIRED), then the close. A client
 * that tried HTTP/2 in clear text learns at once to speak HTTP/1.1 or TLS; no stream of it is
 * read, so none escapes the policy. */
void px__cl_h2c_refuse(px_client_t *c)
{
    static const unsigned char frames[] = {
        0, 0, 0, 0x4, 0, 0, 0, 0,  0, /* SETTINGS, empty */
        0, 0, 8, 0x7, 0, 0, 0, 0,  0, /* GOAWAY */
        0, 0, 0, 0,   0, 0, 0, 0xd};  /* last stream 0, HTTP_1_1_REQUIRED */
    audit_event_t ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_BLOCKED, NULL, NULL, 400);
    px_log_eventf(c->log, &ev,
                  "malformed request: cleartext HTTP/2 (h2c) is refused; use HTTP/1.1 or TLS");
    px_sock_write(&c->sock, (const char *)frames, sizeof(frames));
    px__cl_close_flush(c);
}
