#include "proxy/px_policy.h"

#include <stdio.h>

void px_policy_decide(const addon_policy_t *p, const addon_req_t *r, px_verdict_t *v)
{
    addon_policy_query_t q = {
        .method = r->method,
        .host = r->host,
        .path = r->path,
        .port = r->port,
        .tls = r->tls,
    };
    addon_policy_decide(p, &q, &v->d);
    v->allowed = v->d.allowed;
    if (v->allowed) {
        v->message[0] = '\0';
    } else if (v->d.method_message) {
        char m[32];
        snprintf(m, sizeof(m), "%.*s", r->method.len < 31 ? (int)r->method.len : 31,
                 r->method.base);
        snprintf(v->message, sizeof(v->message), ADDON_POLICY_MSG_METHOD_FMT, m);
    } else {
        snprintf(v->message, sizeof(v->message), "%s", ADDON_POLICY_MSG_HOST_PATH);
    }
}

void px_policy_unref(addon_policy_t *p)
{
    if (p != NULL)
        addon_policy_unref(p);
}
