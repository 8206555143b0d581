#include "http/px_h2io.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "base/px_grow.h"

int px_h2io_grow(char **buf, size_t *cap, size_t used, size_t len)
{
    if (len > SIZE_MAX - used)
        return -1;
    return px_grow(buf, cap, used + len, 1, 512, SIZE_MAX) == 0 ? 0 : -1;
}

int px_h2io_field_dropped(const char *n, size_t len, const char *v, size_t vlen)
{
    static const char *const drop[] = {"connection", "keep-alive", "proxy-connection",
                                       "transfer-encoding", "upgrade"};
    if (len == 0 || n[0] == ':')
        return 1;
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
        if (len == strlen(drop[i]) && strncasecmp(n, drop[i], len) == 0)
            return 1;
    return len == 2 && strncasecmp(n, "te", 2) == 0 &&
           !(vlen == 8 && strncasecmp(v, "trailers", 8) == 0);
}

int px_h2io_q_push(px_h2io_q_t *q, const char *data, size_t len, size_t max, size_t high)
{
    size_t queued = px_h2io_q_queued(q);
    if (len > max - queued)
        return PX_ETOOBIG;
    if (q->cap - q->len < len && q->off > 0) {
        memmove(q->q, q->q + q->off, queued);
        q->off = 0;
        q->len = queued;
    }
    if (px_h2io_grow(&q->q, &q->cap, q->len, len) != 0)
        return PX_ENOMEM;
    memcpy(q->q + q->len, data, len);
    q->len += len;
    if (q->len - q->off > high)
        q->over_high = 1;
    return 0;
}

ssize_t px_h2io_q_read(px_h2io_q_t *q, int ended, size_t low, nghttp2_session *ses, int32_t sid,
                       uint8_t *buf, size_t len, uint32_t *flags)
{
    size_t n = q->len - q->off < len ? q->len - q->off : len;
    if (n > 0)
        memcpy(buf, q->q + q->off, n);
    q->off += n;
    if (q->off == q->len)
        q->off = q->len = 0;
    if (q->over_high && q->len - q->off <= low) {
        q->over_high = 0;
        q->drain = 1;
    }
    if (q->len > q->off)
        return (ssize_t)n;
    if (!ended) {
        if (n > 0)
            return (ssize_t)n;
        q->deferred = 1;
        return NGHTTP2_ERR_DEFERRED;
    }
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (q->tn > 0) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (nghttp2_submit_trailer(ses, sid, q->tnv, q->tn) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

void px_h2io_q_free(px_h2io_q_t *q)
{
    free(q->q);
    free(q->tnv);
    q->q = NULL;
    q->tnv = NULL;
    q->off = q->len = q->cap = q->tn = 0;
}

int px_h2io_out_fill(px_h2io_out_t *o, nghttp2_session *ses, size_t max)
{
    if (o->handed > 0) /* the owner wrote what it took: all there was */
        o->len = o->handed = 0;
    while (o->len < max) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(ses, &p);
        if (n < 0)
            return n == NGHTTP2_ERR_NOMEM ? PX_ENOMEM : PX_EPARSE;
        if (n == 0)
            break;
        if (px_h2io_grow(&o->buf, &o->cap, o->len, (size_t)n) != 0)
            return PX_ENOMEM;
        memcpy(o->buf + o->len, p, (size_t)n);
        o->len += (size_t)n;
    }
    return 0;
}

void px_h2io_out_trim(px_h2io_out_t *o)
{
    if (o->len == 0 && o->buf != NULL) {
        free(o->buf);
        o->buf = NULL;
        o->cap = 0;
    }
}
