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
