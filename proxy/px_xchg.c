#include "proxy/px_xchg_int.h"

#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_policy.h"
#include "proxy/px_answer.h"
#include "proxy/px_engine.h"
#include "base/px_err.h"
#include "proxy/px_h1.h"
#include "proxy/px_policy.h"
#include "proxy/px_sock.h"
#include "proxy/px_upstream.h"

static void px__open(px_xchg_t *x);
static void px__buffered_body(px_xchg_t *x);
static void px__decide_rest(px_xchg_t *x);

/* ---- the addons' log lines ------------------------------------------------------------------- */

static void on_addon_log(void *data, const char *line, size_t len)
{
    px_xchg_t *x = data;
    px_log_line(x->log, line, len);
}

/* ---- timers ---------------------------------------------------------------------------------- */

static void on_xchg_timer(uv_timer_t *t);

/* Arms the timer for the nearest deadline. */
static void px__arm(px_xchg_t *x)
{
    uint64_t by = 0;
    if (x->client_by != 0)
        by = x->client_by;
    if (x->upstream_by != 0 && (by == 0 || x->upstream_by < by))
        by = x->upstream_by;
    if (by == 0) {
        uv_timer_stop(&x->timer);
        return;
    }
    uint64_t now = uv_now(x->eng->loop.uv);
    uv_timer_start(&x->timer, on_xchg_timer, by > now ? by - now : 0, 0);
}

/* Who the exchange waits for now: the client (a request body still coming and not held back,
 * or a response it does not read), the upstream (an answer, more of it), or both. */
static void px__waits(px_xchg_t *x)
{
    uint64_t now = uv_now(x->eng->loop.uv);
    const px_config_t *cfg = x->eng->cfg;
    int client = (x->rq == PX__RQ_BODY && !x->body_paused && x->sink != PX__SINK_DISCARD) ||
                 (x->rs == PX__RS_BODY && x->up_paused);
    int upstream = x->up != NULL && x->up_ready && (x->rs == PX__RS_WAIT || x->rs == PX__RS_BODY) &&
                   !x->up_paused && (x->rq == PX__RQ_DONE || x->body_paused || x->rs == PX__RS_BODY);
    x->client_by = client ? now + cfg->client_idle_ms : 0;
    x->upstream_by = upstream ? now + cfg->upstream_first_byte_ms : 0;
    px__arm(x);
}

/* ---- the request ---------------------------------------------------------------------------- */

/* The view handed to the addons: strings point into the request head and the pre-check. */
static int px__view(px_xchg_t *x)
{
    px_msg_t *m = x->req;
    addon_req_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return PX_ENOMEM;
    x->view = r;
    r->log_cb = on_addon_log;
    r->log_data = x;
    r->method.base = x->method;
    r->method.len = strlen(x->method);
    r->target.base = m->buf + m->target.off;
    r->target.len = m->target.len;
    r->path.base = x->pre.path;
    r->path.len = x->pre.path_len;
    r->host.base = x->pre.host;
    r->host.len = x->pre.host_len;
    r->port = x->pre.port;
    r->tls = x->tls;
    for (size_t i = 0; i < m->n && r->nheaders < ADDON_MAX_HEADERS; i++) {
        addon_header_t *h = &r->headers[r->nheaders++];
        h->name.base = m->buf + m->names[i].off;
        h->name.len = m->names[i].len;
        h->value.base = m->values[i].len ? m->buf + m->values[i].off : "";
        h->value.len = m->values[i].len;
    }
    x->snap = px_snapshot_ref(x->snap_from);
    r->config = &x->snap->cfg;
    r->url = x->pre.url;
    return 0;
}

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

static void px__addons_end(px_xchg_t *x)
{
    if (x->view == NULL || x->snap == NULL)
        return;
    for (const addon_t *const *a = px_addons(); *a != NULL; a++)
        if ((*a)->on_request_end != NULL)
            (*a)->on_request_end(*a, x->view);
}

/* The addon's output toward upstream. */
static int px__sink_up(void *data, const char *buf, size_t len)
{
    px_xchg_t *x = data;
    if (x->up == NULL)
        return PX_ESTATE;
    px_up_data(x->up, buf, len);
    return 0;
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

static int px__sink_buffer(void *data, const char *buf, size_t len)
{
    px_xchg_t *x = data;
    if (px__grow(&x->outbody, &x->outcap, x->outlen + len) != 0)
        return PX_ENOMEM;
    memcpy(x->outbody + x->outlen, buf, len);
    x->outlen += len;
    return 0;
}

/* Runs the head hooks from a on. Once a body filter asked for the body, the credential stage
 * (the first later addon without a filter hook) waits in x->resume until the filters passed:
 * no real credential is put in a request a filter refuses. The GitHub App stage (px_ghapp.c)
 * may wait there too, for a token. 1 when the exchange answered, 2 when it waits. */
static int px__heads(px_xchg_t *x, const addon_t *const *a)
{
    addon_req_t *r = x->view;
    for (; *a != NULL; a++) {
        if (r->filter_cap > 0 && !x->filtered && (*a)->on_request_body_filter == NULL) {
            x->resume = a;
            return 0;
        }
        int gh = px__x_ghapp_stage(x, a);
        if (gh != 0) {
            x->resume = a;
            return gh;
        }
        if ((*a)->on_request_head == NULL)
            continue;
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        int rc = (*a)->on_request_head(*a, r, &ans);
        if (rc == ADDON_ANSWER) {
            px__x_addon_answer(x, &ans);
            return 1;
        }
        if (rc < 0) {
            px__x_log(x, "ERROR", -1, "internal error in an addon");
            px__x_answer_error(x, 502, "internal_error", "airlock failed to process this request",
                               1);
            return 1;
        }
    }
    return 0;
}

/* ADDON_BODY_BUFFER: the whole body is here; the addon makes the body and may still change the
 * head (or answer), then the request goes upstream. */
static void px__buffered_end(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    if (r->filter_cap > 0 && !x->filtered) {
        if (px__x_filters(x, 0, &ans) == ADDON_ANSWER) {
            px__x_addon_answer(x, &ans);
            return;
        }
        x->filtered = 1;
        if (x->resume != NULL && px__heads(x, x->resume))
            return; /* the credential stage, now */
    }
    px__buffered_body(x);
}

/* The filters passed and the credential stage ran: the credential addon makes the body. */
static void px__buffered_body(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    addon_answer_t ans;
    const addon_t *a = r->state_owner;
    memset(&ans, 0, sizeof(ans));
    x->outlen = 0;
    addon_sink_t sink = {px__sink_buffer, x};
    int rc = 0;
    if (a != NULL && a->on_request_body != NULL && x->bodylen > 0)
        rc = a->on_request_body(a, r, x->bodybuf, x->bodylen, &sink);
    else if (x->bodylen > 0)
        rc = px__sink_buffer(x, x->bodybuf, x->bodylen);
    if (rc >= 0 && a != NULL && a->on_request_body_end != NULL)
        rc = a->on_request_body_end(a, r, &sink, &ans);
    free(x->bodybuf);
    x->bodybuf = NULL;
    x->bodylen = x->bodycap = 0;
    if (rc == ADDON_ANSWER) {
        px__x_addon_answer(x, &ans);
        return;
    }
    if (rc < 0) {
        px__x_filter_failed(x, rc);
        return;
    }
    px__open(x);
}

/* Runs the addons on the head: policy, then one credential mechanism. */
static void px__decide(px_xchg_t *x)
{
    if (px__view(x) != 0) {
        px__x_finish(x, -1);
        return;
    }
    if (px__x_leak_head(x))
        return; /* before any addon: the policy, and the credentials that put real values in */
    if (px__heads(x, px_addons()))
        return;
    px__decide_rest(x);
}

/* The head hooks passed: the budgets, then the body is gathered or the request goes up. */
static void px__decide_rest(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    if (px__x_budget_head(x))
        return; /* over an egress budget: 429 (px_xchg_budget.c) */
    if (r->body_mode == ADDON_BODY_BUFFER || r->filter_cap > 0) {
        /* a body filter, or a credential addon whose head depends on the body: a streaming
         * credential addon then gets the gathered body in one piece */
        x->gather = 1;
        x->gather_cap = r->body_mode == ADDON_BODY_BUFFER ? r->body_cap : 0;
        if (r->filter_cap > x->gather_cap)
            x->gather_cap = r->filter_cap;
        if (x->rq == PX__RQ_DONE) {
            px__buffered_end(x);
            return;
        }
        /* the head depends on the body: gather it first */
        x->sink = PX__SINK_BUFFER;
        if (x->expect) {
            px_resp_t c = {.status = 100};
            x->ops->head(x->down, &c);
            x->sent_100 = 1;
        }
        px__waits(x);
        return;
    }
    x->filter = r->body_mode == ADDON_BODY_STREAM && x->rq == PX__RQ_BODY;
    px__open(x);
}

void px__x_continue(px_xchg_t *x)
{
    if (px__heads(x, x->resume))
        return;
    if (x->filtered)
        px__buffered_body(x);
    else
        px__decide_rest(x);
}

static void on_up_ready(void *owner);
static void on_up_head(void *owner, px_msg_t *m);
static void on_up_data(void *owner, const char *data, size_t len);
static void on_up_end(void *owner, const px_fields_t *t);
static void on_up_error(void *owner, const char *why);
static void on_up_drain(void *owner);

static const px_up_cbs_t px__up_cbs = {
    .on_ready = on_up_ready,
    .on_head = on_up_head,
    .on_data = on_up_data,
    .on_end = on_up_end,
    .on_error = on_up_error,
    .on_drain = on_up_drain,
};

/* Sends the request upstream: the head now, the body as it comes (or the buffered one). */
static void px__open(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    int buffered = x->sink == PX__SINK_BUFFER || x->gather;
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
        if (x->outlen > 0 || (x->req->flags & (PX_MSG_CHUNKED | PX_MSG_LENGTH))) {
            char len[24];
            int n = snprintf(len, sizeof(len), "%zu", x->outlen);
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
                       x->req->method == HTTP_HEAD, &px__up_cbs, x);
    if (x->up == NULL) {
        px__x_finish(x, -1);
        return;
    }
    x->rs = PX__RS_WAIT;
    x->sink = PX__SINK_UP;
    if (buffered) {
        if (x->outlen > 0)
            px_up_data(x->up, x->outbody, x->outlen);
        px_up_end(x->up, NULL);
        free(x->outbody);
        x->outbody = NULL;
        x->outlen = x->outcap = 0;
    } else if (x->rq == PX__RQ_DONE) {
        px_up_end(x->up, NULL);
    }
    px__waits(x);
}

px_xchg_t *px_xchg_start(px_engine_t *eng, const px_xchg_from_t *from, px_msg_t *m,
                         const px_pre_t *pre)
{
    px_xchg_t *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        px_msg_free(m);
        return NULL;
    }
    x->eng = eng;
    x->log = from->log;
    x->upmgr = from->up;
    x->budgets_at = from->budgets;
    x->snap_from = from->snap; /* a reference is taken when the addons start */
    x->ops = from->ops;
    x->down = from->down;
    x->req = m;
    x->pre = *pre;
    x->tls = from->pre.tls;
    uv_timer_init(eng->loop.uv, &x->timer);
    x->timer.data = x;
    snprintf(x->method, sizeof(x->method), "%s", llhttp_method_name((llhttp_method_t)m->method));
    int body = (m->flags & PX_MSG_CHUNKED) || ((m->flags & PX_MSG_LENGTH) && m->length > 0);
    x->rq = body ? PX__RQ_BODY : PX__RQ_DONE;
    x->reuse = (m->flags & PX_MSG_KEEPALIVE) && !eng->stopping;
    int ei = px_msg_find(m, "expect");
    x->expect = body && ei >= 0 && px_msg_span_ieq(m, m->values[ei], "100-continue");
    if (m->flags & PX_MSG_UPGRADE) {
        /* only WebSocket is relayed after a 101: any other protocol (h2c, ...) would carry
         * requests the policy never sees, so its Upgrade is dropped and the request goes on
         * as plain HTTP/1.1 */
        int ui = px_msg_find(m, "upgrade");
        x->upgrade = ui >= 0 && px_msg_span_ieq(m, m->values[ui], "websocket");
    }
    if (pre->verdict != PX_PRE_OK) {
        if (!px__x_leak_pre(x)) /* a value in it is refused as a leak first (not logged) */
            px__x_refuse(x);
        return x;
    }
    px__decide(x);
    return x;
}

/* ---- the request body -------------------------------------------------------------------------- */

void px_xchg_body(px_xchg_t *x, const char *data, size_t len)
{
    if (x->finished || len == 0)
        return;
    if (x->leak_on && x->sink != PX__SINK_DISCARD) {
        x->expect = 0;
        px__x_leak_body(x, data, len);
        return;
    }
    px__x_body_out(x, data, len);
}

void px__x_body_out(px_xchg_t *x, const char *data, size_t len)
{
    if (x->finished || len == 0)
        return;
    x->expect = 0;
    if (x->sink != PX__SINK_DISCARD && px__x_budget_sent(x, data, len))
        return; /* the sent-bytes budget stopped the upload (px_xchg_budget.c) */
    switch (x->sink) {
    case PX__SINK_DISCARD:
        x->discarded += len;
        if (x->discarded > PX_BODY_DISCARD_MAX)
            px__x_finish(x, 0);
        return;
    case PX__SINK_BUFFER:
        if (x->bodylen + len > x->gather_cap) {
            px__x_over_cap(x, len);
            return;
        }
        if (px__grow(&x->bodybuf, &x->bodycap, x->bodylen + len) != 0) {
            px__x_finish(x, -1);
            return;
        }
        memcpy(x->bodybuf + x->bodylen, data, len);
        x->bodylen += len;
        break;
    case PX__SINK_UP:
        if (x->up == NULL)
            return;
        if (x->filter) {
            const addon_t *a = x->view->state_owner;
            addon_sink_t sink = {px__sink_up, x};
            int rc = a != NULL && a->on_request_body != NULL
                         ? a->on_request_body(a, x->view, data, len, &sink)
                         : px__sink_up(x, data, len);
            if (rc < 0) {
                px__x_filter_failed(x, rc);
                return;
            }
        } else {
            px_up_data(x->up, data, len);
        }
        if (x->up != NULL && px_up_full(x->up) && !x->body_paused) {
            x->body_paused = 1;
            x->ops->pause_body(x->down, 1);
        }
        break;
    }
    px__waits(x);
}

void px_xchg_body_end(px_xchg_t *x, const px_fields_t *t)
{
    if (x->finished)
        return;
    if (px__x_leak_end(x, t))
        return; /* the trailers carried a value, or the held tail failed (px_xchg_leak.c) */
    x->rq = PX__RQ_DONE;
    x->expect = 0;
    switch (x->sink) {
    case PX__SINK_DISCARD:
        if (x->rs == PX__RS_DONE || x->rs == PX__RS_NONE)
            px__x_finish(x, x->reuse);
        return;
    case PX__SINK_BUFFER:
        px__buffered_end(x);
        return;
    case PX__SINK_UP:
        if (x->up == NULL)
            break;
        if (x->filter) {
            const addon_t *a = x->view->state_owner;
            addon_answer_t ans;
            memset(&ans, 0, sizeof(ans));
            addon_sink_t sink = {px__sink_up, x};
            int rc = a != NULL && a->on_request_body_end != NULL
                         ? a->on_request_body_end(a, x->view, &sink, &ans)
                         : 0;
            if (rc != 0) {
                px__x_filter_failed(x, rc < 0 ? rc : PX_ESIGNING);
                return;
            }
            px_up_end(x->up, NULL); /* a re-framed body drops the trailers */
        } else {
            px_up_end(x->up, t);
        }
        break;
    }
    if (x->rs == PX__RS_DONE) {
        px__x_finish(x, x->reuse);
        return;
    }
    px__waits(x);
}

void px_xchg_body_error(px_xchg_t *x, const char *reason)
{
    if (x->finished)
        return;
    char tail[200];
    snprintf(tail, sizeof(tail), "malformed request body: %s", reason);
    if (x->rs == PX__RS_WAIT || x->rs == PX__RS_NONE) {
        /* nothing was answered yet: drop the half-sent request upstream, tell the client */
        if (x->up != NULL) {
            px_up_abort(x->up);
            x->up = NULL;
        }
        px__x_log(x, "ERROR", -1, tail);
        px__x_answer_error(x, 400, "bad_request", tail, 1);
        return;
    }
    px__x_log(x, "ERROR", -1, tail);
    px__x_finish(x, -1);
}

/* ---- the response ------------------------------------------------------------------------------ */

static void on_up_ready(void *owner)
{
    px_xchg_t *x = owner;
    x->up_ready = 1; /* connect and TLS had their own timeouts; now the answer's starts */
    px__waits(x);
}

static void on_up_head(void *owner, px_msg_t *m)
{
    px_xchg_t *x = owner;
    int status = m->status;
    if (status >= 100 && status < 200 && status != 101) {
        if (++x->interim > PX_INTERIM_MAX) {
            px_msg_free(m);
            px__x_up_failed(x, "invalid response from upstream: too many interim (1xx) responses");
            return;
        }
        if (!(status == 100 && x->sent_100)) {
            px_resp_t r = {.status = status, .fields = m, .reason = m->buf + m->target.off,
                           .reason_len = m->target.len};
            x->ops->head(x->down, &r);
        }
        px_msg_free(m);
        px__waits(x);
        return;
    }
    if (status == 101) {
        if (!x->upgrade) {
            px_msg_free(m);
            px__x_up_failed(x, "invalid response from upstream: 101 without an upgrade");
            return;
        }
        px_resp_t r = {.status = 101, .fields = m, .reason = m->buf + m->target.off,
                       .reason_len = m->target.len, .upgrade = 1};
        x->ops->head(x->down, &r);
        px_msg_free(m);
        x->status = 101;
        px__x_log(x, "allowed", 101, NULL);
        px_tunnel_t *t = px_tunnel_new();
        if (t == NULL || px__x_ws_guard(x, t) != 0) {
            free(t);
            px__x_up_failed(x, "out of memory");
            return;
        }
        x->ops->tunnel(x->down, t);
        px_up_tunnel(x->up, t, 1);
        x->up = NULL;
        x->rs = PX__RS_DONE;
        x->rq = PX__RQ_DONE;
        px__x_finish(x, 0);
        return;
    }
    x->status = status;
    x->rs = PX__RS_BODY;
    for (const addon_t *const *a = px_addons(); *a != NULL; a++)
        if ((*a)->on_response_head != NULL)
            (*a)->on_response_head(*a, x->view, status);
    px_resp_t r = {.status = status, .fields = m, .reason = m->buf + m->target.off,
                   .reason_len = m->target.len};
    if (m->flags & PX_MSG_NO_BODY) {
        r.body = PX_RESP_NONE;
    } else if (m->flags & PX_MSG_CHUNKED) {
        r.body = PX_RESP_CHUNKED;
    } else if (m->flags & PX_MSG_LENGTH) {
        r.body = PX_RESP_LENGTH;
        r.length = m->length;
    } else {
        r.body = PX_RESP_UNTIL_CLOSE;
        x->reuse = 0;
    }
    if (x->rq != PX__RQ_DONE && !(m->flags & PX_MSG_KEEPALIVE)) {
        /* an early answer from an upstream that closes: it will not read the rest of the body,
         * so the client's connection ends after this answer instead of sending it for nothing */
        x->reuse = 0;
        x->body_unwanted = 1;
    }
    r.close = !x->reuse;
    x->ops->head(x->down, &r);
    px_msg_free(m);
    px__waits(x);
}

static void on_up_data(void *owner, const char *data, size_t len)
{
    px_xchg_t *x = owner;
    if (px__x_budget_received(x, data, len))
        return; /* the received-bytes budget cut the response (px_xchg_budget.c) */
    x->ops->data(x->down, data, len);
    if (!x->up_paused && x->ops->full(x->down)) {
        x->up_paused = 1;
        px_up_pause(x->up, 1);
    }
    px__waits(x);
}

static void on_up_end(void *owner, const px_fields_t *t)
{
    px_xchg_t *x = owner;
    x->ops->end(x->down, t);
    x->rs = PX__RS_DONE;
    px__x_log(x, "allowed", x->status, NULL);
    if (x->rq == PX__RQ_DONE || x->body_unwanted) {
        px__x_finish(x, x->reuse);
        return;
    }
    /* the upstream answered before the request body ended: the body goes on flowing to it */
    px__waits(x);
}

static void on_up_error(void *owner, const char *why)
{
    px_xchg_t *x = owner;
    x->up = NULL; /* the upstream client let go of the request already */
    px__x_up_failed(x, why);
}

static void on_up_drain(void *owner)
{
    px_xchg_t *x = owner;
    if (x->body_paused) {
        x->body_paused = 0;
        x->ops->pause_body(x->down, 0);
        px__waits(x);
    }
}

void px_xchg_drain(px_xchg_t *x)
{
    if (x->finished || !x->up_paused)
        return;
    x->up_paused = 0;
    if (x->up != NULL)
        px_up_pause(x->up, 0);
    px__waits(x);
}

/* ---- the end ------------------------------------------------------------------------------------ */

static void on_timer_closed(uv_handle_t *h)
{
    px_xchg_t *x = h->data;
    free(x);
}

/* Frees everything but the struct (the timer's close callback frees that). */
static void px__release(px_xchg_t *x)
{
    if (x->up != NULL) {
        if (x->rs == PX__RS_DONE && x->rq == PX__RQ_DONE)
            px_up_done(x->up);
        else
            px_up_abort(x->up);
        x->up = NULL;
    }
    px__x_ghapp_end(x);
    px__addons_end(x);
    px__x_budget_end(x);
    if (x->view != NULL) {
        addon_req_reset(x->view);
        free(x->view);
        x->view = NULL;
    }
    px_snapshot_unref(x->snap);
    x->snap = NULL;
    px_msg_free(x->req);
    x->req = NULL;
    free(x->bodybuf);
    free(x->outbody);
    free(x->held);
    x->held = NULL;
    x->bodybuf = x->outbody = NULL;
    uv_timer_stop(&x->timer);
    uv_close((uv_handle_t *)&x->timer, on_timer_closed);
}

static void on_xchg_finished(px_defer_t *d)
{
    px_xchg_t *x = px_container_of(d, px_xchg_t, fin);
    x->ops->finished(x->down, x->reuse);
    px__release(x);
}

void px__x_finish(px_xchg_t *x, int reuse)
{
    if (x->finished)
        return;
    x->finished = 1;
    x->reuse = reuse;
    if (x->rs == PX__RS_BODY || (x->rs == PX__RS_DONE && x->status != 0))
        px__x_log(x, "allowed", x->status, NULL);
    uv_timer_stop(&x->timer);
    if (x->up != NULL && !(x->rs == PX__RS_DONE && x->rq == PX__RQ_DONE)) {
        px_up_abort(x->up);
        x->up = NULL;
    }
    px_defer(&x->eng->loop, &x->fin, on_xchg_finished);
}

void px_xchg_abort(px_xchg_t *x, const char *reason)
{
    if (x->aborted)
        return;
    x->aborted = 1;
    if (!x->finished && reason != NULL)
        px__x_log(x, "ERROR", -1, reason);
    px_defer_cancel(&x->eng->loop, &x->fin);
    px__release(x);
}

static void on_xchg_timer(uv_timer_t *t)
{
    px_xchg_t *x = t->data;
    if (x->finished)
        return;
    uint64_t now = uv_now(x->eng->loop.uv);
    if (x->client_by != 0 && now >= x->client_by) {
        px__x_log(x, "ERROR", -1,
                x->rs == PX__RS_BODY && x->up_paused ? "Client stopped reading the response"
                                                     : "Client stalled during the request body");
        px__x_finish(x, -1);
        return;
    }
    if (x->upstream_by != 0 && now >= x->upstream_by) {
        px__x_up_failed(x, x->rs == PX__RS_BODY ? "Upstream stalled during the response"
                                              : "Upstream did not answer in time");
        return;
    }
    px__arm(x);
}

