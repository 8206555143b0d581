/* The budget stage of an exchange (px_stage.h; docs/budgets.md): once the allowlist allowed a
 * request, the conversation's budgets that match its host admit it or answer 429
 * egress_budget_exceeded; then its request body is counted as it goes upstream and its
 * response body as it comes back. A body that crosses a budget stops there: nothing past the
 * budget goes on (the piece that crosses is cut at the budget), the upstream request is aborted
 * and the client gets the 429, or, once a response head went out, its connection (HTTP/2: its
 * stream) is cut. The counters live in the engine's table (addons/addon_budget.c), outside the
 * snapshot, so that they survive SIGHUP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_budget.h"
#include "proxy/px_ctx.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_tunguard.h"
#include "proxy/px_xchg_int.h"

struct px__xbud {
    addon_budget_req_t *req; /* the sent/received budgets this request counts for */
    uint64_t sent;           /* this request's body bytes handed upstream */
    uint64_t received;       /* its response body bytes relayed */
};

/* Answers 429 egress_budget_exceeded for o. */
static void px__bud_answer(px_xchg_t *x, const addon_budget_over_t *o, uint64_t declared, int close)
{
    char json[2048];
    size_t n = px_tunguard_budget_json(o, declared, json, sizeof(json));
    px__x_answer(x, 429, json, n, close);
}

/* The request head was allowed: admits it under the egress budgets, or answers 429. */
static int on_head(px_xchg_t *x)
{
    size_t n;
    addon_policy_budgets(x->snap->cfg.policy, &n);
    if (n == 0)
        return PX_STAGE_CONTINUE;
    addon_budget_table_t *table = addon_budget_table_at(x->budgets_at);
    struct px__xbud *xb = calloc(1, sizeof(*xb));
    if (table == NULL || xb == NULL) {
        free(xb);
        px__x_finish(x, -1);
        return PX_STAGE_REFUSE;
    }
    x->budget = xb;
    const px_msg_t *m = x->req;
    uint64_t declared = x->rq != PX__RQ_BODY ? 0 : (m->flags & PX_MSG_LENGTH) ? m->length : 1;
    if (x->upgrade && declared == 0)
        declared = 1; /* a WebSocket sends as a body of unknown length would (px_tunguard.c) */
    addon_budget_over_t o;
    int rc = addon_budget_begin(table, x->snap->cfg.policy, x->view->host, declared,
                                uv_now(x->ctx->loop.uv), &xb->req, &o);
    if (rc < 0) {
        px__x_log(x, "ERROR", -1, "internal error in an addon");
        px__x_answer_error(x, 502, "internal_error", "airlock failed to process this request", 1);
        return PX_STAGE_REFUSE;
    }
    if (rc == 0) {
        if (xb->req == NULL) { /* no byte budget for this host: nothing to count after this */
            free(xb);
            x->budget = NULL;
        }
        return PX_STAGE_CONTINUE;
    }
    char desc[ADDON_BUDGET_DESC_MAX], tail[ADDON_BUDGET_DESC_MAX + 64];
    addon_budget_describe(&o, desc, sizeof(desc));
    if (o.b->kind == ADDON_BUDGET_SENT && declared > 1)
        snprintf(tail, sizeof(tail), " (budget: %s; body of %llu bytes)", desc,
                 (unsigned long long)declared);
    else
        snprintf(tail, sizeof(tail), " (budget: %s)", desc);
    px__x_log(x, "BLOCKED", 429, tail);
    /* as any refusal: the connection goes on unless the client waits for a 100 */
    px__bud_answer(x, &o, declared, x->expect && x->rq == PX__RQ_BODY);
    return PX_STAGE_REFUSE;
}

/* The request body crossed a sent-bytes budget: what fit went on; the rest never will. */
static void px__bud_stop_upload(px_xchg_t *x, const addon_budget_over_t *o)
{
    int aborted = x->up != NULL;
    if (aborted) {
        px_up_abort(x->up);
        x->up = NULL;
    }
    char desc[ADDON_BUDGET_DESC_MAX], tail[ADDON_BUDGET_DESC_MAX + 128];
    addon_budget_describe(o, desc, sizeof(desc));
    int answered = x->rs == PX__RS_BODY || x->rs == PX__RS_DONE;
    snprintf(tail, sizeof(tail), " (budget: %s; the upload was stopped after %llu bytes%s%s)", desc,
             (unsigned long long)x->budget->sent, aborted ? ", the upstream request aborted" : "",
             answered ? ", the connection cut" : "");
    px__x_log(x, "BLOCKED", answered ? x->status : 429, tail);
    if (answered) {
        px__x_finish(x, 0); /* the upstream's answer began: the client's connection just ends */
        return;
    }
    px__bud_answer(x, o, 0, 1); /* the rest of the body is not read: the connection closes */
}

/* A piece of request body going on: counted; when it crosses a sent-bytes budget what fits
 * goes on, the exchange is stopped (REFUSE). */
static int on_body(px_xchg_t *x, const char *data, size_t len)
{
    struct px__xbud *xb = x->budget;
    if (xb == NULL || x->sink == PX__SINK_DISCARD)
        return PX_STAGE_CONTINUE;
    uint64_t fit = 0;
    addon_budget_over_t o;
    if (!addon_budget_count(xb->req, ADDON_BUDGET_SENT, len, &fit, &o)) {
        xb->sent += len;
        return PX_STAGE_CONTINUE;
    }
    if (fit > 0) {
        px_stage_pass(x, &px_stage_budget, data, (size_t)fit);
        xb->sent += fit;
        if (x->finished)
            return PX_STAGE_REFUSE;
    }
    px__bud_stop_upload(x, &o);
    return PX_STAGE_REFUSE;
}

/* A piece of response body: when it crosses a received-bytes budget what fits is relayed and
 * the response cut (REFUSE). */
static int on_response_data(px_xchg_t *x, const char *data, size_t len)
{
    struct px__xbud *xb = x->budget;
    if (xb == NULL)
        return PX_STAGE_CONTINUE;
    uint64_t fit = 0;
    addon_budget_over_t o;
    if (!addon_budget_count(xb->req, ADDON_BUDGET_RECEIVED, len, &fit, &o)) {
        xb->received += len;
        return PX_STAGE_CONTINUE;
    }
    if (fit > 0)
        px_stage_resp_pass(x, &px_stage_budget, data, (size_t)fit);
    xb->received += fit;
    if (x->up != NULL) {
        px_up_abort(x->up);
        x->up = NULL;
    }
    char desc[ADDON_BUDGET_DESC_MAX], tail[ADDON_BUDGET_DESC_MAX + 128];
    addon_budget_describe(&o, desc, sizeof(desc));
    snprintf(tail, sizeof(tail), " (budget: %s; the response was cut after %llu bytes)", desc,
             (unsigned long long)xb->received);
    px__x_log(x, "BLOCKED", x->status, tail);
    px__x_finish(x, 0); /* HTTP/1: the connection closes short of the length; HTTP/2: reset */
    return PX_STAGE_REFUSE;
}

static void on_end(px_xchg_t *x)
{
    if (x->budget == NULL)
        return;
    addon_budget_end(x->budget->req);
    free(x->budget);
    x->budget = NULL;
}

struct addon_budget_req *px__x_budget_take(px_xchg_t *x)
{
    if (x->budget == NULL)
        return NULL;
    addon_budget_req_t *r = x->budget->req;
    x->budget->req = NULL;
    return r;
}

const px_stage_t px_stage_budget = {.name = "budget",
                                    .on_head = on_head,
                                    .on_body = on_body,
                                    .on_response_data = on_response_data,
                                    .on_end = on_end};
