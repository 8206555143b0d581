/* The upstream client's requests (px_upstream.h): the head serialized (for HTTP/1.1, and for h2
 * when the request may go over it), placed on a connection (px_upconn.c), the bytes kept until
 * it lands; then everything goes through its carrier's operations (r->ops, px_upstream_int.h),
 * so nothing here knows which protocol carries the request. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "proxy/px_upstream_int.h"

/* ---- requests ----------------------------------------------------------------------------------
 */

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
#define PX__PUT(s, l)                                                                              \
    do {                                                                                           \
        memcpy(out + n, (s), (l));                                                                 \
        n += (l);                                                                                  \
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

/* Bytes of the request kept until it lands on a connection or a stream. */
static void px__pend(px_upreq_t *r, const char *data, size_t len)
{
    size_t before = r->pend_len;
    px__put(&r->pend, &r->pend_len, &r->pend_cap, data, len);
    if (r->pend_len == before)
        px__up_req_fail(r, "out of memory");
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

px_upreq_t *px_up_open_raw(px_upmgr_t *m, const char *host, uint16_t port, const px_up_cbs_t *cbs,
                           void *owner)
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
    if (r->ops != NULL)
        r->ops->data(r, data, len);
    else
        px__pend(r, data, len); /* framed when it lands (and its protocol is known) */
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
    if (r->ops != NULL) {
        r->ops->end(r, t);
        return;
    }
    if (t != NULL && t->n > 0 && r->trailers == NULL && (r->trailers = malloc(sizeof(*t))) != NULL)
        memcpy(r->trailers, t, sizeof(*t));
}

size_t px_up_queued(const px_upreq_t *r)
{
    return px__up_queued(r);
}

int px_up_full(const px_upreq_t *r)
{
    /* a carrier's queue has its own mark: an h2 stream's is below its connection's */
    if (px__up_queued(r) <= (r->ops != NULL ? r->ops->high : PX_WQ_HIGH))
        return 0;
    ((px_upreq_t *)r)->full = 1;
    return 1;
}

void px_up_pause(px_upreq_t *r, int pause)
{
    r->paused = pause; /* before it lands: its carrier reads this */
    if (r->ops != NULL)
        r->ops->pause(r, pause);
}

/* The owner lets go: no callback comes any more; the connection is pooled or closed. */
static void px__release(px_upreq_t *r, int clean)
{
    r->cbs = NULL;
    px_defer_cancel(r->m->loop, &r->defer);
    px_defer_cancel(r->m->loop, &r->resume);
    if (r->ops != NULL) {
        r->ops->release(r, clean);
    } else if (r->wait != NULL) {
        px__up_h2_unwait(r);
    } else if (r->conn != NULL) {
        /* a dial (a failed request has none): a request waiting on it takes it over */
        px_upconn_t *u = r->conn;
        r->conn = NULL;
        u->req = NULL;
        if (u->closing || !px__up_h2_handover(u))
            px__up_conn_close(u);
    }
    px__up_req_free(r);
}

void px_up_done(px_upreq_t *r)
{
    px__release(r, 1);
}

void px_up_abort(px_upreq_t *r)
{
    px__release(r, 0);
}
