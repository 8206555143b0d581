/* The answers an exchange makes itself (docs/answers.md): refusals of the pre-checks and the
 * addons, upstream failures, with their JSON bodies and log lines. */
#include <stdio.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "audit/audit_event.h"
#include "base/px_dec.h"
#include "proxy/px_answer.h"
#include "proxy/px_ctx.h"
#include "proxy/px_log.h"
#include "proxy/px_metrics.h"
#include "proxy/px_xchg_int.h"

/* "url_prefixes[N] FILE:LINE" in a JSON event; a longer path is cut */
#define PX__X_ENTRY_MAX 512

static audit_event_verdict_t px__x_verdict(const char *v)
{
    if (strcmp(v, "allowed") == 0)
        return AUDIT_EV_ALLOWED;
    if (strcmp(v, "ERROR") == 0)
        return AUDIT_EV_ERROR;
    if (strcmp(v, "WARN") == 0)
        return AUDIT_EV_WARN;
    return AUDIT_EV_BLOCKED;
}

/* The stage that decided, for the JSON event: the one the pipeline stopped at (it refused the
 * request, or failed it while it waited); past every stage, the refusals of a body or a
 * response say who made them, an allowed request was let through by the policy stage, and an
 * error came on the way to the upstream or back. NULL before the pipeline ran. */
static const char *px__x_stage_name(const px_xchg_t *x, const audit_event_t *ev)
{
    if (x->stage_cur < 0)
        return NULL;
    if (!(x->stage_done & (1u << x->stage_cur)))
        return px_stage_table[x->stage_cur]->name;
    if (ev->verdict == AUDIT_EV_ALLOWED || ev->verdict == AUDIT_EV_WARN)
        return "policy";
    if (ev->verdict == AUDIT_EV_ERROR)
        return "upstream";
    if (ev->tail.len >= 5 && memcmp(ev->tail.base, "leak:", 5) == 0)
        return "leak";
    if (ev->tail.len >= 7 && memcmp(ev->tail.base, "budget:", 7) == 0)
        return "budget";
    return NULL;
}

/* What the JSON event adds to the line (the text line stays as it was): the stage and the
 * allowlist entry that decided ("domains[0] FILE:LINE"), the body bytes, the duration, the
 * upstream's address. entry (cap bytes) holds the entry's text. */
static void px__x_relay(const px_xchg_t *x, audit_event_t *ev, char *entry, size_t cap)
{
    ev->stage = audit_s(px__x_stage_name(x, ev));
    const addon_req_t *v = x->view;
    /* only a JSON output reads the entry: formatting it was 1.5 % of a request's instructions */
    if (v != NULL && v->entry_kind != ADDON_POLICY_NONE && v->config != NULL &&
        px_log_wants_json(x->log)) {
        addon_policy_kind_t k = (addon_policy_kind_t)v->entry_kind;
        const char *src = addon_policy_entry_src(v->config->policy, k, v->entry_index);
        char head[PX_DEC_MAX + 2], *p = head + sizeof(head);
        *--p = ']';
        p = px_dec(p, v->entry_index);
        *--p = '[';
        static const char kinds[][16] = {"domains", "block", "url_prefixes"};
        const char *kn = kinds[k == ADDON_POLICY_DOMAINS ? 0 : k == ADDON_POLICY_BLOCKS ? 1 : 2];
        size_t kl = strlen(kn), hl = (size_t)(head + sizeof(head) - p), sl = strlen(src);
        /* "KIND[I] SRC", a longer path cut (cap is far above KIND[I]) */
        size_t n = kl + hl;
        memcpy(entry, kn, kl);
        memcpy(entry + kl, p, hl);
        if (sl > 0 && n + 1 < cap) {
            entry[n++] = ' ';
            if (sl > cap - 1 - n)
                sl = cap - 1 - n;
            memcpy(entry + n, src, sl);
            n += sl;
        }
        entry[n] = '\0';
        ev->entry = (audit_str_t){entry, n};
    }
    ev->xfer = 1;
    ev->bytes_up = x->sent_up;
    ev->bytes_down = x->sent_down;
    ev->duration_us = (uv_hrtime() - x->t0) / 1000;
    ev->upstream = audit_s(x->up_addr);
}

/* The exchange's one log line, an audit event (audit/audit_event.h): verdict, method, URL,
 * then the status with the addons' annotations and the tail (" (...)", whose inside is the
 * event's tail), or (status < 0) tail as the reason. */
void px__x_log(px_xchg_t *x, const char *verdict, int status, const char *tail)
{
    if (x->logged)
        return;
    x->logged = 1;
    const char *url = x->pre.url[0] != '\0' ? x->pre.url : "-";
    if (x->view != NULL && x->view->warn && strcmp(verdict, "allowed") == 0)
        verdict = "WARN"; /* warn mode let it go on: the allowlist would have blocked it */
    audit_event_t ev =
        audit_event_access(AUDIT_EV_REQUEST, px__x_verdict(verdict), x->method, url, status);
    if (status < 0) {
        ev.reason = audit_s(tail != NULL ? tail : "unknown error");
    } else {
        ev.annot = audit_s(x->view != NULL ? x->view->annot : "");
        size_t tl = tail != NULL ? strlen(tail) : 0;
        if (tl >= 3 && strncmp(tail, " (", 2) == 0 && tail[tl - 1] == ')')
            ev.tail = (audit_str_t){tail + 2, tl - 3};
        else if (tl >= 2 && strncmp(tail, " (", 2) == 0)
            ev.tail = (audit_str_t){tail + 2, tl - 2}; /* cut short by its buffer: closed here */
        else if (tl > 0)
            ev.tail = (audit_str_t){tail, tl};
    }
    char entry[PX__X_ENTRY_MAX];
    px__x_relay(x, &ev, entry, sizeof(entry));
    px_log_event(x->log, &ev);
}

/* ---- answers of our own --------------------------------------------------------------------- */

/* Sends an answer with a JSON body (then PX_ANSWER_EOL). close: the connection ends after it. */
void px__x_answer(px_xchg_t *x, int status, const char *json, size_t len, int close)
{
    px_resp_t r = {.status = status,
                   .ctype = "application/json",
                   .body = PX_RESP_LENGTH,
                   .length = len + strlen(PX_ANSWER_EOL),
                   .close = close};
    x->ops->head(x->down, &r);
    x->ops->data(x->down, json, len);
    x->ops->data(x->down, PX_ANSWER_EOL, strlen(PX_ANSWER_EOL));
    x->ops->end(x->down, NULL);
    x->rs = PX__RS_DONE;
    if (close) {
        x->reuse = 0;
        px__x_finish(x, 0);
        return;
    }
    /* what is left of the request body is read and dropped */
    x->sink = PX__SINK_DISCARD;
    if (x->rq == PX__RQ_DONE)
        px__x_finish(x, x->reuse);
}

void px__x_answer_error(px_xchg_t *x, int status, const char *error, const char *message, int close)
{
    char json[1024];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": ");
    px_sbuf_json_str(&b, error, strlen(error));
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, message, strlen(message));
    px_sbuf_adds(&b, "}");
    px__x_answer(x, status, json, b.len, close);
}

/* A refusal: the connection can go on unless the client waits for a 100 that will not come
 * (it may or may not send the body then). */
static int px__close_after_refusal(const px_xchg_t *x)
{
    return x->expect && x->rq == PX__RQ_BODY;
}

/* Ends an answer's JSON object, with "reason" last when there is one. */
static void px__reason(px_sbuf_t *b, const char *reason)
{
    if (reason != NULL) {
        px_sbuf_adds(b, ", \"reason\": ");
        px_sbuf_json_str(b, reason, strlen(reason));
    }
    px_sbuf_adds(b, "}");
}

void px__x_addon_answer(px_xchg_t *x, const addon_answer_t *ans)
{
    addon_req_t *r = x->view;
    char json[PX_ANSWER_MAX / 2];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": ");
    px_sbuf_json_str(&b, ans->error, strlen(ans->error));
    if (ans->with_request) {
        px_sbuf_adds(&b, ", \"host\": ");
        px_sbuf_json_str(&b, r->host.base, r->host.len);
        px_sbuf_adds(&b, ", \"path\": ");
        px_sbuf_json_str(&b, r->path.base, r->path.len);
        px_sbuf_adds(&b, ", \"method\": ");
        px_sbuf_json_str(&b, r->method.base, r->method.len);
    }
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, ans->message, strlen(ans->message));
    if (ans->with_detail) {
        px_sbuf_adds(&b, ", \"detail\": ");
        px_sbuf_json_str(&b, ans->detail, strnlen(ans->detail, sizeof(ans->detail)));
    }
    px__reason(&b, ans->reason);
    if (b.overflow) {
        px_sbuf_init(&b, json, sizeof(json));
        px_sbuf_adds(&b, "{\"error\": ");
        px_sbuf_json_str(&b, ans->error, strlen(ans->error));
        px_sbuf_adds(&b, ", \"message\": ");
        px_sbuf_json_str(&b, ans->message, strlen(ans->message));
        px__reason(&b, ans->reason);
    }
    px__x_log(x, ans->verdict != NULL ? ans->verdict : "BLOCKED", ans->status,
              ans->log_tail[0] ? ans->log_tail : NULL);
    px__x_answer(x, ans->status, json, b.len, px__close_after_refusal(x));
}

static const char px__connect_msg[] =
    "CONNECT tunneling is not allowed here. This sandbox reaches the network only through "
    "airlock's DNS answers: connect to the host name directly (plain HTTP or HTTPS).";
static const char px__mismatch_msg[] =
    "Host mismatch: the Host header and the request's destination disagree. This request has "
    "been blocked to prevent an allowlist bypass.";

/* The pre-checks refused the request. */
void px__x_refuse(px_xchg_t *x)
{
    const px_pre_t *p = &x->pre;
    char json[2048];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    if (p->verdict == PX_PRE_BAD) {
        char tail[200];
        snprintf(tail, sizeof(tail), " (%s: %s)",
                 p->status == 431 ? "request head too large" : "malformed request", p->reason);
        x->pre.url[0] = '\0';
        px__x_log(x, "BLOCKED", p->status, tail);
        px__x_answer_error(x, p->status,
                           p->status == 431 ? "request_header_fields_too_large" : "bad_request",
                           p->reason, 1);
        return;
    }
    if (p->verdict == PX_PRE_NO_TUNNEL) {
        const char *t = x->req->buf + x->req->target.off;
        size_t tlen = x->req->target.len;
        px__x_log(x, "BLOCKED", 403, " (tunneling not allowed)");
        px_sbuf_adds(&b, "{\"error\": \"blocked_by_network_allowlist\", \"host\": ");
        px_sbuf_json_str(&b, t, tlen < 300 ? tlen : 300);
        px_sbuf_adds(&b, ", \"method\": \"CONNECT\", \"message\": ");
        px_sbuf_json_str(&b, px__connect_msg, sizeof(px__connect_msg) - 1);
        px_sbuf_adds(&b, "}");
        /* after a CONNECT head the client may start its tunnel: never reuse the connection */
        px__x_answer(x, 403, json, b.len, 1);
        return;
    }
    /* PX_PRE_MISMATCH */
    char tail[600];
    snprintf(tail, sizeof(tail), " (host mismatch: header=%.*s, %s=%.*s)", (int)p->host_len,
             p->host, p->other_key, (int)p->other_len, p->other);
    px__x_log(x, "BLOCKED", 403, tail);
    const char *key = strcmp(p->other_key, "sni") == 0       ? "sni"
                      : strcmp(p->other_key, "connect") == 0 ? "connect_host"
                                                             : "url_host";
    px_sbuf_adds(&b, "{\"error\": \"blocked_by_network_allowlist\", \"host\": ");
    px_sbuf_json_str(&b, p->host, p->host_len);
    px_sbuf_printf(&b, ", \"%s\": ", key);
    px_sbuf_json_str(&b, p->other, p->other_len);
    px_sbuf_adds(&b, ", \"method\": ");
    px_sbuf_json_str(&b, x->method, strlen(x->method));
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, px__mismatch_msg, sizeof(px__mismatch_msg) - 1);
    px_sbuf_adds(&b, "}");
    px__x_answer(x, 403, json, b.len, px__close_after_refusal(x));
}

/* The upstream failed before a response head: 502 (the connection goes on when the request was
 * read whole); after the head: the response is cut and so is the connection. */
void px__x_up_failed(px_xchg_t *x, const char *why)
{
    px_metrics()->upstream_errors[px_metrics_up_error(why)]++;
    if (x->up != NULL) {
        px_up_abort(x->up);
        x->up = NULL;
    }
    if (x->rs == PX__RS_DONE) {
        /* the response went out whole and the request body is still coming: the upstream that
         * would have taken it is gone, and the rest cannot be told from a next request */
        px__x_finish(x, 0);
        return;
    }
    px__x_log(x, "ERROR", -1, why);
    if (x->rs == PX__RS_BODY) {
        px__x_finish(x, 0);
        return;
    }
    px__x_answer_error(x, 502, "upstream_error", why, x->rq != PX__RQ_DONE);
}
