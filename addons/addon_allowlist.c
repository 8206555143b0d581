#include "addons/addon_allowlist.h"

#include <stdio.h>

#include "addons/addon_policy.h"

static int on_request_head(const addon_t *self, addon_req_t *req, addon_answer_t *ans)
{
    (void)self;
    addon_policy_query_t q = {
        .method = req->method,
        .host = req->host,
        .path = req->path,
        .port = req->port,
        .tls = req->tls,
    };
    addon_policy_decision_t d;
    addon_policy_decide(req->config != NULL ? req->config->policy : NULL, &q, &d);
    req->decided = 1; /* the later addons read the decision from the view (the GraphQL block) */
    req->allowed = d.allowed;
    req->graphql = d.allowed ? d.graphql : NULL;
    if (d.allowed)
        return ADDON_NEXT;
    ans->status = 403;
    ans->error = "blocked_by_network_allowlist";
    ans->with_request = 1;
    ans->verdict = "BLOCKED";
    ans->log_tail[0] = '\0';
    if (d.verdict == ADDON_POLICY_BLOCK_LISTED) {
        addon_policy_block_message(req->config->policy, d.index, ans->message,
                                   sizeof(ans->message));
    } else if (d.method_message) {
        char m[32];
        snprintf(m, sizeof(m), "%.*s", req->method.len < 31 ? (int)req->method.len : 31,
                 req->method.base);
        snprintf(ans->message, sizeof(ans->message), ADDON_POLICY_MSG_METHOD_FMT, m);
    } else if (d.verdict == ADDON_POLICY_BLOCK_PORT) {
        snprintf(ans->message, sizeof(ans->message), ADDON_POLICY_MSG_PORT_FMT,
                 (unsigned)req->port);
    } else {
        snprintf(ans->message, sizeof(ans->message), "%s", ADDON_POLICY_MSG_HOST_PATH);
    }
    return ADDON_ANSWER;
}

static const addon_t addon__allowlist = {
    .name = "allowlist",
    .on_request_head = on_request_head,
};

const addon_t *addon_allowlist(void)
{
    return &addon__allowlist;
}
