/* Request bodies an addon rewrites (ADDON_BODY_STREAM / ADDON_BODY_BUFFER), and the plain
 * body relay. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/px_answer.h"
#include "proxy/px_err.h"
#include "proxy/px_int.h"
#include "proxy/px_policy.h"
#include "proxy/px_upstream.h"

/* ---- body filters (an addon rewrites the request body) ---------------------------------- */

static const addon_t *px__body_owner(px_conn_t *c)
{
    return c->req != NULL ? c->req->state_owner : NULL;
}

static int px__grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 65536;
    while (n < need)
        n *= 2;
    char *p = realloc(*buf, n);
    if (p == NULL)
        return PX_ENOMEM;
    *buf = p;
    *cap = n;
    return 0;
}

/* The addon's output toward upstream, re-framed when the request was chunked. */
int px__sink_upstream(void *data, const char *buf, size_t len)
{
    px_conn_t *c = data;
    if (c->up == NULL)
        return PX_ESTATE;
    if (len == 0)
        return 0;
    if (c->rechunk) {
        char hdr[24];
        int n = snprintf(hdr, sizeof(hdr), "%zx\r\n", len);
        px_upstream_send(c->up, hdr, (size_t)n);
        px_upstream_send(c->up, buf, len);
        px_upstream_send(c->up, "\r\n", 2);
    } else {
        px_upstream_send(c->up, buf, len);
    }
    return 0;
}

static int px__sink_buffer(void *data, const char *buf, size_t len)
{
    px_conn_t *c = data;
    if (px__grow(&c->outbody, &c->outcap, c->outlen + len) != 0)
        return PX_ENOMEM;
    memcpy(c->outbody + c->outlen, buf, len);
    c->outlen += len;
    return 0;
}

/* llhttp hands over body bytes, framing removed. */
static int px__on_filtered_body(void *owner, const char *at, size_t len)
{
    px_conn_t *c = owner;
    addon_req_t *r = c->req;
    if (r->body_mode == ADDON_BODY_BUFFER) {
        if (c->bodylen + len > r->body_cap) {
            c->filter_err = PX_ETOOBIG;
            return -1;
        }
        if (px__grow(&c->bodybuf, &c->bodycap, c->bodylen + len) != 0) {
            c->filter_err = PX_ENOMEM;
            return -1;
        }
        memcpy(c->bodybuf + c->bodylen, at, len);
        c->bodylen += len;
        return 0;
    }
    const addon_t *a = px__body_owner(c);
    addon_sink_t sink = {px__sink_upstream, c};
    int rc = a != NULL && a->on_request_body != NULL ? a->on_request_body(a, r, at, len, &sink)
                                                      : px__sink_upstream(c, at, len);
    if (rc < 0) {
        c->filter_err = rc;
        return -1;
    }
    return 0;
}

static void px__filter_failed(px_conn_t *c, int err)
{
    if (err == PX_ETOOBIG && c->up == NULL) {
        px_conn_log_line(c, "BLOCKED", 413, " (request body over the limit)");
        px__answer_error(c, 413, "request_body_too_large",
                         "The request body is larger than airlock can hold for signing.");
        px__close_when_flushed(c);
        return;
    }
    if (!c->resp_started && c->up == NULL) {
        px_conn_log_line(c, "ERROR", 403, " (signing failed: the request body could not be re-signed)");
        px__answer_error(c, 403, "signing_failed", "airlock could not re-sign this request body; it was not sent.");
        px__close_when_flushed(c);
        return;
    }
    /* the head already went upstream: abort both sides, nothing half-signed goes on */
    px_conn_log_line(c, "ERROR", -1, "request body could not be re-signed; aborted");
    px_conn_close(c);
}


/* The filtered body ended. */
void px__filter_end(px_conn_t *c)
{
    addon_req_t *r = c->req;
    const addon_t *a = px__body_owner(c);
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    if (r->body_mode == ADDON_BODY_BUFFER) {
        addon_sink_t sink = {px__sink_buffer, c};
        int rc = 0;
        if (a != NULL && a->on_request_body != NULL && c->bodylen > 0)
            rc = a->on_request_body(a, r, c->bodybuf, c->bodylen, &sink);
        else if (c->bodylen > 0)
            rc = px__sink_buffer(c, c->bodybuf, c->bodylen);
        if (rc >= 0 && a != NULL && a->on_request_body_end != NULL)
            rc = a->on_request_body_end(a, r, &sink, &ans);
        free(c->bodybuf);
        c->bodybuf = NULL;
        c->bodylen = c->bodycap = 0;
        if (rc == ADDON_ANSWER) {
            px__addon_answer(c, &ans);
            return;
        }
        if (rc < 0) {
            px__filter_failed(c, rc);
            return;
        }
        px__start_upstream(c);
        return;
    }
    addon_sink_t sink = {px__sink_upstream, c};
    int rc = a != NULL && a->on_request_body_end != NULL ? a->on_request_body_end(a, r, &sink, &ans)
                                                          : 0;
    if (rc != 0) {
        px__filter_failed(c, rc < 0 ? rc : PX_ESIGNING);
        return;
    }
    if (c->rechunk && c->up != NULL)
        px_upstream_send(c->up, "0\r\n\r\n", 5);
}

/* Runs body bytes through the body-filter parser. Returns the bytes of this request. */
static size_t px__filter_feed(px_conn_t *c, const char *data, size_t len)
{
    c->rq.msg_done = 0;
    c->rq.owner = c;
    c->rq.on_body = px__on_filtered_body;
    c->req_parser.data = &c->rq;
    llhttp_errno_t err = llhttp_execute(&c->req_parser, data, len);
    size_t used = len;
    if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
        used = (size_t)(llhttp_get_error_pos(&c->req_parser) - data);
    } else if (err != HPE_OK) {
        px__filter_failed(c, c->filter_err ? c->filter_err : PX_EPARSE);
        return 0;
    }
    if (c->rq.msg_done) {
        c->req_done = 1;
        px__body_done(c);
        px__filter_end(c);
    }
    return used;
}

/* Starts reading the body through the filter parser, from the head buffer on. */
void px__filter_begin(px_conn_t *c)
{
    px_head_t *h = &c->rq;
    llhttp_init(&c->req_parser, HTTP_REQUEST, &c->eng->body_settings);
    c->req_done = 0;
    px__filter_feed(c, h->buf + h->msg_start, h->len - h->msg_start);
}

/* Body bytes of the current request: forward them (RELAY) or drop them (DISCARD). Returns
 * the number of bytes that belonged to this request. */
size_t px__body_feed(px_conn_t *c, char *data, size_t len, char *owned, int *took)
{
    *took = 0;
    if (c->filter && c->state == PX_ST_RELAY_BODY)
        return px__filter_feed(c, data, len);
    c->rq.msg_done = 0;
    c->req_parser.data = &c->rq;
    llhttp_errno_t err = llhttp_execute(&c->req_parser, data, len);
    size_t used = len;
    if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
        used = (size_t)(llhttp_get_error_pos(&c->req_parser) - data);
    } else if (err != HPE_OK) {
        const char *why = llhttp_get_error_reason(&c->req_parser);
        char tail[200];
        snprintf(tail, sizeof(tail), "malformed request body: %s", why != NULL ? why : "?");
        if (c->state == PX_ST_RELAY_BODY && !c->logged)
            px_conn_log_line(c, "ERROR", -1, tail);
        if (c->resp_started || c->state != PX_ST_RELAY_BODY) {
            px_conn_close(c);
            return 0;
        }
        /* nothing was answered yet: drop the half-sent request upstream, tell the client */
        px__up_drop(c);
        c->logged = 1;
        px__answer_error(c, 400, "bad_request", tail);
        px__close_when_flushed(c);
        return 0;
    }
    if (c->rq.msg_done) {
        c->req_done = 1;
        if (c->state == PX_ST_RELAY_BODY)
            px__body_done(c);
    }
    if (c->state == PX_ST_RELAY_BODY && c->up != NULL && used > 0) {
        if (owned != NULL && data == owned && used == len) {
            px_upstream_send_take(c->up, owned, used);
            *took = 1;
        } else {
            px_upstream_send(c->up, data, used);
        }
        if (px_upstream_queued(c->up) > PX_WQ_HIGH)
            px__pause_client(c);
    } else if (c->state == PX_ST_DISCARD_BODY) {
        c->discarded += used;
        if (c->discarded > PX_BODY_DISCARD_MAX) {
            px_conn_close(c);
            return 0;
        }
    }
    return used;
}


/* The request body has all been read: the client's idle timer stops, and the wait for
 * upstream's first byte begins. */
void px__body_done(px_conn_t *c)
{
    uv_timer_stop(&c->timer);
    if (c->up != NULL && !c->resp_started)
        px_upstream_first_byte_timer(c->up, c->eng->cfg->upstream_first_byte_ms);
}

/* Upstream takes the body slower than the client sends it: stop reading the client; the
 * upstream's stall timer watches the queue instead of the client's idle timer. */
void px__pause_client(px_conn_t *c)
{
    if (c->paused_by_upstream)
        return;
    c->paused_by_upstream = 1;
    px__client_read_stop(c);
    if (c->state != PX_ST_UPGRADED) {
        uv_timer_stop(&c->timer);
        if (c->up != NULL)
            px_upstream_first_byte_timer(c->up, c->eng->cfg->upstream_first_byte_ms);
    }
}
