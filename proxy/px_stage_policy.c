/* The policy stage (px_stage.h): the policy addons' head hooks in order (px_policy_addons():
 * the allowlist, the GraphQL operations, the Anthropic tool-domain trim, the provider-fetch
 * check). A body filter among them asks here for the whole body (filter_cap); the filters stage
 * gathers it and runs their body hooks. */
#include <string.h>

#include "proxy/px_policy.h"
#include "proxy/px_xchg_int.h"

int px__x_addon_head(px_xchg_t *x, const addon_t *a)
{
    if (a->on_request_head == NULL)
        return PX_STAGE_CONTINUE;
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    int rc = a->on_request_head(a, x->view, &ans);
    if (rc == ADDON_ANSWER) {
        px__x_addon_answer(x, &ans);
        return PX_STAGE_REFUSE;
    }
    if (rc < 0) {
        px__x_log(x, "ERROR", -1, "internal error in an addon");
        px__x_answer_error(x, 502, "internal_error", "airlock failed to process this request", 1);
        return PX_STAGE_REFUSE;
    }
    return PX_STAGE_CONTINUE;
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

static int on_head(px_xchg_t *x)
{
    for (const addon_t *const *a = px_policy_addons(); *a != NULL; a++)
        if (px__x_addon_head(x, *a) != PX_STAGE_CONTINUE)
            return PX_STAGE_REFUSE;
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
    for (const addon_t *const *a = px_policy_addons(); *a != NULL; a++)
        px__x_addon_end(x, *a);
}

const px_stage_t px_stage_policy = {
    .name = "policy", .on_head = on_head, .on_response_head = on_response_head, .on_end = on_end};
