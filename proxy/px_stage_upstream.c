/* The upstream stage of an exchange, the last of the pipeline (px_stage.h): the request every
 * earlier stage passed goes upstream: its head now (this hop's fields dropped, the body's new
 * length said when it was gathered), then the body as it comes, or the gathered one as the
 * credential addon made it. */
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "http/px_h1.h"
#include "proxy/px_xchg_int.h"

/* Fields that stay on this hop are marked removed before the head goes upstream: the fixed
 * hop-by-hop list and whatever the client's Connection names. Expect stays when the upstream
 * is to answer it; the Upgrade of a WebSocket request is put back by the upstream client. */
static void px__hop_by_hop(px_xchg_t *x, int keep_expect)
{
    px_msg_t *m = x->req;
    int ci = px_msg_find(m, "connection");
    const char *cv = ci >= 0 ? m->buf + m->values[ci].off : NULL;
    size_t cl = ci >= 0 ? m->values[ci].len : 0;
    addon_req_t *r = x->view;
    for (size_t i = 0; i < r->nheaders; i++) {
        addon_header_t *h = &r->headers[i];
        if (h->removed)
            continue;
        if (keep_expect && h->name.len == 6 && strncasecmp(h->name.base, "expect", 6) == 0)
            continue;
        if (h->name.len == 2 && strncasecmp(h->name.base, "te", 2) == 0 && h->value.len == 8 &&
            strncasecmp(h->value.base, "trailers", 8) == 0)
            continue; /* "TE: trailers": gRPC servers insist on it; HTTP/2 lets it through */
        if (px_h1_hop_by_hop(h->name.base, h->name.len, cv, cl))
            h->removed = 1;
    }
}

/* The addon's output toward upstream. */
int px__x_sink_up(void *data, const char *buf, size_t len)
{
    px_xchg_t *x = data;
    if (x->up == NULL)
        return PX_ESTATE;
    px__x_up_data(x, buf, len);
    return 0;
}

static int px__sink_buffer(void *data, const char *buf, size_t len)
{
    px_xchg_t *x = data;
    if (px__x_grow(&x->gath.out, &x->gath.outcap, x->gath.outlen + len) != 0)
        return PX_ENOMEM;
    memcpy(x->gath.out + x->gath.outlen, buf, len);
    x->gath.outlen += len;
    return 0;
}

/* The filters passed and the credential stages ran: the credential addon makes the body. */
static int px__buffered_body(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    addon_answer_t ans;
    const addon_t *a = r->state_owner;
    memset(&ans, 0, sizeof(ans));
    x->gath.outlen = 0;
    addon_sink_t sink = {px__sink_buffer, x};
    int rc = 0;
    if (a != NULL && a->on_request_body != NULL && x->gath.len > 0)
        rc = a->on_request_body(a, r, x->gath.body, x->gath.len, &sink);
    else if (x->gath.len > 0)
        rc = px__sink_buffer(x, x->gath.body, x->gath.len);
    if (rc >= 0 && a != NULL && a->on_request_body_end != NULL)
        rc = a->on_request_body_end(a, r, &sink, &ans);
    free(x->gath.body);
    x->gath.body = NULL;
    x->gath.len = x->gath.bodycap = 0;
    if (rc == ADDON_ANSWER) {
        px__x_addon_answer(x, &ans);
        return PX_STAGE_REFUSE;
    }
    if (rc < 0) {
        px__x_filter_failed(x, rc);
        return PX_STAGE_REFUSE;
    }
    return PX_STAGE_CONTINUE;
}

/* Sends the request upstream: the head now, the body as it comes (or the buffered one). */
static void px__open(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    int buffered = x->sink == PX__SINK_BUFFER || x->gath.on;
    px__hop_by_hop(x, x->expect && !buffered);
    px__x_ws_prepare(x);
    px_up_body_t body = PX_UP_BODY_NONE;
    if (buffered) {
        /* the body was rewritten before the head: say its new length */
        for (size_t i = 0; i < r->nheaders; i++) {
            addon_header_t *h = &r->headers[i];
            if ((h->name.len == 14 && strncasecmp(h->name.base, "content-length", 14) == 0) ||
                (h->name.len == 17 && strncasecmp(h->name.base, "transfer-encoding", 17) == 0))
                h->removed = 1;
        }
        if (x->gath.outlen > 0 || (x->req->flags & (PX_MSG_CHUNKED | PX_MSG_LENGTH))) {
            char len[24];
            int n = snprintf(len, sizeof(len), "%zu", x->gath.outlen);
            if (addon_req_add_header(r, "Content-Length", 14, len, (size_t)n) != 0) {
                px__x_finish(x, -1);
                return;
            }
            body = PX_UP_BODY_LENGTH;
        }
    } else if (x->req->flags & PX_MSG_CHUNKED) {
        body = PX_UP_BODY_CHUNKED;
        /* an HTTP/2 body of unknown length: HTTP/1.1 says so with chunked framing (an h2
         * upstream drops the field again) */
        if (x->req->major == 2 &&
            addon_req_add_header(r, "Transfer-Encoding", 17, "chunked", 7) != 0) {
            px__x_finish(x, -1);
            return;
        }
    } else if ((x->req->flags & PX_MSG_LENGTH) && x->req->length > 0) {
        body = PX_UP_BODY_LENGTH;
    }
    x->up = px_up_open(x->upmgr, x->pre.norm_host, x->pre.port, x->tls, r, body,
                       x->req->method == HTTP_HEAD, &px__x_up_cbs, x);
    if (x->up == NULL) {
        px__x_finish(x, -1);
        return;
    }
    x->rs = PX__RS_WAIT;
    x->sink = PX__SINK_UP;
    if (buffered) {
        if (x->gath.outlen > 0)
            px__x_up_data(x, x->gath.out, x->gath.outlen);
        px_up_end(x->up, NULL);
        free(x->gath.out);
        x->gath.out = NULL;
        x->gath.outlen = x->gath.outcap = 0;
    } else if (x->rq == PX__RQ_DONE) {
        px_up_end(x->up, NULL);
    }
    px__x_waits(x);
}

static int on_head(px_xchg_t *x)
{
    if (x->gath.on && px__buffered_body(x) != PX_STAGE_CONTINUE)
        return PX_STAGE_REFUSE;
    px__open(x);
    return x->finished ? PX_STAGE_REFUSE : PX_STAGE_CONTINUE;
}

const px_stage_t px_stage_upstream = {.name = "upstream", .on_head = on_head};
