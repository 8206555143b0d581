/* llhttp glue: reads a request or response head into a px_head_t (raw bytes + spans), and
 * enforces what llhttp's strict mode leaves to us: no bare LF, no obs-fold, header count and
 * head size caps. The parser pauses at the end of every message, so pipelined bytes are never
 * parsed ahead of their turn. */
#include <string.h>
#include <strings.h>
#include <stdlib.h>

#include "proxy/px_err.h"
#include "proxy/px_int.h"

static px_head_t *px__head(llhttp_t *p)
{
    return p->data;
}

static int px__span_add(px_head_t *h, px_span_t *s, const char *at, size_t len)
{
    uint32_t off = (uint32_t)(at - h->buf);
    if (s->len != 0 && s->off + s->len == off) {
        s->len += (uint32_t)len;
    } else {
        s->off = off;
        s->len = (uint32_t)len;
    }
    return 0;
}

/* Trailer fields (after a chunked body) arrive through the header callbacks too, pointing into
 * whatever buffer holds the body: they are counted against their own caps and never stored in
 * the head. The relay forwards them as they came on a chunked leg; a body airlock re-frames
 * drops them. Returns 0, or HPE_USER over a cap. */
static int px__trailer(llhttp_t *p, px_head_t *h, size_t len, int field_start)
{
    h->trailer_bytes += len;
    if (field_start)
        h->trailer_fields++;
    if (h->trailer_bytes > PX_TRAILER_MAX || h->trailer_fields > PX_TRAILERS_MAX) {
        llhttp_set_error_reason(p, "trailer section too large");
        return HPE_USER;
    }
    return 0;
}

static int px__in_trailer(const llhttp_t *p)
{
    return (p->flags & F_TRAILING) != 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
    px_head_t *h = px__head(p);
    return px__span_add(h, &h->url, at, len);
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    px_head_t *h = px__head(p);
    if (px__in_trailer(p)) {
        int start = h->last_was_value || h->trailer_fields == 0;
        h->last_was_value = 0;
        return px__trailer(p, h, len, start);
    }
    if (h->last_was_value || h->n == 0) {
        if (h->n >= PX_HEADERS_MAX) {
            h->too_many = 1;
            return HPE_USER;
        }
        h->n++;
        h->names[h->n - 1].len = 0;
        h->values[h->n - 1].len = 0;
        h->values[h->n - 1].off = 0;
        h->last_was_value = 0;
    }
    return px__span_add(h, &h->names[h->n - 1], at, len);
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    px_head_t *h = px__head(p);
    if (px__in_trailer(p)) {
        h->last_was_value = 1;
        return px__trailer(p, h, len, 0);
    }
    if (h->n == 0)
        return HPE_USER;
    h->last_was_value = 1;
    return px__span_add(h, &h->values[h->n - 1], at, len);
}

static int on_header_value_complete(llhttp_t *p)
{
    px_head_t *h = px__head(p);
    if (px__in_trailer(p)) {
        h->last_was_value = 1;
        return 0;
    }
    if (h->n == 0)
        return 0;
    px_span_t *v = &h->values[h->n - 1];
    if (v->len == 0)
        v->off = 0;
    while (v->len > 0 && (h->buf[v->off + v->len - 1] == ' ' || h->buf[v->off + v->len - 1] == '\t'))
        v->len--;
    h->last_was_value = 1;
    return 0;
}

static int on_headers_complete(llhttp_t *p)
{
    px_head_t *h = px__head(p);
    h->complete = 1;
    return h->no_body ? 1 : 0; /* a response to HEAD has no body */
}

static int on_message_complete(llhttp_t *p)
{
    px_head_t *h = px__head(p);
    h->msg_done = 1;
    return HPE_PAUSED;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    px_head_t *h = px__head(p);
    return h->on_body != NULL && h->on_body(h->owner, at, len) != 0 ? HPE_USER : 0;
}

void px_head_settings(llhttp_settings_t *req, llhttp_settings_t *resp, llhttp_settings_t *body)
{
    llhttp_settings_init(req);
    req->on_url = on_url;
    req->on_header_field = on_header_field;
    req->on_header_value = on_header_value;
    req->on_header_value_complete = on_header_value_complete;
    req->on_headers_complete = on_headers_complete;
    req->on_message_complete = on_message_complete;
    *resp = *req;
    resp->on_url = NULL;
    resp->on_status = on_url;
    /* re-reads a head without recording it, then hands the body (framing removed) out */
    llhttp_settings_init(body);
    body->on_body = on_body;
    body->on_message_complete = on_message_complete;
}

void px_head_reset(px_head_t *h)
{
    char *buf = h->buf;
    size_t cap = h->cap;
    memset(h, 0, offsetof(px_head_t, names));
    h->n = 0;
    h->last_was_value = 0;
    h->too_many = 0;
    h->complete = 0;
    h->msg_done = 0;
    h->no_body = 0;
    h->trailer_bytes = 0;
    h->trailer_fields = 0;
    h->owner = NULL;
    h->on_body = NULL;
    h->buf = buf;
    h->cap = cap;
}

void px_head_free(px_head_t *h)
{
    free(h->buf);
    h->buf = NULL;
    h->cap = 0;
    px_head_reset(h);
}

static int px__append(px_head_t *h, const char *data, size_t len)
{
    if (len == 0)
        return 0;
    if (len > PX_HEAD_BUF_MAX - h->len)
        return PX_ETOOBIG;
    if (h->cap - h->len < len) {
        size_t cap = h->cap ? h->cap : 4096;
        while (cap - h->len < len)
            cap *= 2;
        if (cap > PX_HEAD_BUF_MAX)
            cap = PX_HEAD_BUF_MAX;
        char *nb = realloc(h->buf, cap);
        if (nb == NULL)
            return PX_ENOMEM;
        h->buf = nb;
        h->cap = cap;
    }
    memcpy(h->buf + h->len, data, len);
    h->len += len;
    return 0;
}

/* Finds the blank line ending the head and rejects bare LF and obs-fold inside it. */
static int px__head_scan(px_head_t *h, const char **reason)
{
    size_t i = h->msg_start;
    while (i + 1 < h->len && h->buf[i] == '\r' && h->buf[i + 1] == '\n')
        i += 2; /* empty lines before the request line are ignored (RFC 9112 §2.2) */
    for (; i < h->len; i++) {
        char ch = h->buf[i];
        if (ch != '\n')
            continue;
        if (i == 0 || h->buf[i - 1] != '\r') {
            *reason = "bare LF in message head";
            return PX_EPARSE;
        }
        if (i + 2 < h->len && h->buf[i + 1] == '\r' && h->buf[i + 2] == '\n') {
            h->head_end = i + 3;
            return 0;
        }
        if (i + 1 < h->len && (h->buf[i + 1] == ' ' || h->buf[i + 1] == '\t')) {
            *reason = "obsolete line folding in message head";
            return PX_EPARSE;
        }
    }
    *reason = "message head has no end";
    return PX_EPARSE;
}

int px_head_feed(px_head_t *h, llhttp_t *p, const char *data, size_t len, const char **reason)
{
    *reason = NULL;
    int rc = px__append(h, data, len);
    if (rc != 0) {
        *reason = rc == PX_ETOOBIG ? "request head too large" : "out of memory";
        return rc == PX_ETOOBIG ? PX_ETOOBIG : PX_ENOMEM;
    }
    p->data = h;
    if (h->len == h->parsed)
        return 0; /* nothing new (llhttp must not see a NULL buffer) */
    llhttp_errno_t err = llhttp_execute(p, h->buf + h->parsed, h->len - h->parsed);
    if (err == HPE_OK) {
        h->parsed = h->len;
    } else if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
        h->parsed = (size_t)(llhttp_get_error_pos(p) - h->buf);
    } else {
        if (h->too_many) {
            *reason = "too many header fields";
            return PX_ETOOBIG;
        }
        *reason = llhttp_get_error_reason(p);
        if (*reason == NULL)
            *reason = llhttp_errno_name(err);
        return PX_EPARSE;
    }
    if (!h->complete) {
        if (h->len - h->msg_start > PX_HEAD_MAX) {
            *reason = "message head too large";
            return PX_ETOOBIG;
        }
        return 0;
    }
    rc = px__head_scan(h, reason);
    if (rc != 0)
        return rc;
    if (h->head_end - h->msg_start > PX_HEAD_MAX) {
        *reason = "message head too large";
        return PX_ETOOBIG;
    }
    return 1;
}

int px_span_ieq(const px_head_t *h, px_span_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && strncasecmp(h->buf + s.off, lit, n) == 0;
}

int px_head_find(const px_head_t *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (px_span_ieq(h, h->names[i], name))
            return (int)i;
    return -1;
}

int px_head_count(const px_head_t *h, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < h->n; i++)
        if (px_span_ieq(h, h->names[i], name))
            n++;
    return n;
}
