/* The request-body filters of an exchange (addon on_request_body_filter: the GraphQL operation
 * allowlist, the Anthropic tool-domain trim): run on the whole gathered body, in list order,
 * before the credential addon sees the body and before anything goes upstream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "proxy/px_policy.h"
#include "proxy/px_xchg_int.h"

static int px__sink_scratch(void *data, const char *buf, size_t len)
{
    px_xchg_t *x = data;
    if (x->outlen + len < x->outlen)
        return PX_ETOOBIG;
    if (x->outlen + len > x->outcap) {
        size_t n = x->outcap ? x->outcap : 65536;
        while (n < x->outlen + len)
            n *= 2;
        char *p = realloc(x->outbody, n);
        if (p == NULL)
            return PX_ENOMEM;
        x->outbody = p;
        x->outcap = n;
    }
    memcpy(x->outbody + x->outlen, buf, len);
    x->outlen += len;
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

int px__x_filters(px_xchg_t *x, int over, addon_answer_t *ans)
{
    addon_req_t *r = x->view;
    for (const addon_t *const *a = px_addons(); *a != NULL; a++) {
        if ((*a)->on_request_body_filter == NULL)
            continue;
        memset(ans, 0, sizeof(*ans));
        x->outlen = 0;
        addon_sink_t sink = {px__sink_scratch, x};
        int rc =
            (*a)->on_request_body_filter(*a, r, over ? NULL : x->bodybuf, x->bodylen, &sink, ans);
        if (rc < 0) {
            px__filter_error(*a, r, rc, ans);
            return ADDON_ANSWER;
        }
        if (rc == ADDON_ANSWER)
            return ADDON_ANSWER;
        if (rc == ADDON_REWRITTEN && !over) {
            /* the rewritten body becomes the body; the old buffer is the next scratch */
            char *b = x->bodybuf;
            size_t cap = x->bodycap;
            x->bodybuf = x->outbody;
            x->bodycap = x->outcap;
            x->bodylen = x->outlen;
            x->outbody = b;
            x->outcap = cap;
        }
        x->outlen = 0;
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
    x->bodylen += len;
    if (x->view->filter_cap > 0 &&
        (px__x_filters(x, 1, &ans) == ADDON_ANSWER || px__x_ghapp_over_cap(x, &ans))) {
        free(x->bodybuf);
        x->bodybuf = NULL;
        x->bodylen = x->bodycap = 0;
        px__x_addon_answer(x, &ans);
        return;
    }
    px__x_filter_failed(x, PX_ETOOBIG);
}
