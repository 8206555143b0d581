#include "proxy/px_xchg_int.h"

#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_policy.h"
#include "audit/audit_note.h"
#include "proxy/px_answer.h"
#include "proxy/px_ctx.h"
#include "proxy/px_log.h"
#include "proxy/px_metrics.h"
#include "base/px_err.h"
#include "base/px_grow.h"
#include "http/px_h1.h"
#include "proxy/px_policy.h"
#include "net/px_sock.h"
#include "proxy/px_upstream.h"
#include "proxy/px_uppeer.h"

/* ---- the addons' log lines ------------------------------------------------------------------- */

static void on_addon_log(void *data, const addon_note_t *note)
{
    px_xchg_t *x = data;
    audit_event_t ev = audit_event_from_note(note);
    px_log_event(x->log, &ev);
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
    uint64_t now = uv_now(x->ctx->loop.uv);
    uv_timer_start(&x->timer, on_xchg_timer, by > now ? by - now : 0, 0);
}

/* Who the exchange waits for now: the client (a request body still coming and not held back,
 * or a response it does not read), the upstream (an answer, more of it), or both. */
void px__x_waits(px_xchg_t *x)
{
    uint64_t now = uv_now(x->ctx->loop.uv);
    const px_config_t *cfg = x->ctx->cfg;
    int client = (x->rq == PX__RQ_BODY && !x->body_paused && x->sink != PX__SINK_DISCARD) ||
                 (x->rs == PX__RS_BODY && x->up_paused);
    int upstream = x->up != NULL && x->up_ready && (x->rs == PX__RS_WAIT || x->rs == PX__RS_BODY) &&
                   !x->up_paused &&
                   (x->rq == PX__RQ_DONE || x->body_paused || x->rs == PX__RS_BODY);
    x->client_by = client ? now + cfg->client_idle_ms : 0;
    x->upstream_by = upstream ? now + cfg->upstream_first_byte_ms : 0;
    px__arm(x);
}

/* ---- the request ---------------------------------------------------------------------------- */

/* The view handed to the addons: strings point into the request head and the pre-check. */
int px__x_view(px_xchg_t *x)
{
    px_msg_t *m = x->req;
    addon_req_t *r = addon_req_new();
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
    r->host_norm.base = x->pre.norm_host; /* px_host_norm() of the host, as the view's is */
    r->host_norm.len = strlen(x->pre.norm_host);
    r->port = x->pre.port;
    r->tls = x->tls;
    for (size_t i = 0; i < m->n && r->nheaders < ADDON_MAX_HEADERS; i++) {
        addon_header_t *h = &r->headers[r->nheaders++];
        h->name.base = m->buf + m->names[i].off;
        h->name.len = m->names[i].len;
        h->value.base = m->values[i].len ? m->buf + m->values[i].off : "";
        h->value.len = m->values[i].len;
        h->removed = 0; /* the view is not cleared past nheaders (addon_req_new) */
    }
    x->snap = px_snapshot_ref(x->snap_from);
    r->config = &x->snap->cfg;
    r->url = x->pre.url;
    (void)addon_req_view(r); /* unmade (a path too long for the arena): derived again on use */
    return 0;
}

int px__x_grow(char **buf, size_t *cap, size_t need)
{
    return px_grow(buf, cap, need, 1, 65536, SIZE_MAX);
}

static void on_up_ready(void *owner);
static void on_up_head(void *owner, px_msg_t *m);
static void on_up_data(void *owner, const char *data, size_t len);
static void on_up_end(void *owner, const px_fields_t *t);
static void on_up_error(void *owner, const char *why);
static void on_up_drain(void *owner);

const px_up_cbs_t px__x_up_cbs = {
    .on_ready = on_up_ready,
    .on_head = on_up_head,
    .on_data = on_up_data,
    .on_end = on_up_end,
    .on_error = on_up_error,
    .on_drain = on_up_drain,
};

px_xchg_t *px_xchg_start(px_ctx_t *ctx, const px_xchg_from_t *from, px_msg_t *m,
                         const px_pre_t *pre)
{
    px_xchg_t *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        px_msg_free(m);
        return NULL;
    }
    x->ctx = ctx;
    x->t0 = uv_hrtime();
    x->log = from->log;
    x->upmgr = from->up;
    x->budgets_at = from->budgets;
    x->snap_from = from->snap; /* a reference is taken when the addons start */
    x->ops = from->ops;
    x->down = from->down;
    x->req = m;
    x->pre = *pre;
    x->tls = from->pre.tls;
    uv_timer_init(ctx->loop.uv, &x->timer);
    x->timer.data = x;
    snprintf(x->method, sizeof(x->method), "%s", llhttp_method_name((llhttp_method_t)m->method));
    int body = (m->flags & PX_MSG_CHUNKED) || ((m->flags & PX_MSG_LENGTH) && m->length > 0);
    x->rq = body ? PX__RQ_BODY : PX__RQ_DONE;
    x->reuse = (m->flags & PX_MSG_KEEPALIVE) && !ctx->stopping;
    int ei = px_msg_find(m, "expect");
    x->expect = body && ei >= 0 && px_msg_span_ieq(m, m->values[ei], "100-continue");
    if (m->flags & PX_MSG_UPGRADE) {
        /* only WebSocket is relayed after a 101: any other protocol (h2c, ...) would carry
         * requests the policy never sees, so its Upgrade is dropped and the request goes on
         * as plain HTTP/1.1 */
        int ui = px_msg_find(m, "upgrade");
        x->upgrade = ui >= 0 && px_msg_span_ieq(m, m->values[ui], "websocket");
    }
    x->stage_cur = -1;
    px_stage_run(x); /* the pipeline (px_stage.c), from the pre-check on */
    return x;
}

/* ---- the request body --------------------------------------------------------------------------
 */

void px_xchg_body(px_xchg_t *x, const char *data, size_t len)
{
    px_stage_body(x, data, len); /* the secret guard, the sent-bytes budget, then px__x_sink */
}

void px__x_sink(px_xchg_t *x, const char *data, size_t len)
{
    switch (x->sink) {
    case PX__SINK_DISCARD:
        x->discarded += len;
        if (x->discarded > PX_BODY_DISCARD_MAX)
            px__x_finish(x, 0);
        return;
    case PX__SINK_BUFFER:
        if (x->gath.len + len > x->gath.cap) {
            px__x_over_cap(x, len);
            return;
        }
        if (px__x_grow(&x->gath.body, &x->gath.bodycap, x->gath.len + len) != 0) {
            px__x_finish(x, -1);
            return;
        }
        memcpy(x->gath.body + x->gath.len, data, len);
        x->gath.len += len;
        break;
    case PX__SINK_UP:
        if (x->up == NULL)
            return;
        if (x->filter) {
            const addon_t *a = x->view->state_owner;
            addon_sink_t sink = {px__x_sink_up, x};
            int rc = a != NULL && a->on_request_body != NULL
                         ? a->on_request_body(a, x->view, data, len, &sink)
                         : px__x_sink_up(x, data, len);
            if (rc < 0) {
                px__x_filter_failed(x, rc);
                return;
            }
        } else {
            px__x_up_data(x, data, len);
        }
        if (x->up != NULL && px_up_full(x->up) && !x->body_paused) {
            x->body_paused = 1;
            x->ops->pause_body(x->down, 1);
        }
        break;
    }
    px__x_waits(x);
}

void px_xchg_body_end(px_xchg_t *x, const px_fields_t *t)
{
    if (x->finished)
        return;
    if (px_stage_body_end(x, t))
        return; /* the trailers carried a value, or the held tail failed (px_stage_leak.c) */
    x->rq = PX__RQ_DONE;
    x->expect = 0;
    switch (x->sink) {
    case PX__SINK_DISCARD:
        if (x->rs == PX__RS_DONE || x->rs == PX__RS_NONE)
            px__x_finish(x, x->reuse);
        return;
    case PX__SINK_BUFFER:
        px_stage_resume(x); /* the stage that gathers the body goes on (px_stage_filters.c) */
        return;
    case PX__SINK_UP:
        if (x->up == NULL)
            break;
        if (x->filter) {
            const addon_t *a = x->view->state_owner;
            addon_answer_t ans;
            memset(&ans, 0, sizeof(ans));
            addon_sink_t sink = {px__x_sink_up, x};
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
    px__x_waits(x);
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

/* ---- the response ------------------------------------------------------------------------------
 */

static void on_up_ready(void *owner)
{
    px_xchg_t *x = owner;
    x->up_ready = 1; /* connect and TLS had their own timeouts; now the answer's starts */
    px_up_peer(x->up, x->up_addr, sizeof(x->up_addr)); /* empty when it cannot be told */
    px__x_waits(x);
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
            px_resp_t r = {.status = status,
                           .fields = m,
                           .reason = m->buf + m->target.off,
                           .reason_len = m->target.len};
            x->ops->head(x->down, &r);
        }
        px_msg_free(m);
        px__x_waits(x);
        return;
    }
    if (status == 101) {
        if (!x->upgrade) {
            px_msg_free(m);
            px__x_up_failed(x, "invalid response from upstream: 101 without an upgrade");
            return;
        }
        px_resp_t r = {.status = 101,
                       .fields = m,
                       .reason = m->buf + m->target.off,
                       .reason_len = m->target.len,
                       .upgrade = 1};
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
    px_metrics_observe(&px_metrics()->first_byte_seconds, (double)(uv_hrtime() - x->t0) / 1e9);
    px_resp_t r = {.status = status,
                   .fields = m,
                   .reason = m->buf + m->target.off,
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
    /* the response stages may change the head, or hold it back (px_stage.h) */
    if (px_stage_response_head(x, &r) != PX_STAGE_WAIT)
        x->ops->head(x->down, &r);
    px_msg_free(m);
    px__x_waits(x);
}

void px__x_resp_head(px_xchg_t *x, const px_resp_t *r)
{
    if (!x->finished)
        x->ops->head(x->down, r);
}

void px__x_up_data(px_xchg_t *x, const char *data, size_t len)
{
    px_metrics()->bytes_up += len;
    x->sent_up += len;
    px_up_data(x->up, data, len);
}

/* Response bytes the stages passed go to the client; a full client side pauses the upstream. */
void px__x_resp_sink(px_xchg_t *x, const char *data, size_t len)
{
    px_metrics()->bytes_down += len;
    x->sent_down += len;
    x->ops->data(x->down, data, len);
    if (!x->up_paused && x->up != NULL && x->ops->full(x->down)) {
        x->up_paused = 1;
        px_up_pause(x->up, 1);
    }
}

static void on_up_data(void *owner, const char *data, size_t len)
{
    px_xchg_t *x = owner;
    if (!px_stage_response_data(x, data, len))
        px__x_resp_sink(x, data, len);
    /* else a response stage took it: it passed it on, or cut the response (the budget) */
    if (!x->finished)
        px__x_waits(x);
}

static void on_up_end(void *owner, const px_fields_t *t)
{
    px_xchg_t *x = owner;
    /* a stage that holds bytes hands them on first; one may give the trailers anew (scrub) */
    if (px_stage_response_end(x, &t) != 0) {
        if (!x->finished)
            px__x_finish(x, -1);
        return;
    }
    x->ops->end(x->down, t);
    x->rs = PX__RS_DONE;
    px__x_log(x, "allowed", x->status, NULL);
    if (x->rq == PX__RQ_DONE || x->body_unwanted) {
        px__x_finish(x, x->reuse);
        return;
    }
    /* the upstream answered before the request body ended: the body goes on flowing to it */
    px__x_waits(x);
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
        px__x_waits(x);
    }
}

void px_xchg_drain(px_xchg_t *x)
{
    if (x->finished || !x->up_paused)
        return;
    x->up_paused = 0;
    if (x->up != NULL)
        px_up_pause(x->up, 0);
    px__x_waits(x);
}

/* ---- the end ------------------------------------------------------------------------------------
 */

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
    px_stage_end(x); /* each stage lets go of its state */
    if (x->view != NULL) {
        addon_req_reset(x->view);
        free(x->view);
        x->view = NULL;
    }
    px_snapshot_unref(x->snap);
    x->snap = NULL;
    px_msg_free(x->req);
    x->req = NULL;
    free(x->gath.body);
    free(x->gath.out);
    x->gath.body = x->gath.out = NULL;
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
    px_metrics_observe(&px_metrics()->request_seconds, (double)(uv_hrtime() - x->t0) / 1e9);
    x->reuse = reuse;
    if (x->rs == PX__RS_BODY || (x->rs == PX__RS_DONE && x->status != 0))
        px__x_log(x, "allowed", x->status, NULL);
    uv_timer_stop(&x->timer);
    if (x->up != NULL && !(x->rs == PX__RS_DONE && x->rq == PX__RQ_DONE)) {
        px_up_abort(x->up);
        x->up = NULL;
    }
    px_defer(&x->ctx->loop, &x->fin, on_xchg_finished);
}

void px_xchg_abort(px_xchg_t *x, const char *reason)
{
    if (x->aborted)
        return;
    x->aborted = 1;
    if (!x->finished && reason != NULL)
        px__x_log(x, "ERROR", -1, reason);
    px_defer_cancel(&x->ctx->loop, &x->fin);
    px__release(x);
}

static void on_xchg_timer(uv_timer_t *t)
{
    px_xchg_t *x = t->data;
    if (x->finished)
        return;
    uint64_t now = uv_now(x->ctx->loop.uv);
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
