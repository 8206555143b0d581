#include "http/px_h2cli.h"
#include "http/px_h2io.h"
#include "http/px_h2mem.h"

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"

/* One request stream. Lives from px_h2c_open() until both the owner let go (px_h2c_close) and
 * nghttp2 closed the stream; freed in px__after(), never under a callback of its own. */
struct px_h2cs {
    px_h2c_t *h;
    px_h2cs_t *prev, *next; /* every stream of h */
    int32_t id;
    void *owner;
    px_msg_t *m; /* the response head being read */
    size_t mcap;
    size_t hsize; /* header list bytes so far */
    unsigned interim;
    px_fields_t *trailers;
    char *held; /* response bytes held while paused */
    size_t held_len, held_cap;
    px_h2io_q_t q;   /* the request body waiting for the server's windows, its trailers */
    const char *bad; /* the response broke a cap: why (static) */
    uint32_t code;
    unsigned is_head : 1, final : 1, no_body : 1;
    unsigned req_body : 1, req_end : 1;
    unsigned paused : 1, resp_end : 1, end_told : 1;
    unsigned ng_closed : 1, owner_gone : 1;
};

struct px_h2c {
    nghttp2_session *ses;
    px_h2mem_t mem; /* nghttp2's allocations: a pooled idle connection backs few pages */
    const px_h2c_cbs_t *cbs;
    px_h2cs_t *streams;
    size_t open; /* streams the owner holds */
    px_h2io_out_t out;
    size_t owed; /* connection window owed for bytes dropped with their stream */
    int failed;
    int goaway; /* a GOAWAY came or went */
    int term;   /* a GOAWAY with an error went (or is on its way) */
    int32_t goaway_last;
    int any_drain, any_free;
    const char *reason;
    char reason_buf[160];
    char why[200]; /* a stream's failure, for its on_error */
};

/* ---- streams ------------------------------------------------------------------------------ */

#define px__grow px_h2io_grow

static void px__stream_free(px_h2c_t *h, px_h2cs_t *st)
{
    if (st->prev != NULL)
        st->prev->next = st->next;
    else
        h->streams = st->next;
    if (st->next != NULL)
        st->next->prev = st->prev;
    px_msg_free(st->m);
    free(st->trailers);
    free(st->held);
    px_h2io_q_free(&st->q);
    free(st);
}

/* The stream's held bytes are dropped: the windows get them back. */
static void px__drop_held(px_h2c_t *h, px_h2cs_t *st)
{
    if (st->held_len == 0)
        return;
    if (!st->ng_closed)
        nghttp2_session_consume(h->ses, st->id, st->held_len);
    else
        h->owed += st->held_len;
    st->held_len = 0;
}

/* The stream's owner hears its failure once (unless it let go). */
static void px__fail(px_h2c_t *h, px_h2cs_t *st, uint32_t code, const char *why)
{
    if (st->owner_gone || st->end_told)
        return;
    st->end_told = 1;
    st->q.drain = st->q.over_high = 0;
    px__drop_held(h, st);
    h->cbs->on_error(st->owner, code, why);
}

/* ---- reading a response ----------------------------------------------------------------- */

static long px__put(px_h2cs_t *st, const uint8_t *b, size_t len)
{
    px_msg_t *m = st->m;
    if (px__grow(&m->buf, &st->mcap, m->len, len) != 0)
        return -1;
    memcpy(m->buf + m->len, b, len);
    m->len += len;
    return (long)(m->len - len);
}

static int on_h2_begin_headers(nghttp2_session *ses, const nghttp2_frame *f, void *ud)
{
    px_h2cs_t *st = nghttp2_session_get_stream_user_data(ses, f->hd.stream_id);
    if (st == NULL || st->final || st->bad != NULL)
        return 0; /* trailers (after the final head) are read into st->trailers */
    px_msg_free(st->m);
    st->m = calloc(1, sizeof(*st->m));
    st->mcap = 0;
    st->hsize = 0;
    return st->m == NULL ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int px__trailer(px_h2cs_t *st, const uint8_t *n, size_t nl, const uint8_t *v, size_t vl)
{
    if (st->trailers == NULL && (st->trailers = calloc(1, sizeof(*st->trailers))) == NULL)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    px_fields_t *t = st->trailers;
    if (t->n >= PX_TRAILERS_MAX || sizeof(t->buf) - t->len < nl + vl) {
        st->bad = "response trailers over the caps";
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    t->names[t->n] = (px_span_t){(uint32_t)t->len, (uint32_t)nl};
    memcpy(t->buf + t->len, n, nl);
    t->len += nl;
    t->values[t->n] = (px_span_t){(uint32_t)t->len, (uint32_t)vl};
    memcpy(t->buf + t->len, v, vl);
    t->len += vl;
    t->n++;
    return 0;
}

static int on_h2_header(nghttp2_session *ses, const nghttp2_frame *f, const uint8_t *n, size_t nl,
                        const uint8_t *v, size_t vl, uint8_t flags, void *ud)
{
    px_h2cs_t *st = nghttp2_session_get_stream_user_data(ses, f->hd.stream_id);
    if (st == NULL || st->bad != NULL)
        return 0;
    if (st->final)
        return px__trailer(st, n, nl, v, vl);
    px_msg_t *m = st->m;
    st->hsize += nl + vl + 32;
    if (st->hsize > PX_H2C_HEADER_LIST_MAX || m->n >= PX_HEADERS_MAX) {
        st->bad = "response header fields over the caps";
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (nl == 7 && memcmp(n, ":status", 7) == 0) {
        /* nghttp2 checked it is three digits; checked again, cheaply */
        if (vl != 3 || v[0] < '1' || v[0] > '9' || v[1] < '0' || v[1] > '9' || v[2] < '0' ||
            v[2] > '9') {
            st->bad = "invalid :status from upstream";
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
        m->status = (v[0] - '0') * 100 + (v[1] - '0') * 10 + (v[2] - '0');
        return 0;
    }
    if (nl > 0 && n[0] == ':')
        return 0;
    long no = px__put(st, n, nl), vo = px__put(st, v, vl);
    if (no < 0 || vo < 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    m->names[m->n] = (px_span_t){(uint32_t)no, (uint32_t)nl};
    m->values[m->n] = (px_span_t){(uint32_t)vo, (uint32_t)vl};
    m->n++;
    return 0;
}

/* The end of the response: told now, or after the bytes held while paused. */
static void px__end(px_h2c_t *h, px_h2cs_t *st)
{
    st->resp_end = 1;
    if (st->paused || st->held_len > 0 || st->owner_gone || st->end_told)
        return;
    st->end_told = 1;
    h->cbs->on_end(st->owner, st->trailers != NULL && st->trailers->n > 0 ? st->trailers : NULL);
}

/* A complete response head: flags as the exchange reads them, then to the owner. */
static void px__head(px_h2c_t *h, px_h2cs_t *st, int end)
{
    px_msg_t *m = st->m;
    st->m = NULL;
    m->major = 2;
    m->minor = 0;
    m->flags = PX_MSG_KEEPALIVE;
    if (m->status < 200) {
        if (++st->interim > PX_H2C_MAX_INTERIM) {
            px_msg_free(m);
            st->bad = "too many interim responses";
            nghttp2_submit_rst_stream(h->ses, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_PROTOCOL_ERROR);
            return;
        }
        m->flags |= PX_MSG_NO_BODY;
    } else {
        st->final = 1;
        int cl = px_msg_find(m, "content-length");
        if (end || st->is_head || m->status == 204 || m->status == 304) {
            m->flags |= PX_MSG_NO_BODY;
            st->no_body = 1;
        } else if (cl >= 0) {
            /* nghttp2 checked it is digits (and will hold the body to it) */
            uint64_t len = 0;
            const char *p = px_msg_at(m, m->values[cl]);
            for (uint32_t i = 0; i < m->values[cl].len; i++)
                len = len * 10 + (uint64_t)(p[i] - '0');
            m->flags |= PX_MSG_LENGTH;
            m->length = len;
        } else {
            m->flags |= PX_MSG_CHUNKED;
        }
    }
    if (st->owner_gone) {
        px_msg_free(m);
        return;
    }
    h->cbs->on_head(st->owner, m);
}

static int on_h2_frame_recv(nghttp2_session *ses, const nghttp2_frame *f, void *ud)
{
    px_h2c_t *h = ud;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        h->goaway = 1;
        h->goaway_last = f->goaway.last_stream_id;
        if (h->reason == NULL) {
            snprintf(h->reason_buf, sizeof(h->reason_buf), "upstream sent GOAWAY (%s)",
                     nghttp2_http2_strerror(f->goaway.error_code));
            h->reason = h->reason_buf;
        }
        return 0;
    }
    px_h2cs_t *st = nghttp2_session_get_stream_user_data(ses, f->hd.stream_id);
    if (st == NULL || st->bad != NULL)
        return 0;
    int end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (f->hd.type == NGHTTP2_HEADERS && st->m != NULL && !st->final)
        px__head(h, st, end);
    if (end && (f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) && st->final)
        px__end(h, st);
    return 0;
}

static int on_h2_data(nghttp2_session *ses, uint8_t flags, int32_t sid, const uint8_t *data,
                      size_t len, void *ud)
{
    px_h2c_t *h = ud;
    px_h2cs_t *st = nghttp2_session_get_stream_user_data(ses, sid);
    if (st == NULL || st->owner_gone || st->bad != NULL || st->end_told) {
        nghttp2_session_consume(ses, sid, len); /* nobody takes these: the window reopens */
        return 0;
    }
    if (st->paused || st->held_len > 0) {
        /* at most the stream window: nghttp2 refuses more than it announced */
        if (px__grow(&st->held, &st->held_cap, st->held_len, len) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        memcpy(st->held + st->held_len, data, len);
        st->held_len += len;
        return 0;
    }
    h->cbs->on_data(st->owner, (const char *)data, len);
    nghttp2_session_consume(ses, sid, len);
    return 0;
}

static int on_h2_stream_close(nghttp2_session *ses, int32_t sid, uint32_t code, void *ud)
{
    px_h2c_t *h = ud;
    px_h2cs_t *st = nghttp2_session_get_stream_user_data(ses, sid);
    if (st == NULL)
        return 0;
    nghttp2_session_set_stream_user_data(ses, sid, NULL);
    st->ng_closed = 1;
    st->code = code;
    h->any_free = 1;
    px_h2io_q_free(&st->q); /* nothing more goes out on it */
    if (st->q.over_high) {  /* an owner waiting to send more hears the queue is empty */
        st->q.over_high = 0;
        st->q.drain = 1;
        h->any_drain = 1;
    }
    if (st->resp_end || st->owner_gone)
        return 0;
    const char *why = st->bad;
    if (why == NULL && h->goaway && code == NGHTTP2_REFUSED_STREAM && sid > h->goaway_last)
        why = "upstream sent GOAWAY before this request was processed";
    if (why == NULL) {
        snprintf(h->why, sizeof(h->why), "Upstream reset the stream (%s)",
                 nghttp2_http2_strerror(code));
        why = h->why;
    }
    px__fail(h, st, code, why);
    return 0;
}

/* ---- frames out ------------------------------------------------------------------------- */

static int on_h2_frame_send(nghttp2_session *ses, const nghttp2_frame *f, void *ud)
{
    px_h2c_t *h = ud;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        h->goaway = 1;
        h->goaway_last = INT32_MAX;
        if (f->goaway.error_code != NGHTTP2_NO_ERROR) {
            h->term = 1;
            if (h->reason == NULL) {
                snprintf(h->reason_buf, sizeof(h->reason_buf), "GOAWAY %s sent to upstream: %.*s",
                         nghttp2_http2_strerror(f->goaway.error_code),
                         (int)(f->goaway.opaque_data_len < 100 ? f->goaway.opaque_data_len : 100),
                         f->goaway.opaque_data != NULL ? (const char *)f->goaway.opaque_data : "");
                h->reason = h->reason_buf;
            }
        }
    }
    return 0;
}

/* A request head nghttp2 could not send (over its header block bound): the stream closes. */
static int on_h2_frame_not_send(nghttp2_session *ses, const nghttp2_frame *f, int err, void *ud)
{
    px_h2cs_t *st = nghttp2_session_get_stream_user_data(ses, f->hd.stream_id);
    if (f->hd.type == NGHTTP2_HEADERS && st != NULL && st->bad == NULL)
        st->bad = err == NGHTTP2_ERR_FRAME_SIZE_ERROR
                      ? "request head too large for an HTTP/2 header block"
                      : "request head could not be sent";
    return 0;
}

static ssize_t on_h2_read(nghttp2_session *ses, int32_t sid, uint8_t *buf, size_t len,
                          uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    (void)ud;
    px_h2cs_t *st = src->ptr;
    ssize_t n = px_h2io_q_read(&st->q, st->req_end, PX_H2C_QUEUE_LOW, ses, sid, buf, len, flags);
    if (st->q.drain)
        st->h->any_drain = 1;
    return n;
}

/* ---- the session ------------------------------------------------------------------------ */

static nghttp2_session_callbacks *px__callbacks(void)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return NULL;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_h2_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_h2_header);
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
    nghttp2_option_set_no_closed_streams(o, 1);
    nghttp2_option_set_max_deflate_dynamic_table_size(o, PX_H2C_HPACK_TABLE);
    nghttp2_option_set_max_outbound_ack(o, PX_H2C_MAX_OUTBOUND_ACK);
    nghttp2_option_set_max_settings(o, PX_H2C_MAX_SETTINGS);
    nghttp2_option_set_max_continuations(o, PX_H2C_MAX_CONTINUATIONS);
    nghttp2_option_set_peer_max_concurrent_streams(o, PX_H2C_MAX_STREAMS);
    return o;
}

px_h2c_t *px_h2c_new(const px_h2c_cbs_t *cbs)
{
    px_h2c_t *h = calloc(1, sizeof(*h));
    nghttp2_session_callbacks *cb = px__callbacks();
    nghttp2_option *o = px__options();
    nghttp2_mem mem;
    if (h != NULL)
        px_h2mem_init(&h->mem, &mem); /* nghttp2 copies mem; h->mem outlives the session */
    int rv = h == NULL || cb == NULL || o == NULL ||
             nghttp2_session_client_new3(&h->ses, cb, h, o, &mem);
    nghttp2_session_callbacks_del(cb);
    nghttp2_option_del(o);
    if (rv != 0) {
        free(h);
        return NULL;
    }
    h->cbs = cbs;
    const nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 0}, /* the server opens none */
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, PX_H2C_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, PX_H2C_HEADER_LIST_MAX},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, PX_H2C_HPACK_TABLE},
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    };
    if (nghttp2_submit_settings(h->ses, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) ||
        nghttp2_session_set_local_window_size(h->ses, NGHTTP2_FLAG_NONE, 0, PX_H2C_CONN_WINDOW)) {
        px_h2c_free(h);
        return NULL;
    }
    return h;
}

size_t px_h2c_trim(px_h2c_t *h)
{
    /* as px_h2_trim: with nothing to send, nghttp2's frame buffer holds no frame (px__pump has
     * copied out every frame it packed) */
    int dead = !h->failed && !h->term && nghttp2_session_want_read(h->ses) &&
               !nghttp2_session_want_write(h->ses);
    return px_h2mem_trim(&h->mem, dead);
}

size_t px_h2c_paged_resident(const px_h2c_t *h)
{
    return px_h2mem_resident(&h->mem);
}

void px_h2c_free(px_h2c_t *h)
{
    if (h == NULL)
        return;
    nghttp2_session_del(h->ses);
    while (h->streams != NULL)
        px__stream_free(h, h->streams);
    free(h->out.buf);
    free(h);
}

/* After nghttp2 returned: window owed, on_drain calls, streams both sides let go of. */
static void px__after(px_h2c_t *h)
{
    if (h->owed > 0 && !h->failed) {
        if (nghttp2_session_consume_connection(h->ses, h->owed) == NGHTTP2_ERR_NOMEM)
            h->failed = PX_ENOMEM;
        h->owed = 0;
    }
    if (h->any_drain) {
        h->any_drain = 0;
        for (px_h2cs_t *st = h->streams; st != NULL; st = st->next) {
            if (!st->q.drain)
                continue;
            st->q.drain = 0;
            if (h->cbs->on_drain != NULL && !st->owner_gone)
                h->cbs->on_drain(st->owner);
        }
    }
    if (h->any_free) {
        h->any_free = 0;
        px_h2cs_t *next;
        for (px_h2cs_t *st = h->streams; st != NULL; st = next) {
            next = st->next;
            if (st->owner_gone && st->ng_closed)
                px__stream_free(h, st);
        }
    }
}

static int px__pump(px_h2c_t *h)
{
    /* a failed session gathers nothing more, but what the owner took is forgotten still */
    int err = px_h2io_out_fill(&h->out, h->ses, h->failed ? 0 : PX_H2C_OUT_MAX);
    if (!h->failed)
        h->failed = err;
    px__after(h);
    px_h2io_out_trim(&h->out); /* an idle connection holds no output buffer */
    if (h->term && !h->failed) /* a GOAWAY with an error went: nothing more can come */
        h->failed = PX_EPARSE;
    if (h->failed && h->reason == NULL)
        h->reason = h->failed == PX_ENOMEM ? "out of memory" : "HTTP/2 session failed";
    return h->failed;
}

static void px__terminate(px_h2c_t *h, uint32_t code, const char *reason)
{
    if (h->reason == NULL)
        h->reason = reason;
    h->goaway = 1;
    nghttp2_session_terminate_session(h->ses, code);
}

int px_h2c_feed(px_h2c_t *h, const char *data, size_t len)
{
    if (h->failed)
        return h->failed;
    ssize_t rv = nghttp2_session_mem_recv(h->ses, (const uint8_t *)data, len);
    if (rv == NGHTTP2_ERR_NOMEM || rv == NGHTTP2_ERR_CALLBACK_FAILURE)
        h->failed = PX_ENOMEM;
    else if (rv == NGHTTP2_ERR_FLOODED)
        px__terminate(h, NGHTTP2_ENHANCE_YOUR_CALM, "flood from upstream: acks pile up unread");
    else if (rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS)
        px__terminate(h, NGHTTP2_ENHANCE_YOUR_CALM,
                      "flood from upstream: too many CONTINUATION frames");
    else if (rv < 0)
        px__terminate(h, NGHTTP2_PROTOCOL_ERROR, nghttp2_strerror((int)rv));
    if (rv < 0 && !h->failed)
        h->failed = PX_EPARSE;
    int err = px__pump(h);
    if (err == 0 && h->term) /* nghttp2 ended the session itself (a protocol error) */
        err = h->failed = PX_EPARSE;
    return err;
}

int px_h2c_take_output(px_h2c_t *h, const char **data, size_t *len)
{
    /* after a failure, what nghttp2 still has (the GOAWAY) is worth sending */
    int was = h->failed;
    if (was == PX_EPARSE)
        h->failed = 0;
    int err = px__pump(h);
    if (was != 0)
        h->failed = was;
    *data = h->out.buf;
    *len = h->out.len;
    h->out.handed = h->out.len;
    return (err != 0 || was != 0) && h->out.len == 0 ? (was ? was : err) : 0;
}

int px_h2c_want_write(const px_h2c_t *h)
{
    return h->out.len > h->out.handed || (!h->failed && nghttp2_session_want_write(h->ses));
}

int px_h2c_closing(const px_h2c_t *h)
{
    return h->failed || h->goaway || !nghttp2_session_check_request_allowed(h->ses);
}

int px_h2c_can_open(const px_h2c_t *h)
{
    if (px_h2c_closing(h))
        return 0;
    uint32_t max =
        nghttp2_session_get_remote_settings(h->ses, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
    if (max > PX_H2C_MAX_STREAMS)
        max = PX_H2C_MAX_STREAMS;
    return h->open < max;
}

size_t px_h2c_streams(const px_h2c_t *h)
{
    return h->open;
}

const char *px_h2c_reason(const px_h2c_t *h)
{
    return h->reason != NULL ? h->reason : "";
}

/* ---- requests --------------------------------------------------------------------------- */

/* Host becomes :authority; the rest as HTTP/2 allows. */
static int px__dropped(const char *n, size_t len, const char *v, size_t vlen)
{
    return px_h2io_field_dropped(n, len, v, vlen) || (len == 4 && strncasecmp(n, "host", 4) == 0);
}

/* An nv array for head q (pseudo-fields first) or trailers t, names lowercased, all bytes
 * copied into the block after the array. NULL when out of memory; *count set. */
static nghttp2_nv *px__nv(const px_h2c_req_t *q, const px_fields_t *t, size_t *count)
{
    size_t total = t != NULL ? t->n : q->n, bytes = 0;
    px_h2_field_t pseudo[4], host = {0};
    size_t np = 0;
    if (q != NULL) {
        for (size_t i = 0; i < q->n && q->authority_len == 0; i++)
            if (q->f[i].name_len == 4 && strncasecmp(q->f[i].name, "host", 4) == 0)
                host = (px_h2_field_t){":authority", 10, q->f[i].value, q->f[i].value_len};
        pseudo[np++] = (px_h2_field_t){":method", 7, q->method, q->method_len};
        pseudo[np++] = (px_h2_field_t){":scheme", 7, q->scheme, q->scheme_len};
        pseudo[np++] = q->authority_len > 0
                           ? (px_h2_field_t){":authority", 10, q->authority, q->authority_len}
                           : host;
        pseudo[np++] = (px_h2_field_t){":path", 5, q->path, q->path_len};
    }
    for (size_t i = 0; i < np; i++)
        bytes += pseudo[i].name_len + pseudo[i].value_len;
    for (size_t i = 0; i < total; i++)
        bytes +=
            t != NULL ? t->names[i].len + t->values[i].len : q->f[i].name_len + q->f[i].value_len;
    nghttp2_nv *nv = malloc((total + np) * sizeof(*nv) + bytes + 1);
    if (nv == NULL)
        return NULL;
    uint8_t *b = (uint8_t *)(nv + total + np);
    size_t k = 0;
    for (size_t i = 0; i < np + total; i++) {
        px_h2_field_t x = i < np ? pseudo[i]
                          : t == NULL
                              ? q->f[i - np]
                              : (px_h2_field_t){t->buf + t->names[i].off, t->names[i].len,
                                                t->buf + t->values[i].off, t->values[i].len};
        if (i < np ? x.value_len == 0 && i == 2
                   : px__dropped(x.name, x.name_len, x.value, x.value_len))
            continue;
        nv[k++] = (nghttp2_nv){b, b + x.name_len, x.name_len, x.value_len, NGHTTP2_NV_FLAG_NONE};
        for (size_t j = 0; j < x.name_len; j++)
            b[j] = (uint8_t)((x.name[j] >= 'A' && x.name[j] <= 'Z') ? x.name[j] + 32 : x.name[j]);
        memcpy(b + x.name_len, x.value, x.value_len);
        b += x.name_len + x.value_len;
    }
    *count = k;
    return nv;
}

int px_h2c_open(px_h2c_t *h, const px_h2c_req_t *q, int has_body, int is_head, void *sowner,
                px_h2cs_t **out)
{
    if (!px_h2c_can_open(h))
        return PX_ESTATE;
    px_h2cs_t *st = calloc(1, sizeof(*st));
    size_t count = 0;
    nghttp2_nv *nv = px__nv(q, NULL, &count);
    if (st == NULL || nv == NULL) {
        free(st);
        free(nv);
        return PX_ENOMEM;
    }
    st->h = h;
    st->owner = sowner;
    st->is_head = is_head != 0;
    st->req_body = has_body != 0;
    st->req_end = has_body == 0;
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = on_h2_read};
    int32_t id = nghttp2_submit_request(h->ses, NULL, nv, count, has_body ? &prd : NULL, st);
    free(nv);
    if (id < 0) {
        free(st);
        return id == NGHTTP2_ERR_NOMEM ? PX_ENOMEM : PX_ESTATE;
    }
    st->id = id;
    st->next = h->streams;
    if (st->next != NULL)
        st->next->prev = st;
    h->streams = st;
    h->open++;
    *out = st;
    return 0;
}

static int px__resume_data(px_h2c_t *h, px_h2cs_t *st)
{
    if (!st->q.deferred || st->ng_closed)
        return 0;
    st->q.deferred = 0;
    int rv = nghttp2_session_resume_data(h->ses, st->id);
    return rv == 0 ? 0 : rv == NGHTTP2_ERR_NOMEM ? PX_ENOMEM : PX_ESTATE;
}

int px_h2c_send_data(px_h2c_t *h, px_h2cs_t *st, const char *data, size_t len)
{
    if (!st->req_body || st->req_end || st->ng_closed || st->owner_gone)
        return PX_ESTATE;
    int rc = px_h2io_q_push(&st->q, data, len, PX_H2C_QUEUE_MAX, PX_H2C_QUEUE_HIGH);
    return rc != 0 ? rc : px__resume_data(h, st);
}

int px_h2c_end(px_h2c_t *h, px_h2cs_t *st, const px_fields_t *t)
{
    if (!st->req_body)
        return 0; /* the request ended with its head */
    if (st->req_end || st->ng_closed || st->owner_gone)
        return PX_ESTATE;
    if (t != NULL && t->n > 0) {
        st->q.tnv = px__nv(NULL, t, &st->q.tn);
        if (st->q.tnv == NULL)
            return PX_ENOMEM;
    }
    st->req_end = 1;
    return px__resume_data(h, st);
}

size_t px_h2c_queued(const px_h2cs_t *st)
{
    return px_h2io_q_queued(&st->q);
}

void px_h2c_pause(px_h2c_t *h, px_h2cs_t *st, int pause)
{
    st->paused = pause != 0;
}

void px_h2c_resume(px_h2c_t *h, px_h2cs_t *st)
{
    if (st->paused || st->owner_gone || st->end_told)
        return;
    if (st->held_len > 0) {
        char *buf = st->held;
        size_t n = st->held_len;
        st->held = NULL;
        st->held_len = st->held_cap = 0;
        h->cbs->on_data(st->owner, buf, n);
        free(buf);
        if (!st->ng_closed)
            nghttp2_session_consume(h->ses, st->id, n);
        else
            h->owed += n;
    }
    if (st->resp_end && !st->paused && st->held_len == 0 && !st->owner_gone && !st->end_told) {
        st->end_told = 1;
        h->cbs->on_end(st->owner,
                       st->trailers != NULL && st->trailers->n > 0 ? st->trailers : NULL);
    }
    px__after(h);
}

void px_h2c_close(px_h2c_t *h, px_h2cs_t *st, int cancel)
{
    if (st->owner_gone)
        return;
    st->owner_gone = 1;
    h->open--;
    h->any_free = 1;
    px__drop_held(h, st);
    if (st->ng_closed)
        return;
    if (cancel || !st->resp_end || !st->req_end)
        nghttp2_submit_rst_stream(h->ses, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
}

void px_h2c_fail_all(px_h2c_t *h, const char *why)
{
    h->goaway = 1;
    for (px_h2cs_t *st = h->streams; st != NULL; st = st->next)
        if (!st->resp_end || st->held_len > 0)
            px__fail(h, st, NGHTTP2_INTERNAL_ERROR, why);
        else if (!st->end_told && !st->owner_gone && !st->paused)
            px__end(h, st);
}

void px_h2c_shutdown(px_h2c_t *h)
{
    h->goaway = 1;
    nghttp2_submit_goaway(h->ses, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, NULL, 0);
}
