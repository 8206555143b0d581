/* The upstream client's requests: the head serialized for HTTP/1.1, the body framed, a retry
 * on a stale pooled connection, the response parsed and handed to the owner (px_upstream.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "proxy/px_upstream_int.h"

/* ---- requests ---------------------------------------------------------------------------------- */

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

/* The request fails: its connection (if any) closes, the owner hears it from the loop. */
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
    if (r->st != NULL) {
        px__up_h2_release(r, 0); /* a stream fails alone: the session goes on */
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
static int px__serialize(px_upreq_t *r, const addon_req_t *q, int *ws)
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
    *ws = upgrade;
    return 0;
}

/* Bytes of the request toward the connection, or kept until it is ready. */
void px__up_req_write(px_upreq_t *r, const char *data, size_t len)
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
        px__up_req_fail(r, "out of memory");
}

/* 1 when r's bytes go straight to an HTTP/1.1 connection (framed as they come). */
static int px__on_h1(const px_upreq_t *r)
{
    return r->conn != NULL && r->st == NULL && r->wait == NULL && r->conn->req == r &&
           r->conn->state == PX__C_READY;
}

static void on_req_ready(px_defer_t *d)
{
    px_upreq_t *r = px_container_of(d, px_upreq_t, defer);
    if (r->cbs == NULL)
        return;
    /* the owner was told "full" while the bytes waited for the connection; they may have left
     * at once on attaching (the socket then never went over its mark, so no drain from it).
     * Told before on_ready: an owner may let go of r in on_ready (a passthrough dial does). */
    if (r->full && px_up_queued(r) < PX_WQ_LOW) {
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

/* The connection is ready for r: the head and what r wrote so far go out, framed; on_ready
 * from the loop. */
void px__up_attach(px_upconn_t *u, px_upreq_t *r)
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
    px_sock_write(&u->sock, r->head, r->head_len);
    char *pend = r->pend;
    size_t pend_len = r->pend_len;
    r->pend = NULL;
    r->pend_len = r->pend_cap = 0;
    if (pend_len > 0)
        px_up_data(r, pend, pend_len);
    free(pend);
    if (r->ended && r->body == PX_UP_BODY_CHUNKED) {
        char last[PX_H1_LAST_CHUNK_MAX];
        px_sock_write(&u->sock, last, px_h1_last_chunk(last, r->trailers));
    }
    free(r->trailers);
    r->trailers = NULL;
    if (!r->paused)
        px_sock_read_start(&u->sock);
    px_defer(r->m->loop, &r->defer, on_req_ready);
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
    int ws = 0;
    if (px__serialize(r, req, &ws) != 0) {
        px__up_req_free(r);
        return NULL;
    }
    r->h2ok = tls && !ws;
    if (r->h2ok && (r->h2head = px__up_h2_head(req, host, port)) == NULL) {
        px__up_req_free(r);
        return NULL;
    }
    px__up_dispatch(r);
    return r;
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
        px__up_attach(u, r);
        return;
    }
    px__up_connect_new(r, key);
}

px_upreq_t *px_up_open_raw(px_upmgr_t *m, const char *host, uint16_t port,
                           const px_up_cbs_t *cbs, void *owner)
{
    px_upreq_t *r = px__req_new(m, host, port, 0, cbs, owner);
    if (r == NULL)
        return NULL;
    r->raw = 1;
    char key[PX__KEY_MAX];
    px__up_key(key, sizeof(key), host, port, 0, 1);
    px__up_connect_new(r, key);
    return r;
}

void px_up_data(px_upreq_t *r, const char *data, size_t len)
{
    if (len == 0 || r->failed)
        return;
    if (r->st != NULL) {
        px__up_h2_data(r, data, len);
        return;
    }
    if (!px__on_h1(r)) { /* framed when the connection (and its protocol) is known */
        px__up_req_write(r, data, len);
        return;
    }
    if (r->body == PX_UP_BODY_CHUNKED) {
        char h[20];
        px__up_req_write(r, h, px_h1_chunk_head(h, len));
        px__up_req_write(r, data, len);
        px__up_req_write(r, "\r\n", 2);
        return;
    }
    px__up_req_write(r, data, len);
}

void px_up_end(px_upreq_t *r, const px_fields_t *t)
{
    /* once: an HTTP/2 request declared empty (content-length 0, ended when it opened) may
     * still send trailing HEADERS; the request already ended upstream, so they go nowhere */
    if (r->ended)
        return;
    r->ended = 1;
    if (r->failed)
        return;
    if (r->st != NULL) {
        px__up_h2_end(r, t);
        return;
    }
    if (!px__on_h1(r)) {
        if (t != NULL && t->n > 0 && r->trailers == NULL &&
            (r->trailers = malloc(sizeof(*t))) != NULL)
            memcpy(r->trailers, t, sizeof(*t));
        return;
    }
    if (r->body == PX_UP_BODY_CHUNKED) {
        char last[PX_H1_LAST_CHUNK_MAX];
        px__up_req_write(r, last, px_h1_last_chunk(last, t));
    }
}

size_t px_up_queued(const px_upreq_t *r)
{
    if (r->st != NULL)
        return r->pend_len + px_h2c_queued(r->st);
    return r->pend_len + (r->conn != NULL ? px_sock_queued(&r->conn->sock) : 0);
}

int px_up_full(const px_upreq_t *r)
{
    /* a stream's queue has its own marks: the connection's are every stream's */
    if (px_up_queued(r) <= (r->st != NULL ? PX_H2C_QUEUE_HIGH : PX_WQ_HIGH))
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
        px__up_deliver(u, buf, n);
        free(buf);
    } else if (u->parser.paused && u->parser.state == PX_H1_BODY) {
        /* paused on the body's last bytes: the response's end is delivered now, with no byte */
        px__up_deliver(u, "", 0);
    }
    if (!u->closing && u->req == r && !r->paused)
        px_sock_read_start(&u->sock);
}

void px_up_pause(px_upreq_t *r, int pause)
{
    r->paused = pause;
    if (r->st != NULL) {
        px__up_h2_pause(r, pause);
        return;
    }
    if (r->wait != NULL)
        return;
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
    px_defer_cancel(r->m->loop, &r->resume);
    if (r->st != NULL)
        px__up_h2_release(r, clean);
    else if (r->wait != NULL)
        px__up_h2_unwait(r);
    px_upconn_t *u = r->conn;
    r->conn = NULL;
    if (r->failed) {
        /* on_req_failed is cancelled with the defer above */
        px__up_req_free(r);
        return;
    }
    px__up_req_free(r);
    if (u == NULL)
        return;
    u->req = NULL;
    if (u->state != PX__C_READY && !u->closing && px__up_h2_handover(u))
        return; /* a request waiting on this dial takes it over */
    if (clean && u->reusable && !u->closing && u->state == PX__C_READY)
        px__up_pool_put(u);
    else
        px__up_conn_close(u);
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

const px_h1_cbs_t px__up_resp_cbs = {on_resp_head, on_resp_data, on_resp_end};

/* Response bytes: parsed and handed to the request's owner while it takes them. */
void px__up_deliver(px_upconn_t *u, const char *data, size_t len)
{
    size_t off = 0;
    int once = len == 0; /* a parser paused on a body's last bytes runs once with none */
    while ((off < len || once) && !u->closing) {
        once = 0;
        if (u->state == PX__C_TUNNEL) {
            px_tunnel_data(u->tun, 1, data + off, len - off);
            return;
        }
        px_upreq_t *r = u->req;
        if (r == NULL || r->cbs == NULL) {
            px__up_conn_close(u); /* bytes nobody asked for: the connection is done */
            return;
        }
        if (r->paused) {
            char *nb = realloc(u->in, u->in_len + (len - off));
            if (nb == NULL) {
                px__up_req_fail(r, "out of memory");
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
            px__up_req_fail(r, "invalid response from upstream: %s", u->parser.reason);
            return;
        }
        off += used;
        if (used == 0 && u->req == r && !r->paused && u->parser.state != PX_H1_DONE)
            break;
    }
}

void px__up_conn_read(px_sock_t *s, const char *data, size_t len)
{
    px_upconn_t *u = s->data;
    u->got_bytes = 1;
    if (u->h2 != NULL) {
        px__up_h2_read(u, data, len);
        return;
    }
    if (u->in_pool) {
        px__up_conn_close(u); /* idle in the pool: any byte means the connection is done */
        return;
    }
    px__up_deliver(u, data, len);
}

void px__up_conn_eof(px_sock_t *s, int err)
{
    px_upconn_t *u = s->data;
    if (u->state == PX__C_TUNNEL) {
        px_tunnel_eof(u->tun, 1, err);
        return;
    }
    if (u->h2 != NULL) {
        px__up_h2_eof(u, err);
        return;
    }
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL) {
        px__up_conn_close(u);
        return;
    }
    if (u->reused && !u->got_bytes && r->head != NULL && r->ended &&
        r->body == PX_UP_BODY_NONE && !r->retried) {
        /* a pooled connection the server had closed: once more on a fresh one */
        r->retried = 1;
        u->req = NULL;
        r->conn = NULL;
        px__up_conn_close(u);
        char key[PX__KEY_MAX];
        px__up_key(key, sizeof(key), r->host, r->port, r->tls, 0);
        px__up_connect_new(r, key); /* the head goes out again on attaching */
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
        px__up_req_fail(r, "Server disconnected during the response (%s)",
                     err == UV_EOF ? "connection closed" : uv_strerror(err));
    else
        px__up_req_fail(r, "Server disconnected before sending a response (%s)",
                     err == UV_EOF ? "connection closed" : uv_strerror(err));
}

void px__up_conn_drain(px_sock_t *s)
{
    px_upconn_t *u = s->data;
    if (u->state == PX__C_TUNNEL) {
        px_tunnel_drain(u->tun, 1);
        return;
    }
    if (u->h2 != NULL) {
        px__up_h2_flush(u);
        return;
    }
    px_upreq_t *r = u->req;
    if (r != NULL && r->cbs != NULL && r->full && px_up_queued(r) < PX_WQ_LOW) {
        r->full = 0;
        if (r->cbs->on_drain != NULL)
            r->cbs->on_drain(r->owner);
    }
}

