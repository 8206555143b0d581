/* The HTTP/2 codec's responses (px_h2.h): heads, bodies queued per stream and handed to
 * nghttp2 as its windows allow, trailers, resets, discards and the graceful end. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "http/px_h2_int.h"

ssize_t px__h2_read(nghttp2_session *ses, int32_t sid, uint8_t *buf, size_t len,
                    uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    (void)ud;
    px_h2s_t *st = src->ptr;
    ssize_t n = px_h2io_q_read(&st->q, st->resp_end, PX_H2_QUEUE_LOW, ses, sid, buf, len, flags);
    if (st->q.drain)
        st->h->any_drain = 1;
    return n;
}

/* ---- responses -------------------------------------------------------------------------- */

/* Fields that HTTP/2 forbids or that are ours to write; a response carries no TE at all. */
static int px__field_dropped(const char *n, size_t len)
{
    return px_h2io_field_dropped(n, len, "", 0);
}

/* An nv array for fields f[0..n) or t (first: :status when given), names lowercased, names and
 * values copied into the same block after the array. NULL when out of memory; *count set. */
static nghttp2_nv *px__nv(const char *status, const px_h2_field_t *f, size_t n,
                          const px_fields_t *t, size_t *count)
{
    size_t total = t != NULL ? t->n : n, bytes = 0;
    for (size_t i = 0; i < total; i++)
        bytes += t != NULL ? t->names[i].len + t->values[i].len : f[i].name_len + f[i].value_len;
    nghttp2_nv *nv = malloc((total + 1) * sizeof(*nv) + bytes + 1);
    if (nv == NULL)
        return NULL;
    uint8_t *b = (uint8_t *)(nv + total + 1);
    size_t k = 0;
    if (status != NULL)
        nv[k++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, 3, 0};
    for (size_t i = 0; i < total; i++) {
        px_h2_field_t x = t == NULL ? f[i]
                                    : (px_h2_field_t){t->buf + t->names[i].off, t->names[i].len,
                                                      t->buf + t->values[i].off, t->values[i].len};
        if (px__field_dropped(x.name, x.name_len))
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

#define px__err(rv) ((rv) == NGHTTP2_ERR_NOMEM ? PX_ENOMEM : PX_ESTATE)

int px_h2_respond(px_h2_t *h, int32_t sid, int status, const px_h2_field_t *f, size_t n,
                  int has_body)
{
    px_h2s_t *st = px__stream(h, sid);
    if (st == NULL || !st->reported || st->owner_reset || st->resp_started || status < 100 ||
        status > 999 || status == 101)
        return PX_ESTATE;
    char code[4];
    snprintf(code, sizeof(code), "%03d", status);
    size_t count;
    nghttp2_nv *nv = px__nv(code, f, n, NULL, &count);
    if (nv == NULL)
        return PX_ENOMEM;
    int rv;
    if (status < 200) {
        rv = nghttp2_submit_headers(h->ses, NGHTTP2_FLAG_NONE, sid, NULL, nv, count, NULL);
    } else {
        nghttp2_data_provider prd = {.source.ptr = st, .read_callback = px__h2_read};
        rv = nghttp2_submit_response(h->ses, sid, nv, count, has_body ? &prd : NULL);
        if (rv == 0) {
            st->resp_started = 1;
            st->resp_body = has_body != 0;
            st->owner_done = has_body == 0;
        }
    }
    free(nv); /* nghttp2 copied the fields */
    return rv == 0 ? 0 : px__err(rv);
}

static int px__resume(px_h2_t *h, px_h2s_t *st)
{
    if (!st->q.deferred)
        return 0;
    st->q.deferred = 0;
    int rv = nghttp2_session_resume_data(h->ses, st->id);
    return rv == 0 ? 0 : px__err(rv);
}

int px_h2_send_data(px_h2_t *h, int32_t sid, const char *data, size_t len)
{
    px_h2s_t *st = px__stream(h, sid);
    if (st == NULL || !st->resp_body || st->resp_end || st->owner_reset)
        return PX_ESTATE;
    int rc = px_h2io_q_push(&st->q, data, len, PX_H2_QUEUE_MAX, PX_H2_QUEUE_HIGH);
    return rc != 0 ? rc : px__resume(h, st);
}

int px_h2_end(px_h2_t *h, int32_t sid, const px_fields_t *t)
{
    px_h2s_t *st = px__stream(h, sid);
    if (st != NULL && st->resp_started && !st->resp_body && !st->owner_reset)
        return 0; /* the response had no body: it ended with its head */
    if (st == NULL || !st->resp_body || st->resp_end || st->owner_reset)
        return PX_ESTATE;
    if (t != NULL && t->n > 0) {
        st->q.tnv = px__nv(NULL, NULL, 0, t, &st->q.tn);
        if (st->q.tnv == NULL)
            return PX_ENOMEM;
    }
    st->resp_end = 1;
    st->owner_done = 1;
    return px__resume(h, st);
}

void px_h2_reset(px_h2_t *h, int32_t sid, uint32_t code)
{
    px_h2s_t *st = px__stream(h, sid);
    if (st == NULL || st->owner_reset)
        return;
    st->owner_reset = 1;
    st->owner_done = 1;
    px_h2io_q_free(&st->q);
    nghttp2_submit_rst_stream(h->ses, NGHTTP2_FLAG_NONE, sid, code);
}

void px_h2_discard(px_h2_t *h, int32_t sid)
{
    px_h2s_t *st = px__stream(h, sid);
    if (st == NULL || st->owner_reset || st->discard || h->failed)
        return;
    st->discard = 1;
    px__heads_release(h, st); /* the owner let go of the head and its copies */
    if (st->unconsumed > 0 && nghttp2_session_consume(h->ses, sid, st->unconsumed) != 0)
        h->failed = PX_ENOMEM;
    st->unconsumed = 0;
}

size_t px_h2_stream_queued(const px_h2_t *h, int32_t sid)
{
    px_h2s_t *st = px__stream(h, sid);
    return st != NULL ? px_h2io_q_queued(&st->q) : 0;
}

size_t px_h2_stream_sendable(const px_h2_t *h, int32_t sid)
{
    if (px__stream(h, sid) == NULL)
        return 0;
    int32_t st = nghttp2_session_get_stream_remote_window_size(h->ses, sid);
    int32_t conn = nghttp2_session_get_remote_window_size(h->ses);
    int32_t w = st < conn ? st : conn;
    return w > 0 ? (size_t)w : 0;
}

void px_h2_shutdown(px_h2_t *h)
{
    nghttp2_submit_goaway(h->ses, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(h->ses), NGHTTP2_NO_ERROR, NULL,
                          0);
}
