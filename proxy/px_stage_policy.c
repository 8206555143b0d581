/* The policy stage (px_stage.h): the policy addons' head hooks in order (px_policy_addons():
 * the allowlist, the GraphQL operations, the Anthropic tool-domain trim, the provider-fetch
 * check). A body filter among them asks here for the whole body (filter_cap); the filters stage
 * gathers it and runs their body hooks.
 *
 * Holding (docs/approvals.md): when the allowlist blocks a request and says `on_block: hold`,
 * the request waits here (PX_STAGE_WAIT, its body paused) in the context's hold table
 * (px_hold.h) until a decider answers or time runs out. Approved, it goes on from the addon
 * after the allowlist as if allowed; otherwise it gets the allowlist's 403 with a "reason". The
 * pre-checks and the secret guard run in stages before this one: they are never held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_allowlist.h"
#include "proxy/px_ctx.h"
#include "proxy/px_hold.h"
#include "proxy/px_policy.h"
#include "proxy/px_xchg_int.h"

/* One held request: its waiter in the table (first: the table hands it back) and what the
 * allowlist would have answered. */
typedef struct px__held {
    px_hold_wait_t w;
    px_xchg_t *x;
    px_defer_t resume;
    int paused; /* the request body was paused for the hold */
    addon_answer_t ans;
} px__held_t;

static void on_held_resume(px_defer_t *d)
{
    px__held_t *h = px_container_of(d, px__held_t, resume);
    px_xchg_t *x = h->x;
    if (x->finished)
        return;
    px_stage_resume(x); /* the policy stage runs again and reads the outcome */
}

/* The table decided (from inside px_hold_decide/expire): the exchange goes on from the loop. */
static void on_held_decided(px_hold_wait_t *w)
{
    px__held_t *h = (px__held_t *)w;
    px_defer(&h->x->ctx->loop, &h->resume, on_held_resume);
}

/* The view's method, host and path as NUL-ended strings; 0, or -1 when one is over its cap
 * (such a request is not held: a cut path could stand for another one). */
static int px__held_key(const addon_req_t *r, char *method, char *host, char *path)
{
    addon_str_t hs = r->host_norm.len > 0 ? r->host_norm : r->host;
    if (r->method.len >= 24 || hs.len > PX_HOST_MAX || r->path.len >= PX_HOLD_FIELD_MAX)
        return -1;
    memcpy(method, r->method.base, r->method.len);
    method[r->method.len] = '\0';
    memcpy(host, hs.base, hs.len);
    host[hs.len] = '\0';
    memcpy(path, r->path.base, r->path.len);
    path[r->path.len] = '\0';
    return 0;
}

/* The allowlist blocked x and may hold it: PX_STAGE_CONTINUE (a conversation approval allows
 * it), PX_STAGE_WAIT (held), or PX_STAGE_REFUSE (answered with ans: not held). */
static int px__hold(px_xchg_t *x, const addon_answer_t *ans)
{
    addon_req_t *r = x->view;
    px_hold_t *t = x->ctx->holds;
    /* without a decider nobody could answer: the request is refused now, not at its time-out */
    int decider = px_config_has_decider(x->ctx->cfg);
    char method[24], host[PX_HOST_MAX + 1], path[PX_HOLD_FIELD_MAX];
    if (t != NULL && decider && px__held_key(r, method, host, path) == 0) {
        if (px_hold_allowed(t, x->log, method, host, path)) {
            r->allowed = 1; /* as warn mode does: no entry allowed it, no GraphQL list applies */
            r->graphql = NULL;
            addon_req_annotate(r, "approved for this conversation");
            return PX_STAGE_CONTINUE;
        }
        px__held_t *h = calloc(1, sizeof(*h));
        if (h != NULL) {
            h->x = x;
            h->ans = *ans;
            h->w.owner = x;
            h->w.cb = on_held_decided;
            h->w.bytes = x->req->len + PX_HOLD_COST;
            int rc = px_hold_add(t, x->log, NULL, method, host, path,
                                 (uint64_t)r->hold_seconds * 1000, px_hold_now(t), &h->w);
            if (rc == 0) {
                if (x->rq == PX__RQ_BODY && !x->body_paused) { /* backpressure while held */
                    h->paused = 1;
                    x->body_paused = 1;
                    x->ops->pause_body(x->down, 1);
                }
                return PX_STAGE_WAIT;
            }
            free(h);
            if (rc > 0) {
                char b[64];
                addon_req_annotate(r, "not held: bound %s", px_hold_bound_text(rc, b, sizeof(b)));
            }
        }
    }
    /* (a decider means one loop: the hold table is the engine loop's, and worker loops have
     * none) */
    if (!decider)
        addon_req_annotate(r, "not held: nobody can decide (no --control or --decide-url)");
    px__x_addon_answer(x, ans);
    return PX_STAGE_REFUSE;
}

/* The allowlist's 403 with "reason" (not approved, timed out). */
static void px__held_refuse(px_xchg_t *x, const px__held_t *h, const char *reason)
{
    addon_answer_t ans = h->ans;
    ans.reason = reason;
    px__x_addon_answer(x, &ans);
}

/* A held request was decided: 1 when it goes on as allowed, 0 when it was answered. */
static int px__held_done(px_xchg_t *x, px__held_t *h)
{
    addon_req_t *r = x->view;
    px_hold_cancel(x->ctx->holds, &h->w);
    if (h->paused) {
        x->body_paused = 0;
        x->ops->pause_body(x->down, 0);
    }
    int ok = h->w.outcome == PX_HOLD_APPROVED;
    if (ok) {
        r->allowed = 1;
        r->graphql = NULL;
        addon_req_annotate(r, "held: h%llu approved by %s%s", (unsigned long long)h->w.id, h->w.by,
                           h->w.rule_made == PX_HOLD_SCOPE_PERSIST        ? ", persisted"
                           : h->w.rule_made == PX_HOLD_SCOPE_CONVERSATION ? " for this conversation"
                                                                          : "");
    } else if (h->w.outcome == PX_HOLD_TIMEOUT) {
        addon_req_annotate(r, "held: h%llu timed out", (unsigned long long)h->w.id);
        px__held_refuse(x, h, "timed out");
    } else {
        addon_req_annotate(r, "held: h%llu denied by %s", (unsigned long long)h->w.id, h->w.by);
        px__held_refuse(x, h, "not approved");
    }
    free(h);
    return ok;
}

/* What an addon's head hook said (rc, with ans when it answers) as a stage's answer. */
static int px__addon_rc(px_xchg_t *x, int rc, const addon_answer_t *ans)
{
    if (rc == ADDON_ANSWER) {
        px__x_addon_answer(x, ans);
        return PX_STAGE_REFUSE;
    }
    if (rc < 0) {
        px__x_log(x, "ERROR", -1, "internal error in an addon");
        px__x_answer_error(x, 502, "internal_error", "airlock failed to process this request", 1);
        return PX_STAGE_REFUSE;
    }
    return PX_STAGE_CONTINUE;
}

int px__x_addon_head(px_xchg_t *x, const addon_t *a)
{
    if (a->on_request_head == NULL)
        return PX_STAGE_CONTINUE;
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    return px__addon_rc(x, a->on_request_head(a, x->view, &ans), &ans);
}

void px__x_addon_end(px_xchg_t *x, const addon_t *a)
{
    if (x->view != NULL && x->snap != NULL && a->on_request_end != NULL)
        a->on_request_end(a, x->view);
}

void px__x_addon_response_head(px_xchg_t *x, const addon_t *a, int status)
{
    if (a->on_response_head != NULL)
        a->on_response_head(a, x->view, status);
}

/* The allowlist's head hook, which may hold the request (px__hold). */
static int px__allowlist_head(px_xchg_t *x, const addon_t *a)
{
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    x->view->hold_seconds = 0;
    int rc = a->on_request_head(a, x->view, &ans);
    if (rc == ADDON_ANSWER && x->view->hold_seconds > 0)
        return px__hold(x, &ans);
    return px__addon_rc(x, rc, &ans);
}

static int on_head(px_xchg_t *x)
{
    const addon_t *const *a = px_policy_addons();
    const addon_t *allow = addon_allowlist();
    px_hold_t *t = x->ctx->holds;
    px__held_t *h = t != NULL && px_hold_count(t) > 0 ? (px__held_t *)px_hold_find(t, x) : NULL;
    if (h != NULL) {
        if (h->w.outcome == PX_HOLD_PENDING)
            return PX_STAGE_WAIT; /* not decided yet (a resume from elsewhere) */
        if (!px__held_done(x, h))
            return PX_STAGE_REFUSE;
        while (*a != NULL && *a++ != allow) /* approved: the addons after the allowlist run */
            ;
    }
    for (; *a != NULL; a++) {
        int rc = *a == allow ? px__allowlist_head(x, *a) : px__x_addon_head(x, *a);
        if (rc != PX_STAGE_CONTINUE)
            return rc;
    }
    return PX_STAGE_CONTINUE;
}

static int on_response_head(px_xchg_t *x, px_resp_t *r)
{
    for (const addon_t *const *a = px_policy_addons(); *a != NULL; a++)
        px__x_addon_response_head(x, *a, r->status);
    return PX_STAGE_CONTINUE;
}

static void on_end(px_xchg_t *x)
{
    px_hold_t *t = x->ctx->holds;
    px__held_t *h = t != NULL && px_hold_count(t) > 0 ? (px__held_t *)px_hold_find(t, x) : NULL;
    if (h != NULL) { /* the client went away while held: the hold goes */
        px_defer_cancel(&x->ctx->loop, &h->resume);
        px_hold_cancel(t, &h->w);
        free(h);
    }
    for (const addon_t *const *a = px_policy_addons(); *a != NULL; a++)
        px__x_addon_end(x, *a);
}

const px_stage_t px_stage_policy = {
    .name = "policy", .on_head = on_head, .on_response_head = on_response_head, .on_end = on_end};
