#include "addons/addon_masking.h"

#include <stdio.h>

#include "addons/addon_secrets.h"

static int on_request_head(const addon_t *self, addon_req_t *req, addon_answer_t *ans)
{
    (void)self;
    if (req->credentials_done || req->config == NULL || req->config->replacements == NULL)
        return ADDON_NEXT;
    addon_secrets_result_t res;
    int rc = addon_secrets_apply(req, req->config->replacements, req->url, &res);
    if (rc < 0) {
        /* fail closed: a half-rewritten head never leaves */
        ans->status = 502;
        ans->error = "masking_failed";
        ans->with_request = 0;
        ans->verdict = "ERROR";
        snprintf(ans->message, sizeof(ans->message),
                 "airlock could not apply credential masking to this request");
        snprintf(ans->log_tail, sizeof(ans->log_tail), " (credential masking failed)");
        return ADDON_ANSWER;
    }
    if (res.plain_http > 0) {
        ans->status = 403;
        ans->error = "credentials_require_https";
        ans->with_request = 1;
        ans->verdict = "BLOCKED";
        snprintf(ans->message, sizeof(ans->message),
                 "This request carries a credential that airlock only injects over https, so "
                 "the real value never crosses the network in clear. Use https:// for this "
                 "host (or ask the user to set allow_plain_http on the credential).");
        snprintf(ans->log_tail, sizeof(ans->log_tail), " (credential needs https)");
        return ADDON_ANSWER;
    }
    if (res.masked > 0 || res.dropped > 0)
        req->credentials_done = 1;
    return ADDON_NEXT;
}

static const addon_t addon__masking = {
    .name = "masking",
    .on_request_head = on_request_head,
};

const addon_t *addon_masking(void)
{
    return &addon__masking;
}
