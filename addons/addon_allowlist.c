#include "addons/addon_allowlist.h"

#include <stdio.h>

#include "addons/addon_policy.h"

/* Warn mode (docs/allowlist.md): the request goes on; its line says WARN and what would have
 * blocked it. */
static void allowlist_warn(addon_req_t *req, const addon_policy_t *p, addon_policy_verdict_t v,
                           size_t index)
{
    req->warn = 1;
    switch (v) {
    case ADDON_POLICY_BLOCK_LISTED: {
        const char *src = addon_policy_entry_src(p, ADDON_POLICY_BLOCKS, index);
        addon_req_annotate(req, "warn: block[%zu]%s%s", index, src[0] ? " " : "", src);
        break;
    }
    case ADDON_POLICY_BLOCK_METHOD:
        addon_req_annotate(req, "warn: method not allowed");
        break;
    case ADDON_POLICY_BLOCK_PORT:
        addon_req_annotate(req, "warn: port not allowed");
        break;
    default:
        addon_req_annotate(req, "warn: host/path not in allowlist");
        break;
    }
}

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
    const addon_policy_t *p = req->config != NULL ? req->config->policy : NULL;
    addon_policy_decide(p, &q, &d);
    if (d.allowed && d.warn_block != 0) /* a block entry in warn mode matched: noted only */
        allowlist_warn(req, p, ADDON_POLICY_BLOCK_LISTED, d.warn_block - 1);
    else if (!d.allowed && addon_policy_warn_mode(p) && d.verdict != ADDON_POLICY_BLOCK_PRECHECK)
        allowlist_warn(req, p, d.verdict, d.index); /* the pre-checks are never relaxed */
    if (req->warn && !d.allowed) {
        d.allowed = 1;
        d.graphql = NULL; /* no entry allowed it: no GraphQL operation list applies */
    }
    req->decided = 1; /* the later addons read the decision from the view (the GraphQL block) */
    req->allowed = d.allowed;
    req->graphql = d.allowed ? d.graphql : NULL;
    if (d.verdict == ADDON_POLICY_ALLOW || d.verdict == ADDON_POLICY_BLOCK_LISTED) {
        req->entry_kind = (int)d.kind; /* not the "closest" entry of a refusal: none decided */
        req->entry_index = d.index;
    }
    if (d.allowed)
        return ADDON_NEXT;
    req->hold_seconds = d.verdict != ADDON_POLICY_BLOCK_PRECHECK ? addon_policy_hold_seconds(p) : 0;
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
