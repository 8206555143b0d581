#include "http/px_h2.h"

#include <llhttp.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "http/px_h2_int.h"

/* ---- header bytes held ------------------------------------------------------------------- */

/* Counts n more decoded header bytes held by st: in the session, then in each shared counter.
 * Returns 0, or -1 when one would pass its bound (nothing counted): st's refusal is set. A
 * shared counter may be a sandbox's, whose connections run on several loops (--workers): it is
 * changed atomically, taken first and given back when it went past its bound. */
static int px__heads_charge(px_h2_t *h, px_h2s_t *st, size_t n)
{
    if (h->held + n > PX_H2_CONN_HEADS_MAX) {
        st->bad_status = 431;
        st->bad_rst = NGHTTP2_ENHANCE_YOUR_CALM;
        st->bad = "the connection's streams hold too many header bytes; stream reset "
                  "(ENHANCE_YOUR_CALM)";
        return -1;
    }
    for (size_t i = 0; i < h->nshare; i++) {
        if (__atomic_add_fetch(h->share[i].held, n, __ATOMIC_RELAXED) > h->share[i].max) {
            for (size_t k = 0; k <= i; k++)
                __atomic_sub_fetch(h->share[k].held, n, __ATOMIC_RELAXED);
            st->bad_status = 503;
            st->bad_rst = NGHTTP2_REFUSED_STREAM;
            st->bad = h->share[i].reason;
            return -1;
        }
    }
    h->held += n;
    st->held += n;
    return 0;
}

void px__heads_release(px_h2_t *h, px_h2s_t *st)
{
    for (size_t i = 0; i < h->nshare; i++)
        __atomic_sub_fetch(h->share[i].held, st->held, __ATOMIC_RELAXED);
    h->held -= st->held;
    st->held = 0;
}

void px_h2_share(px_h2_t *h, const px_h2_share_t *s, size_t n)
{
    px_h2_unshare(h);
    for (size_t i = 0; i < n && i < PX_H2_SHARES; i++) {
        h->share[i] = s[i];
        __atomic_add_fetch(s[i].held, h->held, __ATOMIC_RELAXED); /* nothing yet, normally */
        h->nshare++;
    }
}

void px_h2_unshare(px_h2_t *h)
{
    for (size_t i = 0; i < h->nshare; i++)
        __atomic_sub_fetch(h->share[i].held, h->held, __ATOMIC_RELAXED);
    h->nshare = 0;
}

size_t px_h2_heads_held(const px_h2_t *h)
{
    return h->held;
}

/* The head being read is dropped (the codec refuses the stream): nothing of it stays held. */
static void px__head_drop(px_h2_t *h, px_h2s_t *st)
{
    px_msg_free(st->m);
    st->m = NULL;
    free(st->cookie);
    st->cookie = NULL;
    st->cookie_len = st->cookie_cap = 0;
    px__heads_release(h, st);
}

static void px__stream_free(px_h2_t *h, px_h2s_t *st)
{
    px__heads_release(h, st);
    if (st->prev != NULL)
        st->prev->next = st->next;
    else
        h->streams = st->next;
    if (st->next != NULL)
        st->next->prev = st->prev;
    px_msg_free(st->m);
    free(st->cookie);
    free(st->trailers);
    px_h2io_q_free(&st->q);
    free(st);
}

static void px__terminate(px_h2_t *h, uint32_t code, const char *reason)
{
    if (h->reason == NULL)
        h->reason = reason;
    h->term = 1;
    nghttp2_session_terminate_session(h->ses, code);
}

/* ---- reading a request head ------------------------------------------------------------- */

/* Appends bytes to the head's buffer; returns their offset, or -1 when out of memory. */
static long px__put(px_h2s_t *st, const uint8_t *b, size_t len)
{
    px_msg_t *m = st->m;
    if (px__grow(&m->buf, &st->mcap, m->len, len) != 0)
        return -1;
    memcpy(m->buf + m->len, b, len);
    m->len += len;
    return (long)(m->len - len);
}

#define px__name_is(n, len, lit) ((len) == strlen(lit) && memcmp((n), (lit), (len)) == 0)

static int px__pseudo(px_h2s_t *st, const uint8_t *n, size_t nl, const uint8_t *v, size_t vl)
{
    long off = px__put(st, v, vl);
    if (off < 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    static const char *const names[] = {":method", ":path", ":scheme", ":authority", ":protocol"};
    px_span_t *spans[] = {&st->method, &st->path, &st->rq.scheme, &st->rq.authority,
                          &st->rq.protocol};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (px__name_is(n, nl, names[i]))
            *spans[i] = (px_span_t){(uint32_t)off, (uint32_t)vl};
    return 0;
}

/* Cookie crumbs (RFC 9113 section 8.2.3) become one field, as HTTP/1 carries it. */
static int px__cookie(px_h2s_t *st, const uint8_t *v, size_t vl)
{
    if (px__grow(&st->cookie, &st->cookie_cap, st->cookie_len, vl + 2) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (st->cookie_len) {
        memcpy(st->cookie + st->cookie_len, "; ", 2);
        st->cookie_len += 2;
    }
    memcpy(st->cookie + st->cookie_len, v, vl);
    st->cookie_len += vl;
    return 0;
}

static int px__head_field(px_h2s_t *st, const uint8_t *n, size_t nl, const uint8_t *v, size_t vl)
{
    if (st->bad != NULL)
        return 0; /* refused already: the rest is decoded (HPACK state) and dropped */
    st->hsize += nl + vl + 32;
    if (st->hsize > PX_H2_HEADER_LIST_MAX) {
        st->bad_status = 431;
        st->bad = "request header fields too large";
    }
    if (st->bad != NULL || px__heads_charge(st->h, st, nl + vl + 32) != 0) {
        px__head_drop(st->h, st); /* what was kept goes now, not when the block ends */
        return 0;
    }
    if (nl > 0 && n[0] == ':')
        return px__pseudo(st, n, nl, v, vl);
    if (px__name_is(n, nl, "cookie"))
        return px__cookie(st, v, vl);
    px_msg_t *m = st->m;
    if (m->n >= PX_HEADERS_MAX - 2) { /* room for a Host made from :authority and Cookie */
        st->bad_status = 431;
        st->bad = "too many header fields";
        px__head_drop(st->h, st);
        return 0;
    }
    long no = px__put(st, n, nl);
    long vo = no < 0 ? -1 : px__put(st, v, vl);
    if (vo < 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    m->names[m->n] = (px_span_t){(uint32_t)no, (uint32_t)nl};
    m->values[m->n] = (px_span_t){(uint32_t)vo, (uint32_t)vl};
    m->n++;
    return 0;
}

static void px__trailer_field(px_h2s_t *st, const uint8_t *n, size_t nl, const uint8_t *v,
                              size_t vl)
{
    if (st->trailer_bad)
        return;
    if (st->trailers == NULL)
        st->trailers = calloc(1, sizeof(*st->trailers));
    px_fields_t *t = st->trailers;
    if (t == NULL || t->n >= PX_TRAILERS_MAX || nl + vl > PX_TRAILER_MAX - t->len) {
        st->trailer_bad = 1; /* over the caps (or out of memory): the stream is reset */
        return;
    }
    t->names[t->n] = (px_span_t){(uint32_t)t->len, (uint32_t)nl};
    memcpy(t->buf + t->len, n, nl);
    t->len += nl;
    t->values[t->n] = (px_span_t){(uint32_t)t->len, (uint32_t)vl};
    memcpy(t->buf + t->len, v, vl);
    t->len += vl;
    t->n++;
}

static int on_h2_begin_headers(nghttp2_session *ses, const nghttp2_frame *f, void *ud)
{
    px_h2_t *h = ud;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    px_h2s_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->m = calloc(1, sizeof(*st->m));
    if (st->m == NULL) {
        free(st);
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    st->h = h;
    st->id = f->hd.stream_id;
    st->next = h->streams;
    if (h->streams != NULL)
        h->streams->prev = st;
    h->streams = st;
    nghttp2_session_set_stream_user_data(ses, st->id, st);
    return 0;
}

static int on_h2_header(nghttp2_session *ses, const nghttp2_frame *f, const uint8_t *n, size_t nl,
                        const uint8_t *v, size_t vl, uint8_t flags, void *ud)
{
    px_h2s_t *st = px__stream(ud, f->hd.stream_id);
    if (st == NULL || f->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (f->headers.cat == NGHTTP2_HCAT_REQUEST && st->m != NULL)
        return px__head_field(st, n, nl, v, vl);
    if (f->headers.cat == NGHTTP2_HCAT_HEADERS)
        px__trailer_field(st, n, nl, v, vl);
    return 0;
}

/* A field nghttp2 would silently drop (bad characters in a name or value) fails the stream
 * instead, as the HTTP/1 parser's strict mode fails the request. */
static int on_h2_invalid_header(nghttp2_session *ses, const nghttp2_frame *f, const uint8_t *n,
                                size_t nl, const uint8_t *v, size_t vl, uint8_t flags, void *ud)
{
    nghttp2_submit_rst_stream(ses, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_PROTOCOL_ERROR);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

static int px__method(const char *s, size_t len)
{
#define PX__METHOD(num, name, string)                                                              \
    if (len == sizeof(#string) - 1 && memcmp(s, #string, len) == 0)                                \
        return num;
    HTTP_METHOD_MAP(PX__METHOD)
#undef PX__METHOD
    return -1;
}

/* Adds field name: the bytes of span v, first or last in the head. Returns 0 or -1 (out of
 * memory). */
static int px__field_add(px_h2s_t *st, const char *name, px_span_t v, int first)
{
    px_msg_t *m = st->m;
    long no = px__put(st, (const uint8_t *)name, strlen(name));
    if (no < 0)
        return -1;
    size_t i = first ? 0 : m->n;
    memmove(m->names + i + 1, m->names + i, (m->n - i) * sizeof(m->names[0]));
    memmove(m->values + i + 1, m->values + i, (m->n - i) * sizeof(m->values[0]));
    m->names[i] = (px_span_t){(uint32_t)no, (uint32_t)strlen(name)};
    m->values[i] = v;
    m->n++;
    return 0;
}

/* The head is complete: Host from :authority, Cookie, method, target and framing flags. */
static int px__head_finish(px_h2s_t *st, int end_stream)
{
    px_msg_t *m = st->m;
    px_h2_req_t *rq = &st->rq;
    int hi = px_msg_find(m, "host");
    if (rq->authority.len > 0) {
        if (hi >= 0 && !(m->values[hi].len == rq->authority.len &&
                         strncasecmp(m->buf + m->values[hi].off, m->buf + rq->authority.off,
                                     rq->authority.len) == 0))
            rq->host_conflict = 1; /* both go in: the pre-checks refuse a duplicate Host */
        if ((hi < 0 || rq->host_conflict) && px__field_add(st, "host", rq->authority, 1) != 0)
            return -1;
    }
    long co = st->cookie_len > 0 ? px__put(st, (const uint8_t *)st->cookie, st->cookie_len) : 0;
    if (co < 0 ||
        (st->cookie_len > 0 &&
         px__field_add(st, "cookie", (px_span_t){(uint32_t)co, (uint32_t)st->cookie_len}, 0)))
        return -1;
    m->is_request = 1;
    m->major = 2;
    m->minor = 0;
    m->method = px__method(m->buf + st->method.off, st->method.len);
    if (m->method == HTTP_CONNECT) {
        m->flags |= PX_MSG_UPGRADE;
        m->target = rq->protocol.len > 0 ? st->path : rq->authority;
    } else {
        m->target = st->path;
    }
    int cl = px_msg_find(m, "content-length");
    if (cl >= 0) { /* nghttp2 checked it: digits only, and the DATA frames add up to it */
        m->flags |= PX_MSG_LENGTH;
        for (uint32_t i = 0; i < m->values[cl].len; i++)
            m->length = m->length * 10 + (uint64_t)(m->buf[m->values[cl].off + i] - '0');
    }
    if (end_stream)
        m->flags |= PX_MSG_NO_BODY;
    return 0;
}

/* The codec answers a request it does not hand out (or resets it, for the header bytes held);
 * the request's body is dropped. */
static void px__refuse(px_h2_t *h, px_h2s_t *st)
{
    px__head_drop(h, st);
    if (st->bad_rst != 0) {
        nghttp2_submit_rst_stream(h->ses, NGHTTP2_FLAG_NONE, st->id, st->bad_rst);
        st->owner_reset = 1;
    } else {
        char status[4];
        snprintf(status, sizeof(status), "%03d", st->bad_status);
        nghttp2_nv nv = {(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP2_NV_FLAG_NONE};
        nghttp2_submit_response(h->ses, st->id, &nv, 1, NULL);
        st->resp_started = 1;
    }
    st->owner_done = 1;
    if (h->cbs->on_refused != NULL)
        h->cbs->on_refused(h->owner, st->id, st->bad_status, st->bad);
    /* a client that goes on opening streams past the bounds is not a real one */
    if (st->bad_rst != 0 && ++h->heads_refused > PX_H2_HEADS_REFUSED_MAX)
        px__terminate(h, NGHTTP2_ENHANCE_YOUR_CALM,
                      "too many streams refused for the header bytes held");
}

static void px__request(px_h2_t *h, px_h2s_t *st, int end_stream)
{
    if (st->bad == NULL && px__head_finish(st, end_stream) != 0) {
        px__terminate(h, NGHTTP2_INTERNAL_ERROR, "out of memory");
        return;
    }
    px_msg_t *m = st->m;
    if (st->bad == NULL) {
        int scheme_ok = px_msg_span_ieq(m, st->rq.scheme, "https") ||
                        px_msg_span_ieq(m, st->rq.scheme, "http") ||
                        (m->method == HTTP_CONNECT && st->rq.protocol.len == 0);
        if (m->method < 0 || !scheme_ok) {
            st->bad_status = 400;
            st->bad = m->method < 0 ? "unknown method" : "unsupported :scheme";
        }
    }
    if (st->bad != NULL) {
        px__refuse(h, st);
        return;
    }
    st->m = NULL;
    free(st->cookie);
    st->cookie = NULL;
    st->reported = 1;
    if (++h->win_reqs > PX_H2_RESET_WINDOW) { /* a decaying window: old history weighs half */
        h->win_reqs /= 2;
        h->win_resets /= 2;
    }
    h->cbs->on_request(h->owner, st->id, m, &st->rq);
}

/* ---- frames in -------------------------------------------------------------------------- */

static void px__req_end(px_h2_t *h, px_h2s_t *st, const px_fields_t *t)
{
    st->req_ended = 1;
    if (st->reported && !st->owner_reset)
        h->cbs->on_end(h->owner, st->id, t);
}

static int on_h2_frame_recv(nghttp2_session *ses, const nghttp2_frame *f, void *ud)
{
    px_h2_t *h = ud;
    px_h2s_t *st = px__stream(h, f->hd.stream_id);
    int end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    int cat = f->hd.type == NGHTTP2_HEADERS ? (int)f->headers.cat : -1;
    if (st == NULL)
        return 0;
    if (cat == NGHTTP2_HCAT_REQUEST)
        px__request(h, st, end);
    /* The client cancelled a stream whose response had not ended: a rapid reset loop opens and
     * cancels streams to make the server work for nothing. */
    if (f->hd.type == NGHTTP2_RST_STREAM && st->reported && !st->owner_done &&
        ++h->win_resets > PX_H2_RESET_MAX)
        px__terminate(h, NGHTTP2_ENHANCE_YOUR_CALM, "rapid reset: too many streams cancelled");
    else if (cat == NGHTTP2_HCAT_HEADERS && st->trailer_bad)
        nghttp2_submit_rst_stream(ses, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_ENHANCE_YOUR_CALM);
    else if (end && (cat >= 0 || f->hd.type == NGHTTP2_DATA))
        px__req_end(h, st,
                    cat == NGHTTP2_HCAT_HEADERS && st->trailers != NULL ? st->trailers : NULL);
    if (cat == NGHTTP2_HCAT_HEADERS) { /* the owner had them for the call: none stay held */
        free(st->trailers);
        st->trailers = NULL;
    }
    return 0;
}

static int on_h2_data(nghttp2_session *ses, uint8_t flags, int32_t sid, const uint8_t *data,
                      size_t len, void *ud)
{
    px_h2_t *h = ud;
    px_h2s_t *st = px__stream(h, sid);
    if (st == NULL || !st->reported || st->owner_reset || st->discard) {
        nghttp2_session_consume(ses, sid, len); /* nobody takes these: the window reopens */
        if (st != NULL && st->discard && (st->discarded += len) > PX_H2_DISCARD_MAX &&
            !st->owner_reset) {
            st->owner_reset = 1; /* enough: the rest is not wanted (RFC 9113 section 8.1) */
            nghttp2_submit_rst_stream(ses, NGHTTP2_FLAG_NONE, sid, NGHTTP2_NO_ERROR);
        }
        return 0;
    }
    st->unconsumed += len;
    h->cbs->on_data(h->owner, sid, (const char *)data, len);
    return 0;
}

static int on_h2_stream_close(nghttp2_session *ses, int32_t sid, uint32_t code, void *ud)
{
    px_h2_t *h = ud;
    px_h2s_t *st = px__stream(h, sid);
    if (st == NULL)
        return 0;
    nghttp2_session_set_stream_user_data(ses, sid, NULL);
    if (st->reported && !st->owner_reset && !st->discard && !(st->req_ended && st->owner_done))
        h->cbs->on_reset(h->owner, sid, code);
    h->owed += st->unconsumed; /* the connection window gets these back after this call */
    px__stream_free(h, st);
    return 0;
}

/* ---- frames out ------------------------------------------------------------------------- */

static int on_h2_frame_send(nghttp2_session *ses, const nghttp2_frame *f, void *ud)
{
    px_h2_t *h = ud;
    if (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR) {
        h->term = 1;
        if (h->reason == NULL) {
            /* made only now: an idle session carries no room for it (issue 34) */
            h->reason_own = malloc(PX_H2_REASON_MAX);
            if (h->reason_own == NULL) {
                h->reason = nghttp2_http2_strerror(f->goaway.error_code);
            } else {
                snprintf(h->reason_own, PX_H2_REASON_MAX, "GOAWAY %s: %.*s",
                         nghttp2_http2_strerror(f->goaway.error_code),
                         (int)(f->goaway.opaque_data_len < 100 ? f->goaway.opaque_data_len : 100),
                         f->goaway.opaque_data != NULL ? (const char *)f->goaway.opaque_data : "");
                h->reason = h->reason_own;
            }
        }
    }
    (void)ses;
    return 0;
}

/* A response head nghttp2 could not send (over its header block limit): the stream is reset,
 * rather than left waiting for a head that never leaves. */
static int on_h2_frame_not_send(nghttp2_session *ses, const nghttp2_frame *f, int err, void *ud)
{
    (void)err;
    (void)ud;
    if (f->hd.type == NGHTTP2_HEADERS && f->hd.stream_id > 0)
        nghttp2_submit_rst_stream(ses, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_INTERNAL_ERROR);
    return 0;
}

/* A HEADERS frame from the client: a new stream id above the last skips the ids between (they
 * are closed, never opened: RFC 9113 5.1.1), remembered so that a HEADERS frame on one is the
 * connection error the RFC asks for. nghttp2 cannot tell those from streams closed and
 * forgotten, where a late HEADERS frame (trailers racing our RST_STREAM) is no error, and
 * ignores both. */
static int on_h2_begin_frame(nghttp2_session *ses, const nghttp2_frame_hd *hd, void *ud)
{
    px_h2_t *h = ud;
    int32_t sid = hd->stream_id;
    if (hd->type != NGHTTP2_HEADERS || sid <= 0 || (sid & 1) == 0)
        return 0; /* even ids: nghttp2's PROTOCOL_ERROR */
    if (sid > h->top_sid) {
        if (sid > h->top_sid + 2) {
            if (h->nskipped == PX_H2_SKIPPED_MAX) { /* the oldest range is forgotten */
                memmove(h->skipped[0], h->skipped[1], sizeof(h->skipped) - sizeof(h->skipped[0]));
                h->nskipped--;
            }
            h->skipped[h->nskipped][0] = h->top_sid + 2;
            h->skipped[h->nskipped++][1] = sid - 2;
        }
        h->top_sid = sid;
        return 0;
    }
    for (unsigned i = 0; i < h->nskipped; i++) {
        if (sid < h->skipped[i][0] || sid > h->skipped[i][1])
            continue;
        if (h->reason == NULL)
            h->reason = "GOAWAY PROTOCOL_ERROR: HEADERS on a stream id skipped before";
        /* nghttp2 then ignores the rest of the input, this frame's block included */
        return nghttp2_session_terminate_session(ses, NGHTTP2_PROTOCOL_ERROR) == 0
                   ? 0
                   : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

/* ---- the session ------------------------------------------------------------------------ */

static nghttp2_session_callbacks *px__callbacks(void)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return NULL;
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_h2_begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_h2_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_h2_header);
    nghttp2_session_callbacks_set_on_invalid_header_callback(cb, on_h2_invalid_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_h2_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_h2_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_h2_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_h2_frame_send);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, on_h2_frame_not_send);
    return cb;
}

static nghttp2_option *px__options(void)
{
    nghttp2_option *o;
    if (nghttp2_option_new(&o) != 0)
        return NULL;
    nghttp2_option_set_no_auto_window_update(o, 1);
    nghttp2_option_set_no_closed_streams(o, 1); /* px__closed_by_client() instead */
    /* Responses use no dynamic table, as nginx's and HAProxy's do not: the table would keep
     * every response's fields (~700 bytes an idle connection), for the few bytes of a date or
     * a content type that repeat. The client's table (requests) is PX_H2_HPACK_TABLE. */
    nghttp2_option_set_max_deflate_dynamic_table_size(o, 0);
    nghttp2_option_set_max_outbound_ack(o, PX_H2_MAX_OUTBOUND_ACK);
    nghttp2_option_set_max_settings(o, PX_H2_MAX_SETTINGS);
    nghttp2_option_set_stream_reset_rate_limit(o, PX_H2_RST_BURST, PX_H2_RST_RATE);
    nghttp2_option_set_max_continuations(o, PX_H2_MAX_CONTINUATIONS);
    return o;
}

px_h2_t *px_h2_new(const px_h2_cbs_t *cbs, void *owner)
{
    px_h2_t *h = calloc(1, sizeof(*h));
    nghttp2_session_callbacks *cb = px__callbacks();
    nghttp2_option *o = px__options();
    nghttp2_mem mem;
    if (h != NULL) {
        px_h2mem_init(&h->mem, &mem); /* nghttp2 copies mem; h->mem outlives the session */
        h->mem.deflate_unused = 1;    /* px__options(): no dynamic table for responses */
    }
    int rv = h == NULL || cb == NULL || o == NULL ||
             nghttp2_session_server_new3(&h->ses, cb, h, o, &mem);
    nghttp2_session_callbacks_del(cb); /* both take NULL */
    nghttp2_option_del(o);
    if (rv != 0) {
        free(h);
        return NULL;
    }
    px_h2mem_made(&h->mem);
    h->cbs = cbs;
    h->owner = owner;
    const nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, PX_H2_MAX_STREAMS},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, PX_H2_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, PX_H2_HEADER_LIST_MAX},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, PX_H2_HPACK_TABLE},
        {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},
        /* no SETTINGS_NO_RFC7540_PRIORITIES: nghttp2 checks PRIORITY frames and keeps closed
         * streams only with RFC 7540 priorities on */
    };
    if (nghttp2_submit_settings(h->ses, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) ||
        nghttp2_session_set_local_window_size(h->ses, NGHTTP2_FLAG_NONE, 0, PX_H2_CONN_WINDOW)) {
        px_h2_free(h);
        return NULL;
    }
    return h;
}

void px_h2_free(px_h2_t *h)
{
    if (h == NULL)
        return;
    nghttp2_session_del(h->ses);
    while (h->streams != NULL)
        px__stream_free(h, h->streams);
    free(h->out.buf);
    free(h->reason_own);
    free(h);
}

/* After nghttp2 returned: window owed for closed streams, and on_drain calls. */
static void px__after(px_h2_t *h)
{
    if (h->owed > 0 && !h->failed) {
        if (nghttp2_session_consume_connection(h->ses, h->owed) == NGHTTP2_ERR_NOMEM)
            h->failed = PX_ENOMEM;
        h->owed = 0;
    }
    if (!h->any_drain)
        return;
    h->any_drain = 0;
    for (px_h2s_t *st = h->streams; st != NULL; st = st->next) {
        if (!st->q.drain)
            continue;
        st->q.drain = 0;
        if (h->cbs->on_drain != NULL && !st->owner_reset)
            h->cbs->on_drain(h->owner, st->id);
    }
}

/* Frames from nghttp2 into the output buffer, up to PX_H2_OUT_MAX. */
static int px__pump(px_h2_t *h)
{
    /* a failed session gathers nothing more, but what the owner took is forgotten still */
    int err = px_h2io_out_fill(&h->out, h->ses, h->failed ? 0 : PX_H2_OUT_MAX);
    if (!h->failed)
        h->failed = err;
    px__after(h);
    /* the output buffer stays between pumps: freeing ~64 KiB after each one made glibc give the
     * heap's top back and fault it in again (a brk pair and 16 page faults per 40 KiB of a
     * download); px_h2_trim frees it once the connection goes quiet */
    if (h->failed && h->reason == NULL)
        h->reason = h->failed == PX_ENOMEM ? "out of memory" : "HTTP/2 session failed";
    return h->failed;
}

/* ---- frames on streams the client closed -------------------------------------------------- */

/* 1 when sid is one of the last PX_H2_CLOSED_MAX streams the client closed. */
static int px__closed_by_client(const px_h2_t *h, uint32_t sid)
{
    for (unsigned i = 0; i < PX_H2_CLOSED_MAX; i++)
        if (h->closed[i] == sid)
            return 1;
    return 0;
}

/* Walks the frame headers in d[0..len) (the connection preface first), ahead of nghttp2, which
 * forgets closed streams (px__options) and then ignores a DATA frame on one without a word to
 * us. A stream the client ended (END_STREAM) or reset (RST_STREAM) gets nothing more from it:
 * a DATA or HEADERS frame on it after that is a STREAM_CLOSED error (RFC 9113 5.1; a stream
 * error may be taken for a connection error, 5.4). Returns the offset in d where such a frame
 * begins (0 when its header began in an earlier buffer), or len. */
static size_t px__scan(px_h2_t *h, const uint8_t *d, size_t len)
{
    size_t i = 0, k;
    if (h->scan_pre < NGHTTP2_CLIENT_MAGIC_LEN) {
        k = NGHTTP2_CLIENT_MAGIC_LEN - h->scan_pre;
        k = k < len ? k : len;
        h->scan_pre += k;
        i += k;
    }
    while (i < len) {
        if (h->scan_skip > 0) {
            k = h->scan_skip < len - i ? h->scan_skip : len - i;
            h->scan_skip -= k;
            i += k;
            continue;
        }
        k = PX_H2_FRAME_HDLEN - h->scan_hn < len - i ? PX_H2_FRAME_HDLEN - h->scan_hn : len - i;
        memcpy(h->scan_hd + h->scan_hn, d + i, k);
        h->scan_hn += k;
        i += k;
        if (h->scan_hn < PX_H2_FRAME_HDLEN)
            break;
        const uint8_t *f = h->scan_hd;
        h->scan_hn = 0;
        h->scan_skip = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
        uint32_t sid = ((uint32_t)f[5] << 24 | (uint32_t)f[6] << 16 | (uint32_t)f[7] << 8 | f[8]) &
                       0x7fffffffu;
        int carries = f[3] == NGHTTP2_DATA || f[3] == NGHTTP2_HEADERS;
        if (sid == 0)
            continue;
        if (carries && px__closed_by_client(h, sid))
            return i >= PX_H2_FRAME_HDLEN ? i - PX_H2_FRAME_HDLEN : 0;
        if (f[3] == NGHTTP2_RST_STREAM || (carries && (f[4] & NGHTTP2_FLAG_END_STREAM))) {
            h->closed[h->closed_next] = sid;
            h->closed_next = (h->closed_next + 1) % PX_H2_CLOSED_MAX;
        }
    }
    return len;
}

int px_h2_feed(px_h2_t *h, const char *data, size_t len)
{
    if (h->failed)
        return h->failed;
    size_t ok = h->term ? len : px__scan(h, (const uint8_t *)data, len);
    ssize_t rv = nghttp2_session_mem_recv(h->ses, (const uint8_t *)data, ok);
    if (ok < len && rv >= 0 && nghttp2_session_want_read(h->ses)) /* no GOAWAY of its own */
        px__terminate(h, NGHTTP2_STREAM_CLOSED,
                      "GOAWAY STREAM_CLOSED: DATA or HEADERS on a stream the client had closed");
    if (rv == NGHTTP2_ERR_NOMEM || rv == NGHTTP2_ERR_CALLBACK_FAILURE)
        h->failed = PX_ENOMEM; /* our callbacks fail only when out of memory */
    else if (rv == NGHTTP2_ERR_FLOODED)
        px__terminate(h, NGHTTP2_ENHANCE_YOUR_CALM, "flood: SETTINGS or PING acks pile up unread");
    else if (rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS)
        px__terminate(h, NGHTTP2_ENHANCE_YOUR_CALM, "flood: too many CONTINUATION frames");
    else if (rv == NGHTTP2_ERR_BAD_CLIENT_MAGIC)
        px__terminate(h, NGHTTP2_PROTOCOL_ERROR, "not an HTTP/2 connection preface");
    else if (rv < 0)
        px__terminate(h, NGHTTP2_PROTOCOL_ERROR, nghttp2_strerror((int)rv));
    int err = px__pump(h);
    if (err != 0)
        return err;
    return h->term ? PX_EPARSE : 0;
}

int px_h2_take_output(px_h2_t *h, const char **data, size_t *len)
{
    int err = px__pump(h);
    *data = h->out.buf;
    *len = h->out.len;
    h->out.handed = h->out.len;
    return err != 0 && h->out.len == 0 ? err : 0;
}

int px_h2_want_write(const px_h2_t *h)
{
    return h->out.len > h->out.handed || (!h->failed && nghttp2_session_want_write(h->ses));
}

int px_h2_done(const px_h2_t *h)
{
    if (h->out.len > h->out.handed)
        return 0;
    return h->failed || (!nghttp2_session_want_read(h->ses) && !nghttp2_session_want_write(h->ses));
}

size_t px_h2_paged_resident(const px_h2_t *h)
{
    return px_h2mem_resident(&h->mem);
}

size_t px_h2_trim_output(px_h2_t *h)
{
    size_t held = h->out.cap;
    if (h->out.len > h->out.handed)
        return 0; /* frames the owner has not taken yet */
    h->out.len = h->out.handed = 0;
    px_h2io_out_trim(&h->out);
    return held;
}

size_t px_h2_output_held(const px_h2_t *h)
{
    return h->out.cap;
}

size_t px_h2_trim(px_h2_t *h)
{
    size_t out = px_h2_trim_output(h);
    /* nghttp2 packs a frame into its frame buffer and hands it out whole; px__pump copies it
     * to out.buf at once. With nothing to send it holds no frame: nghttp2 resets the buffer
     * before it lets go of the frame's item (aob.item, which want_write counts). */
    int dead = !h->failed && !h->term && nghttp2_session_want_read(h->ses) &&
               !nghttp2_session_want_write(h->ses);
    return out + px_h2mem_trim(&h->mem, dead);
}

const char *px_h2_reason(const px_h2_t *h)
{
    return h->reason != NULL ? h->reason : "";
}

void px_h2_consume(px_h2_t *h, int32_t sid, size_t n)
{
    px_h2s_t *st = px__stream(h, sid);
    if (st == NULL || h->failed)
        return;
    if (n > st->unconsumed)
        n = st->unconsumed;
    st->unconsumed -= n;
    if (nghttp2_session_consume(h->ses, sid, n) == NGHTTP2_ERR_NOMEM)
        h->failed = PX_ENOMEM;
}
