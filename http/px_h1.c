#include "http/px_h1.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "base/px_grow.h"

/* ---- px_msg ------------------------------------------------------------------------------- */

void px_msg_free(px_msg_t *m)
{
    if (m == NULL)
        return;
    free(m->buf);
    free(m);
}

int px_msg_span_ieq(const px_msg_t *m, px_span_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && strncasecmp(m->buf + s.off, lit, n) == 0;
}

int px_msg_find(const px_msg_t *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (px_msg_span_ieq(m, m->names[i], name))
            return (int)i;
    return -1;
}

int px_msg_count(const px_msg_t *m, const char *name)
{
    int c = 0;
    for (size_t i = 0; i < m->n; i++)
        if (px_msg_span_ieq(m, m->names[i], name))
            c++;
    return c;
}

/* ---- llhttp callbacks ------------------------------------------------------------------------ */

static px_h1_t *px__h1(llhttp_t *l)
{
    return l->data;
}

/* at lies in p->base; its offset in the head is what came before base plus its place there. */
static void px__span_add(px_h1_t *p, px_span_t *s, const char *at, size_t len)
{
    uint32_t off = (uint32_t)(p->base_off + (size_t)(at - p->base));
    if (s->len != 0 && s->off + s->len == off) {
        s->len += (uint32_t)len;
    } else {
        s->off = off;
        s->len = (uint32_t)len;
    }
}

static int on_h1_message_begin(llhttp_t *l)
{
    px_h1_t *p = px__h1(l);
    if (p->m == NULL) {
        p->m = calloc(1, sizeof(*p->m));
        if (p->m == NULL) {
            llhttp_set_error_reason(l, "out of memory");
            return HPE_USER;
        }
    }
    p->m->is_request = p->is_request;
    p->last_was_value = 0;
    return 0;
}

static int on_h1_target(llhttp_t *l, const char *at, size_t len)
{
    px_h1_t *p = px__h1(l);
    px__span_add(p, &p->m->target, at, len);
    return 0;
}

/* Trailer fields arrive through the header callbacks too, pointing into whatever buffer holds
 * the body: they go to their own container, capped, never to the head. */
static int px__trailer(llhttp_t *l, px_h1_t *p, const char *at, size_t len, int is_value)
{
    if (p->trailers == NULL) {
        p->trailers = calloc(1, sizeof(*p->trailers));
        if (p->trailers == NULL) {
            llhttp_set_error_reason(l, "out of memory");
            return HPE_USER;
        }
    }
    px_fields_t *t = p->trailers;
    if (!is_value && (p->trailer_last_was_value || t->n == 0)) {
        if (t->n >= PX_TRAILERS_MAX) {
            llhttp_set_error_reason(l, "trailer section too large");
            return HPE_USER;
        }
        t->n++;
        t->names[t->n - 1] = (px_span_t){(uint32_t)t->len, 0};
        t->values[t->n - 1] = (px_span_t){0, 0};
    }
    p->trailer_last_was_value = is_value;
    if (t->n == 0)
        return 0;
    if (len > PX_TRAILER_MAX - t->len) {
        llhttp_set_error_reason(l, "trailer section too large");
        return HPE_USER;
    }
    px_span_t *s = is_value ? &t->values[t->n - 1] : &t->names[t->n - 1];
    if (s->len == 0)
        s->off = (uint32_t)t->len;
    memcpy(t->buf + t->len, at, len);
    t->len += len;
    s->len += (uint32_t)len;
    return 0;
}

static int on_h1_field(llhttp_t *l, const char *at, size_t len)
{
    px_h1_t *p = px__h1(l);
    if (l->flags & F_TRAILING)
        return px__trailer(l, p, at, len, 0);
    px_msg_t *m = p->m;
    if (p->last_was_value || m->n == 0) {
        if (m->n >= PX_HEADERS_MAX) {
            p->err = PX_ETOOBIG;
            llhttp_set_error_reason(l, "too many header fields");
            return HPE_USER;
        }
        m->n++;
        m->names[m->n - 1] = (px_span_t){0, 0};
        m->values[m->n - 1] = (px_span_t){0, 0};
        p->last_was_value = 0;
    }
    px__span_add(p, &m->names[m->n - 1], at, len);
    return 0;
}

static int on_h1_value(llhttp_t *l, const char *at, size_t len)
{
    px_h1_t *p = px__h1(l);
    if (l->flags & F_TRAILING)
        return px__trailer(l, p, at, len, 1);
    if (p->m->n == 0)
        return HPE_USER;
    p->last_was_value = 1;
    px__span_add(p, &p->m->values[p->m->n - 1], at, len);
    return 0;
}

static int on_h1_value_complete(llhttp_t *l)
{
    px_h1_t *p = px__h1(l);
    if (l->flags & F_TRAILING) {
        p->trailer_last_was_value = 1;
        return 0;
    }
    p->last_was_value = 1;
    return 0;
}

static int on_h1_headers_complete(llhttp_t *l)
{
    px_h1_t *p = px__h1(l);
    px_msg_t *m = p->m;
    m->method = l->method;
    m->status = l->status_code;
    p->status = m->status;
    if (!p->is_request && (m->status < 100 || m->status > 999)) {
        llhttp_set_error_reason(l, "invalid status code");
        return HPE_USER; /* RFC 9110: three digits */
    }
    m->major = l->http_major;
    m->minor = l->http_minor;
    if (l->flags & F_CHUNKED)
        m->flags |= PX_MSG_CHUNKED;
    if (l->flags & F_CONTENT_LENGTH) {
        m->flags |= PX_MSG_LENGTH;
        m->length = l->content_length;
    }
    if (l->upgrade)
        m->flags |= PX_MSG_UPGRADE;
    if (!p->is_request && (p->no_body || (m->status >= 100 && m->status < 200) ||
                           m->status == 204 || m->status == 304)) {
        m->flags |= PX_MSG_NO_BODY;
        l->flags |= F_SKIPBODY; /* what returning 1 would do; we pause here instead */
    }
    if (llhttp_should_keep_alive(l))
        m->flags |= PX_MSG_KEEPALIVE;
    if (!p->is_request && !(m->flags & (PX_MSG_NO_BODY | PX_MSG_CHUNKED | PX_MSG_LENGTH)) &&
        m->status >= 200)
        m->flags |= PX_MSG_UNTIL_CLOSE;
    return HPE_PAUSED; /* the head is handed out before any body byte is parsed */
}

static int on_h1_body(llhttp_t *l, const char *at, size_t len)
{
    px_h1_t *p = px__h1(l);
    if (p->cbs->on_data(p->owner, at, len) != 0) {
        p->paused = 1;
        return HPE_PAUSED;
    }
    return 0;
}

static int on_h1_message_complete(llhttp_t *l)
{
    px_h1_t *p = px__h1(l);
    p->state = PX_H1_DONE;
    if (!p->is_request && p->status >= 100 && p->status < 200 && p->status != 101)
        return HPE_PAUSED; /* an interim response has no end of its own: px_h1_feed reads on */
    if (p->cbs->on_end(p->owner, p->trailers != NULL && p->trailers->n > 0 ? p->trailers : NULL) !=
        0)
        p->paused = 1;
    return HPE_PAUSED;
}

static llhttp_settings_t px__h1_settings;

static void px__settings_init(void)
{
    llhttp_settings_t *s = &px__h1_settings;
    llhttp_settings_init(s);
    s->on_message_begin = on_h1_message_begin;
    s->on_url = on_h1_target;
    s->on_status = on_h1_target;
    s->on_header_field = on_h1_field;
    s->on_header_value = on_h1_value;
    s->on_header_value_complete = on_h1_value_complete;
    s->on_headers_complete = on_h1_headers_complete;
    s->on_body = on_h1_body;
    s->on_message_complete = on_h1_message_complete;
}

/* The parser callbacks, set once whichever loop asks first (--workers: several at once). */
static const llhttp_settings_t *px__settings(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, px__settings_init);
    return &px__h1_settings;
}

/* ---- the parser -------------------------------------------------------------------------- */

static void px__restart(px_h1_t *p);

static void px__llh_init(px_h1_t *p)
{
    llhttp_init(&p->llh, p->is_request ? HTTP_REQUEST : HTTP_RESPONSE, px__settings());
    p->llh.data = p;
}

void px_h1_init(px_h1_t *p, int is_request, const px_h1_cbs_t *cbs, void *owner)
{
    memset(p, 0, sizeof(*p));
    p->is_request = is_request;
    p->cbs = cbs;
    p->owner = owner;
    px__llh_init(p);
}

void px_h1_free(px_h1_t *p)
{
    free(p->hbuf);
    p->hbuf = NULL;
    p->hlen = p->hcap = 0;
    px_msg_free(p->m);
    p->m = NULL;
    free(p->trailers);
    p->trailers = NULL;
}

void px_h1_expect_no_body(px_h1_t *p)
{
    p->no_body = 1;
}

static int px__fail(px_h1_t *p, int err, const char *reason)
{
    p->err = err;
    p->reason = reason;
    return err;
}

static int px__head_append(px_h1_t *p, const char *data, size_t len)
{
    if (len == 0)
        return 0;
    if (len > PX_HEAD_MAX + 4 - p->hlen)
        return PX_ETOOBIG;
    int rc = px_grow(&p->hbuf, &p->hcap, p->hlen + len, 1, 1024, PX_HEAD_MAX + 4);
    if (rc != 0)
        return rc;
    memcpy(p->hbuf + p->hlen, data, len);
    p->hlen += len;
    return 0;
}

/* The whole head is in hbuf: no bare LF, no obs-fold (llhttp's strict mode leaves these). */
static const char *px__head_scan(const char *b, size_t len)
{
    size_t i = 0;
    while (i + 1 < len && b[i] == '\r' && b[i + 1] == '\n')
        i += 2; /* empty lines before the request line are ignored (RFC 9112 section 2.2) */
    for (; i < len; i++) {
        if (b[i] != '\n')
            continue;
        if (i == 0 || b[i - 1] != '\r')
            return "bare LF in message head";
        if (i + 1 < len && (b[i + 1] == ' ' || b[i + 1] == '\t'))
            return "obsolete line folding in message head";
    }
    return NULL;
}

/* The head is complete: checks, then hands the message to the owner. Returns 0 or a failure. */
static int px__head_done(px_h1_t *p)
{
    if (p->hlen > PX_HEAD_MAX)
        return px__fail(p, PX_ETOOBIG, "message head too large");
    const char *why = px__head_scan(p->hbuf, p->hlen);
    if (why != NULL)
        return px__fail(p, PX_EPARSE, why);
    px_msg_t *m = p->m;
    p->m = NULL;
    for (size_t i = 0; i < m->n; i++) { /* optional whitespace after a value is not part of it */
        px_span_t *v = &m->values[i];
        while (v->len > 0 &&
               (p->hbuf[v->off + v->len - 1] == ' ' || p->hbuf[v->off + v->len - 1] == '\t'))
            v->len--;
    }
    m->buf = p->hbuf;
    m->len = p->hlen;
    p->hbuf = NULL;
    p->hlen = p->hcap = 0;
    p->state = PX_H1_BODY;
    llhttp_resume(&p->llh);
    if (p->cbs->on_head(p->owner, m) != 0)
        p->paused = 1;
    return 0;
}

static int px__llhttp_failed(px_h1_t *p, llhttp_errno_t e)
{
    if (p->err == PX_ETOOBIG)
        return px__fail(p, PX_ETOOBIG, "too many header fields");
    const char *r = llhttp_get_error_reason(&p->llh);
    if (e == HPE_PAUSED_H2_UPGRADE)
        r = "HTTP/2 connection preface on an HTTP/1 connection";
    return px__fail(p, PX_EPARSE, r != NULL ? r : llhttp_errno_name(e));
}

int px_h1_feed(px_h1_t *p, const char *data, size_t len, size_t *used)
{
    size_t off = 0;
    *used = 0;
    if (p->err != 0)
        return p->err;
    if (p->paused) {
        /* a callback paused the parser: it goes on where it stopped */
        p->paused = 0;
        if (p->state == PX_H1_BODY)
            llhttp_resume(&p->llh);
    }
    for (;;) {
        if (p->state == PX_H1_DONE && !p->is_request && p->status >= 100 && p->status < 200 &&
            p->status != 101) {
            /* an interim response ended: the final one follows on the same bytes */
            if (++p->interim > PX_INTERIM_MAX) {
                *used = off;
                return px__fail(p, PX_EPARSE, "too many interim (1xx) responses");
            }
            px__restart(p);
        }
        if (p->paused || p->state == PX_H1_DONE || p->state == PX_H1_UPGRADED)
            break;
        if (off == len && p->state == PX_H1_HEAD)
            break;
        const char *at = data + off; /* never NULL for llhttp, even when nothing is left */
        size_t n = len - off;
        p->base = at;
        p->base_off = p->hlen;
        unsigned starts = p->starts;
        llhttp_errno_t e = llhttp_execute(&p->llh, at, n);
        size_t took = n;
        if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE)
            took = (size_t)(llhttp_get_error_pos(&p->llh) - at);
        if (p->starts != starts) {
            /* on_end began the next message (px_h1_next): llhttp recorded its pause in the fresh
             * state after the callback, so that starts over; the next feed reads the next head */
            px__llh_init(p);
            p->paused = 0;
            *used = off + took;
            return 0;
        }
        if (e != HPE_OK && e != HPE_PAUSED && e != HPE_PAUSED_UPGRADE)
            return px__llhttp_failed(p, e);
        if (p->state == PX_H1_HEAD) {
            int rc = px__head_append(p, at, took);
            off += took;
            if (rc != 0)
                return px__fail(p, rc,
                                rc == PX_ETOOBIG ? "message head too large" : "out of memory");
            if (e == HPE_OK) {
                /* all of it went into a head that is not complete yet */
                if (p->hlen > PX_HEAD_MAX)
                    return px__fail(p, PX_ETOOBIG, "message head too large");
                break;
            }
            rc = px__head_done(p);
            if (rc != 0)
                return rc;
            continue;
        }
        off += took;
        if (e == HPE_PAUSED_UPGRADE) {
            p->state = PX_H1_UPGRADED;
            break;
        }
        if (e == HPE_OK)
            break;
        if (p->state == PX_H1_BODY && !p->paused)
            llhttp_resume(&p->llh); /* a pause we did not ask for: go on */
    }
    *used = off;
    return 0;
}

void px_h1_resume(px_h1_t *p)
{
    p->paused = 0;
    if (p->state == PX_H1_BODY)
        llhttp_resume(&p->llh);
}

/* The next message, same request: a fresh llhttp (after an Upgrade or CONNECT that was not
 * taken up, or a pause at a message's end, the next message starts from a clean state). */
static void px__restart(px_h1_t *p)
{
    px__llh_init(p);
    p->starts++;
    p->state = PX_H1_HEAD;
    p->status = 0;
    p->paused = 0;
    if (p->trailers != NULL) {
        p->trailers->n = 0;
        p->trailers->len = 0;
    }
    p->trailer_last_was_value = 0;
}

void px_h1_next(px_h1_t *p)
{
    px__restart(p);
    p->no_body = 0;
    p->interim = 0;
}

int px_h1_finish(px_h1_t *p)
{
    if (p->state != PX_H1_BODY)
        return p->state == PX_H1_HEAD && p->hlen == 0 ? 0 : PX_EPARSE;
    llhttp_errno_t e = llhttp_finish(&p->llh);
    if ((e == HPE_OK || e == HPE_PAUSED) && p->state == PX_H1_DONE)
        return 0;
    return px__fail(p, PX_EPARSE, "message cut short");
}

int px_h1_mid_head(const px_h1_t *p)
{
    return p->state == PX_H1_HEAD && p->hlen > 0;
}

/* ---- serializing ------------------------------------------------------------------------- */

int px_h1_hop_by_hop(const char *name, size_t nlen, const char *conn, size_t conn_len)
{
    static const char *const fixed[] = {"connection", "keep-alive",          "proxy-connection",
                                        "te",         "proxy-authorization", "upgrade",
                                        "expect"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (nlen == strlen(fixed[i]) && strncasecmp(name, fixed[i], nlen) == 0)
            return 1;
    /* fields named by Connection, except those that route or frame the message */
    if (conn == NULL || (nlen == 4 && strncasecmp(name, "host", 4) == 0) ||
        (nlen == 14 && strncasecmp(name, "content-length", 14) == 0) ||
        (nlen == 17 && strncasecmp(name, "transfer-encoding", 17) == 0))
        return 0;
    size_t i = 0;
    while (i < conn_len) {
        while (i < conn_len && (conn[i] == ' ' || conn[i] == ',' || conn[i] == '\t'))
            i++;
        size_t s = i;
        while (i < conn_len && conn[i] != ',' && conn[i] != ' ' && conn[i] != '\t')
            i++;
        if (i > s && nlen == i - s && strncasecmp(name, conn + s, i - s) == 0)
            return 1;
    }
    return 0;
}

size_t px_h1_chunk_head(char *out, size_t len)
{
    return (size_t)snprintf(out, 20, "%zx\r\n", len);
}

size_t px_h1_last_chunk(char *out, const px_fields_t *t)
{
    size_t n = 0;
    memcpy(out, "0\r\n", 3);
    n = 3;
    for (size_t i = 0; t != NULL && i < t->n; i++) {
        memcpy(out + n, t->buf + t->names[i].off, t->names[i].len);
        n += t->names[i].len;
        memcpy(out + n, ": ", 2);
        n += 2;
        memcpy(out + n, t->buf + t->values[i].off, t->values[i].len);
        n += t->values[i].len;
        memcpy(out + n, "\r\n", 2);
        n += 2;
    }
    memcpy(out + n, "\r\n", 2);
    return n + 2;
}
