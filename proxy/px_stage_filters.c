/* The filters stage of an exchange (px_stage.h): when a body filter (addon
 * on_request_body_filter: the GraphQL operation allowlist, the Anthropic tool-domain trim, the
 * provider-fetch check) or a credential addon that signs the body (ADDON_BODY_BUFFER) asked for
 * it, the body is gathered whole; the filters run on it, in list order, before the credential
 * stages see it and before anything goes upstream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "proxy/px_policy.h"
#include "proxy/px_answer.h"
#include "proxy/px_xchg_int.h"

static int px__sink_scratch(void *data, const char *buf, size_t len)
{
    px_xchg_t *x = data;
    if (x->gath.outlen + len < x->gath.outlen)
        return PX_ETOOBIG;
    int rc = px__x_grow(&x->gath.out, &x->gath.outcap, x->gath.outlen + len);
    if (rc != 0)
        return rc;
    memcpy(x->gath.out + x->gath.outlen, buf, len);
    x->gath.outlen += len;
    return 0;
}

/* A filter that failed inside is a refusal, never a pass: the body was not inspected. */
static void px__filter_error(const addon_t *a, addon_req_t *r, int rc, addon_answer_t *ans)
{
    memset(ans, 0, sizeof(*ans));
    ans->status = 403;
    ans->error = "filter_error";
    ans->verdict = "BLOCKED";
    snprintf(ans->message, sizeof(ans->message),
             "airlock could not inspect this request body and refused it.");
    ans->with_detail = 1;
    snprintf(ans->detail, sizeof(ans->detail), "<%s: %s>", a->name, px_strerror(rc));
    addon_req_annotate(r, "%s: <error: %s>", a->name, px_strerror(rc));
}

/* Runs the body filters on the gathered body (over: it went past its cap, and only its length
 * is known). ADDON_NEXT (the body, possibly rewritten, is in gath.body) or ADDON_ANSWER with ans
 * filled. Uses gath.out as scratch. */
static int px__filters(px_xchg_t *x, int over, addon_answer_t *ans)
{
    addon_req_t *r = x->view;
    for (const addon_t *const *a = px_addons(); *a != NULL; a++) {
        if ((*a)->on_request_body_filter == NULL)
            continue;
        memset(ans, 0, sizeof(*ans));
        x->gath.outlen = 0;
        addon_sink_t sink = {px__sink_scratch, x};
        int rc = (*a)->on_request_body_filter(*a, r, over ? NULL : x->gath.body, x->gath.len, &sink,
                                              ans);
        if (rc < 0) {
            px__filter_error(*a, r, rc, ans);
            return ADDON_ANSWER;
        }
        if (rc == ADDON_ANSWER)
            return ADDON_ANSWER;
        if (rc == ADDON_REWRITTEN && !over) {
            /* the rewritten body becomes the body; the old buffer is the next scratch */
            char *b = x->gath.body;
            size_t cap = x->gath.bodycap;
            x->gath.body = x->gath.out;
            x->gath.bodycap = x->gath.outcap;
            x->gath.len = x->gath.outlen;
            x->gath.out = b;
            x->gath.outcap = cap;
        }
        x->gath.outlen = 0;
    }
    return ADDON_NEXT;
}

/* ---- failures on the body (px_xchg_int.h) ------------------------------------------------ */

/* An addon failed on the body: nothing half-signed ever goes on. */
void px__x_filter_failed(px_xchg_t *x, int err)
{
    if (err == PX_ETOOBIG && x->up == NULL) {
        px__x_log(x, "BLOCKED", 413, " (request body over the limit)");
        px__x_answer_error(x, 413, "request_body_too_large",
                           "The request body is larger than airlock can hold for signing.", 1);
        return;
    }
    if (x->up == NULL) {
        px__x_log(x, "ERROR", 403, " (signing failed: the request body could not be re-signed)");
        px__x_answer_error(x, 403, "signing_failed",
                           "airlock could not re-sign this request body; it was not sent.", 1);
        return;
    }
    px__x_log(x, "ERROR", -1, "request body could not be re-signed; aborted");
    px_up_abort(x->up);
    x->up = NULL;
    px__x_finish(x, -1);
}

/* The gathered body went over its cap: a body filter (or the GitHub App scope, which gathers
 * GraphQL bodies as a filter would) refuses it its own way, else 413. */
void px__x_over_cap(px_xchg_t *x, size_t len)
{
    addon_answer_t ans;
    x->gath.len += len;
    if (px_stage_body_over(x, &ans)) {
        free(x->gath.body);
        x->gath.body = NULL;
        x->gath.len = x->gath.bodycap = 0;
        px__x_addon_answer(x, &ans);
        return;
    }
    px__x_filter_failed(x, PX_ETOOBIG);
}

static int on_body_over(px_xchg_t *x, addon_answer_t *ans)
{
    return x->view->filter_cap > 0 && px__filters(x, 1, ans) == ADDON_ANSWER;
}

/* Starts gathering the body when a filter or the credential addon asked for it: WAIT until it
 * ended (px_xchg_body_end resumes), or it is here already. */
static int px__gather(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    x->gath.on = 1;
    x->gath.cap = r->body_mode == ADDON_BODY_BUFFER ? r->body_cap : 0;
    if (r->filter_cap > x->gath.cap)
        x->gath.cap = r->filter_cap;
    if (x->rq == PX__RQ_DONE)
        return PX_STAGE_CONTINUE;
    /* the head depends on the body: gather it first */
    x->sink = PX__SINK_BUFFER;
    if (x->expect) {
        px_resp_t c = {.status = 100};
        x->ops->head(x->down, &c);
        x->sent_100 = 1;
    }
    px__x_waits(x);
    return PX_STAGE_WAIT;
}

static int on_head(px_xchg_t *x)
{
    addon_req_t *r = x->view;
    if (!x->gath.on) {
        if (r->body_mode != ADDON_BODY_BUFFER && r->filter_cap == 0) {
            /* nothing to gather: a streaming credential addon rewrites the pieces as they go */
            x->filter = r->body_mode == ADDON_BODY_STREAM && x->rq == PX__RQ_BODY;
            return PX_STAGE_CONTINUE;
        }
        if (px__gather(x) == PX_STAGE_WAIT)
            return PX_STAGE_WAIT;
    }
    if (r->filter_cap > 0 && !x->gath.filtered) {
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        if (px__filters(x, 0, &ans) == ADDON_ANSWER) {
            px__x_addon_answer(x, &ans);
            return PX_STAGE_REFUSE;
        }
        x->gath.filtered = 1; /* the credential stages run now (PX_STAGE_AFTER_FILTERS) */
    }
    return PX_STAGE_CONTINUE;
}

const px_stage_t px_stage_filters = {
    .name = "filters", .on_head = on_head, .on_body_over = on_body_over};
