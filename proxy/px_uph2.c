/* HTTP/2 toward upstream (px_upstream.h's requests over px_h2cli.h's codec): a TLS dial offers
 * h2 and http/1.1; when the upstream picks h2 the connection becomes one session whose streams
 * carry concurrent requests of exactly its key (host:port:https), up to the stream limit.
 * Requests of that key wait on a dial in progress rather than each opening its own, unless the
 * key's upstream is known to pick http/1.1. A GOAWAY'd or broken session takes no new request;
 * a reset or a GOAWAY fails only the streams it covers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "proxy/px_upstream_int.h"

static const px_h2c_cbs_t px__h2_cbs;
static const px__up_stream_ops_t px__h2_stream;
static const px__up_conn_ops_t px__h2_conn;
static void px__sched(px_upconn_t *u);
static void px__flush(px_upconn_t *u);

/* ---- the head --------------------------------------------------------------------------- */

px_h2c_req_t *px__up_h2_head(const addon_req_t *q, const char *host, uint16_t port)
{
    size_t n = 0, bytes = q->method.len + q->path.len + strlen(host) + 10 + 8;
    for (size_t i = 0; i < q->nheaders; i++)
        if (!q->headers[i].removed) {
            n++;
            bytes += q->headers[i].name.len + q->headers[i].value.len;
        }
    px_h2c_req_t *h = malloc(sizeof(*h) + n * sizeof(px_h2_field_t) + bytes);
    if (h == NULL)
        return NULL;
    px_h2_field_t *f = (px_h2_field_t *)(h + 1);
    char *b = (char *)(f + n);
#define PX__COPY(dst, s, l)                                                                        \
    do {                                                                                           \
        memcpy(b, (s), (l));                                                                       \
        (dst) = b;                                                                                 \
        b += (l);                                                                                  \
    } while (0)
    memset(h, 0, sizeof(*h));
    PX__COPY(h->method, q->method.base, q->method.len);
    h->method_len = q->method.len;
    PX__COPY(h->path, q->path.base, q->path.len);
    h->path_len = q->path.len;
    h->scheme = "https";
    h->scheme_len = 5;
    size_t k = 0;
    for (size_t i = 0; i < q->nheaders; i++) {
        const addon_header_t *x = &q->headers[i];
        if (x->removed)
            continue;
        PX__COPY(f[k].name, x->name.base, x->name.len);
        f[k].name_len = x->name.len;
        PX__COPY(f[k].value, x->value.base, x->value.len);
        f[k].value_len = x->value.len;
        if (x->name.len == 4 && strncasecmp(x->name.base, "host", 4) == 0 &&
            h->authority_len == 0) {
            h->authority = f[k].value;
            h->authority_len = f[k].value_len;
        }
        k++;
    }
#undef PX__COPY
    if (h->authority_len == 0) {            /* no Host field (HTTP/1.0): the destination itself */
        int v6 = strchr(host, ':') != NULL; /* an IPv6 literal goes in brackets */
        int len = snprintf(b, strlen(host) + 10, v6 ? "[%s]" : "%s", host);
        if (port != 443)
            len += snprintf(b + len, 8, ":%u", port);
        h->authority = b;
        h->authority_len = (size_t)len;
    }
    h->f = f;
    h->n = k;
    return h;
}

/* ---- the shared list and what the manager remembers ------------------------------------- */

static int px__known_h1(const px_upmgr_t *m, const char *key)
{
    const px__alpn_t *a = &m->alpn[px__up_hash(key)];
    return a->h1 && strcmp(a->key, key) == 0;
}

static void px__remember(px_upconn_t *u, int h1)
{
    px__alpn_t *a = &u->m->alpn[u->bucket];
    snprintf(a->key, sizeof(a->key), "%s", u->key);
    a->h1 = h1;
}

static void px__share(px_upconn_t *u)
{
    if (u->in_shared)
        return;
    px_upmgr_t *m = u->m;
    u->in_shared = 1;
    u->sh_prev = NULL;
    u->sh_next = m->shared[u->bucket];
    if (u->sh_next != NULL)
        u->sh_next->sh_prev = u;
    m->shared[u->bucket] = u;
}

void px__up_h2_unshare(px_upconn_t *u)
{
    if (!u->in_shared)
        return;
    if (u->sh_prev != NULL)
        u->sh_prev->sh_next = u->sh_next;
    else
        u->m->shared[u->bucket] = u->sh_next;
    if (u->sh_next != NULL)
        u->sh_next->sh_prev = u->sh_prev;
    u->sh_next = u->sh_prev = NULL;
    u->in_shared = 0;
}

void px__up_h2_share_dial(px_upconn_t *u)
{
    if (!px__known_h1(u->m, u->key))
        px__share(u);
}

/* ---- waiting on a dial ------------------------------------------------------------------- */

static void px__wait(px_upreq_t *r, px_upconn_t *u)
{
    r->wait = u;
    r->h2_prev = NULL;
    r->h2_next = u->waiters;
    if (r->h2_next != NULL)
        r->h2_next->h2_prev = r;
    u->waiters = r;
    u->nwaiters++;
}

void px__up_h2_unwait(px_upreq_t *r)
{
    px_upconn_t *u = r->wait;
    if (u == NULL)
        return;
    if (r->h2_prev != NULL)
        r->h2_prev->h2_next = r->h2_next;
    else
        u->waiters = r->h2_next;
    if (r->h2_next != NULL)
        r->h2_next->h2_prev = r->h2_prev;
    r->h2_next = r->h2_prev = NULL;
    r->wait = NULL;
    u->nwaiters--;
}

void px__up_h2_waiters(px_upconn_t *u, const char *why)
{
    while (u->waiters != NULL) {
        px_upreq_t *w = u->waiters;
        px__up_h2_unwait(w);
        if (why != NULL)
            px__up_req_fail(w, "%s", why);
        else
            px__up_dispatch(w);
    }
}

void px__up_h2_move(px_upconn_t *u, px_upconn_t *nu)
{
    nu->h1only = u->h1only;
    if (u->in_shared) {
        px__up_h2_unshare(u);
        px__share(nu);
    }
    while (u->waiters != NULL) {
        px_upreq_t *w = u->waiters;
        px__up_h2_unwait(w);
        px__wait(w, nu);
    }
}

int px__up_h2_handover(px_upconn_t *u)
{
    px_upreq_t *w = u->waiters;
    if (w == NULL)
        return 0;
    px__up_h2_unwait(w);
    u->req = w;
    w->conn = u;
    return 1;
}

/* ---- streams ------------------------------------------------------------------------------ */

/* r gets a stream on h2 connection u; what it wrote so far follows. */
static void h2_attach(px_upconn_t *u, px_upreq_t *r)
{
    if (u->in_pool)
        px__up_pool_remove(u);
    uv_timer_stop(&u->timer);
    px_h2cs_t *st;
    int rc = px_h2c_open(u->h2, r->h2head, r->body != PX_UP_BODY_NONE, r->is_head, r, &st);
    if (rc != 0) {
        px__up_req_fail(r, "%s",
                        rc == PX_ENOMEM ? "out of memory"
                                        : "Connection failed: HTTP/2 stream refused");
        return;
    }
    r->st = st;
    r->conn = u;
    r->ops = &px__h2_stream;
    r->h2_prev = NULL;
    r->h2_next = u->h2reqs;
    if (r->h2_next != NULL)
        r->h2_next->h2_prev = r;
    u->h2reqs = r;
    if (r->pend_len > 0)
        rc = px_h2c_send_data(u->h2, st, r->pend, r->pend_len);
    free(r->pend);
    r->pend = NULL;
    r->pend_len = r->pend_cap = 0;
    if (rc == 0 && r->ended)
        rc = px_h2c_end(u->h2, st, r->trailers);
    free(r->trailers);
    r->trailers = NULL;
    if (rc != 0) {
        px__up_req_fail(r, "out of memory");
        return;
    }
    if (r->paused)
        px_h2c_pause(u->h2, st, 1);
    px__sched(u);
    px__up_ready_later(r);
}

int px__up_h2_share(px_upreq_t *r, const char *key)
{
    px_upmgr_t *m = r->m;
    px_upconn_t *dial = NULL;
    for (px_upconn_t *u = m->shared[px__up_hash(key)]; u != NULL; u = u->sh_next) {
        if (u->closing || strcmp(u->key, key) != 0)
            continue;
        if (u->h2 != NULL) {
            if (u->state == PX__C_READY && px_h2c_can_open(u->h2)) {
                h2_attach(u, r);
                return 1;
            }
            continue;
        }
        if (dial == NULL && u->state != PX__C_READY && u->nwaiters + 1 < PX_H2C_MAX_STREAMS)
            dial = u;
    }
    if (dial == NULL || px__known_h1(m, key))
        return 0;
    px__wait(r, dial);
    return 1;
}

/* Pooled and still untouched one quiet period later (no stream since): the session's pages of
 * nghttp2's frame buffer and stream table go back (~8 KiB after one request). */
static void on_h2_quiet(px_quiet_t *q)
{
    px_upconn_t *u = px_container_of(q, px_upconn_t, quiet);
    if (u->h2reqs == NULL && !u->closing)
        px_h2c_trim(u->h2);
}

/* The connection is idle when its last stream left: pooled, or closed when it is stale. */
static void px__idle(px_upconn_t *u)
{
    if (u->h2reqs != NULL || u->closing || u->in_pool)
        return;
    if (px_h2c_closing(u->h2)) {
        px__up_conn_close(u);
        return;
    }
    px__up_pool_put(u);
    if (u->in_pool)
        px_quiet_touch(u->m->loop, &u->quiet, on_h2_quiet);
}

static void h2_release(px_upreq_t *r, int clean)
{
    px_upconn_t *u = r->conn;
    px_defer_cancel(r->m->loop, &r->resume);
    px_h2c_close(u->h2, r->st, !clean);
    if (r->h2_prev != NULL)
        r->h2_prev->h2_next = r->h2_next;
    else
        u->h2reqs = r->h2_next;
    if (r->h2_next != NULL)
        r->h2_next->h2_prev = r->h2_prev;
    r->h2_next = r->h2_prev = NULL;
    r->st = NULL;
    r->conn = NULL;
    r->ops = NULL;
    px__sched(u);
    px__idle(u);
}

static void h2_data(px_upreq_t *r, const char *data, size_t len)
{
    px_upconn_t *u = r->conn;
    int rc = px_h2c_send_data(u->h2, r->st, data, len);
    if (rc == PX_ETOOBIG || rc == PX_ENOMEM)
        px__up_req_fail(r, "%s", rc == PX_ENOMEM ? "out of memory" : "request body queue full");
    else
        px__sched(u); /* PX_ESTATE: the stream closed (answered): the bytes are dropped */
}

static void h2_end(px_upreq_t *r, const px_fields_t *t)
{
    px_upconn_t *u = r->conn;
    if (px_h2c_end(u->h2, r->st, t) == PX_ENOMEM)
        px__up_req_fail(r, "out of memory");
    else
        px__sched(u);
}

static void on_req_resume(px_defer_t *d)
{
    px_upreq_t *r = px_container_of(d, px_upreq_t, resume);
    px_upconn_t *u = r->conn;
    if (r->st == NULL || r->cbs == NULL || u == NULL)
        return;
    px_h2c_resume(u->h2, r->st); /* r may be gone after this */
    px__flush(u);
}

static size_t h2_queued(const px_upreq_t *r)
{
    return px_h2c_queued(r->st);
}

static void h2_pause(px_upreq_t *r, int pause)
{
    px_upconn_t *u = r->conn;
    px_h2c_pause(u->h2, r->st, pause);
    if (!pause)
        px_defer(r->m->loop, &r->resume, on_req_resume);
}

static const px__up_stream_ops_t px__h2_stream = {
    .data = h2_data,
    .end = h2_end,
    .queued = h2_queued,
    .high = PX_H2C_QUEUE_HIGH, /* a stream's mark: the connection's is every stream's */
    .pause = h2_pause,
    .release = h2_release,
};

/* ---- the codec's callbacks ------------------------------------------------------------------ */

static void on_h2_head(void *so, px_msg_t *m)
{
    px_upreq_t *r = so;
    if (r->cbs == NULL) {
        px_msg_free(m);
        return;
    }
    free(r->head); /* past the point of a retry */
    r->head = NULL;
    free(r->h2head);
    r->h2head = NULL;
    r->cbs->on_head(r->owner, m);
}

static void on_h2_data(void *so, const char *data, size_t len)
{
    px_upreq_t *r = so;
    if (r->cbs != NULL)
        r->cbs->on_data(r->owner, data, len);
}

static void on_h2_end(void *so, const px_fields_t *t)
{
    px_upreq_t *r = so;
    r->resp_done = 1;
    if (r->cbs != NULL)
        r->cbs->on_end(r->owner, t);
}

static void on_h2_error(void *so, uint32_t code, const char *why)
{
    px_upreq_t *r = so;
    if (r->cbs == NULL)
        return;
    if (code == PX_H2_REFUSED_STREAM && r->h2head != NULL && r->body == PX_UP_BODY_NONE &&
        !r->retried) {
        /* not processed (a GOAWAY that came first, a refused stream): once more elsewhere */
        r->retried = 1;
        h2_release(r, 1);
        px__up_dispatch(r);
        return;
    }
    px__up_req_fail(r, "%s", why);
}

static void on_h2_drain(void *so)
{
    px_upreq_t *r = so;
    if (r->cbs != NULL && r->full) {
        r->full = 0;
        if (r->cbs->on_drain != NULL)
            r->cbs->on_drain(r->owner);
    }
}

static const px_h2c_cbs_t px__h2_cbs = {on_h2_head, on_h2_data, on_h2_end, on_h2_error,
                                        on_h2_drain};

/* ---- the connection ------------------------------------------------------------------------- */

int px__up_h2_handshake(px_upconn_t *u)
{
    const unsigned char *p = NULL;
    unsigned len = 0;
    SSL_get0_alpn_selected(px_sock_ssl(&u->sock), &p, &len);
    int h2 = len == 2 && memcmp(p, "h2", 2) == 0;
    if (!u->h1only)
        px__remember(u, !h2);
    if (!h2) {
        px__up_h2_unshare(u);
        px__up_h2_waiters(u, NULL);
        return 0;
    }
    px_upreq_t *r = u->req;
    u->h2 = px_h2c_new(&px__h2_cbs);
    if (u->h2 == NULL) {
        px__up_req_fail(r, "out of memory");
        return 1;
    }
    u->ops = &px__h2_conn;
    u->state = PX__C_READY;
    px__share(u);
    u->req = NULL;
    r->conn = NULL;
    uv_timer_stop(&u->timer);
    px_sock_read_start(&u->sock);
    h2_attach(u, r);
    while (u->waiters != NULL && !u->closing) {
        px_upreq_t *w = u->waiters;
        px__up_h2_unwait(w);
        if (px_h2c_can_open(u->h2))
            h2_attach(u, w);
        else
            px__up_dispatch(w);
    }
    px__up_h2_waiters(u, "Connection failed: connection closed");
    px__idle(u); /* every stream failed to open: pooled or closed, not left alone */
    return 1;
}

static void on_conn_flush(px_defer_t *d)
{
    px__flush(px_container_of(d, px_upconn_t, flush));
}

static void px__sched(px_upconn_t *u)
{
    if (!u->closing)
        px_defer(u->m->loop, &u->flush, on_conn_flush);
}

/* The session broke: every stream fails, the connection closes. */
static void px__broken(px_upconn_t *u, const char *why)
{
    char buf[240];
    snprintf(buf, sizeof(buf), "HTTP/2 session with upstream failed: %s", why);
    px__up_h2_unshare(u);
    px__up_h2_shut(u, buf);
    px__up_conn_close(u);
}

static void px__flush(px_upconn_t *u)
{
    while (!u->closing && u->h2 != NULL && px_sock_queued(&u->sock) < PX_WQ_HIGH) {
        const char *d;
        size_t n;
        int rc = px_h2c_take_output(u->h2, &d, &n);
        if (u->closing)
            return;
        if (rc != 0) {
            px__broken(u, px_h2c_reason(u->h2));
            return;
        }
        if (n == 0)
            break;
        px_sock_write(&u->sock, d, n);
    }
}

static void h2_read(px_upconn_t *u, const char *data, size_t len)
{
    int rc = px_h2c_feed(u->h2, data, len);
    if (u->closing)
        return;
    if (rc != 0) {
        const char *d;
        size_t n;
        if (px_h2c_take_output(u->h2, &d, &n) == 0 && n > 0)
            px_sock_write(&u->sock, d, n); /* the GOAWAY, if it fits */
        px__broken(u, px_h2c_reason(u->h2));
        return;
    }
    if (px_h2c_closing(u->h2)) {
        px__up_h2_unshare(u); /* a GOAWAY: no new stream here */
        if (u->h2reqs == NULL) {
            px__up_conn_close(u);
            return;
        }
    }
    px__flush(u);
}

static void h2_eof(px_upconn_t *u, int err)
{
    char why[200];
    snprintf(why, sizeof(why), "Server disconnected during the HTTP/2 session (%s)",
             err == UV_EOF ? "connection closed" : uv_strerror(err));
    px__up_h2_unshare(u);
    px__up_h2_shut(u, why);
    px__up_conn_close(u);
}

void px__up_h2_shut(px_upconn_t *u, const char *why)
{
    px__up_h2_waiters(u, why);
    if (u->h2 == NULL)
        return;
    px_h2c_fail_all(u->h2, why); /* each stream's request fails and lets go */
    while (u->h2reqs != NULL) {
        px_upreq_t *r = u->h2reqs;
        if (r->resp_done || r->failed)
            h2_release(r, 1); /* complete: the owner lets go when it is done */
        else
            px__up_req_fail(r, "%s", why);
    }
}

static const px__up_conn_ops_t px__h2_conn = {
    .attach = h2_attach,
    .read = h2_read,
    .eof = h2_eof,
    .flush = px__flush,
    .multi = 1,
};
