/* The request-body side of the provider-fetch check: the strict JSON parse every body filter
 * that reads a provider body uses (no duplicate keys), and the OpenAI filter (POST
 * api.openai.com /v1/responses and /v1/chat/completions), which only refuses, never rewrites. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_provider_int.h"
#include "base/px_err.h"
#include "base/px_host.h"
#include "base/px_path.h"

static int pv_refuse(addon_answer_t *ans, const char *error, const char *detail, const char *msg)
{
    ans->status = 403;
    ans->error = error;
    ans->verdict = "BLOCKED";
    ans->with_detail = 1;
    snprintf(ans->detail, sizeof(ans->detail), "%s", detail);
    snprintf(ans->message, sizeof(ans->message), "%s", msg);
    return ADDON_ANSWER;
}

/* s for the log line: printable ASCII but '[', ']' and '\\' as is, the rest as \xHH. */
static const char *pv_esc(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (; *s != '\0' && o + 5 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch < 0x7f && ch != '[' && ch != ']' && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
    }
    out[o] = '\0';
    return out;
}

int addon_provider_parse(const char *data, size_t len, size_t flags, json_t **out, addon_req_t *req,
                         addon_answer_t *ans)
{
    json_error_t jerr;
    *out = json_loadb(data, len, flags | JSON_REJECT_DUPLICATES, &jerr);
    if (*out != NULL)
        return 0;
    if (json_error_code(&jerr) != json_error_duplicate_key)
        return PX_EPARSE;
    /* jansson names the key ("duplicate object key near '\"a\"'") when it is short */
    char key[80] = "";
    const char *near = strstr(jerr.text, "near '");
    if (near != NULL) {
        near += 6;
        size_t n = strlen(near);
        if (n > 0 && near[n - 1] == '\'')
            n--;
        snprintf(key, sizeof(key), " %.*s", (int)(n < 64 ? n : 64), near);
    }
    char detail[128], esc[400];
    snprintf(detail, sizeof(detail), "<duplicate-key%s>", key);
    if (req != NULL)
        addon_req_annotate(req, "request-json: duplicate key%s at byte %d",
                           pv_esc(key, esc, sizeof(esc)), jerr.position);
    char msg[512];
    snprintf(msg, sizeof(msg),
             "The request body has an object with the key%s twice (at byte %d). airlock refuses "
             "duplicate keys in the bodies it checks: the provider could read the other copy "
             "than the one airlock checked.",
             key, jerr.position);
    return pv_refuse(ans, "request_json_duplicate_key", detail, msg);
}

/* 1 for api.openai.com and a path any reading of which (base/px_path) is /v1/responses or
 * /v1/chat/completions, alone or followed by '/' or a format suffix, in any case. */
static int pv_openai_applies(const addon_req_t *req)
{
    return addon_req_host_is(req, "api.openai.com") &&
           (addon_req_path_under(req, "/v1/responses") ||
            addon_req_path_under(req, "/v1/chat/completions"));
}

static int on_request_head(const addon_t *self, addon_req_t *req, addon_answer_t *ans)
{
    (void)self;
    (void)ans;
    if (pv_openai_applies(req) && req->filter_cap < ADDON_PROVIDER_BODY_CAP)
        req->filter_cap = ADDON_PROVIDER_BODY_CAP;
    return ADDON_NEXT;
}

static const char pv_msg_invalid[] =
    "The request body is not valid JSON (or is nested too deeply, or uses a Content-Encoding). "
    "airlock reads OpenAI request bodies to check the URLs the provider would fetch.";
static const char pv_msg_too_large[] =
    "The request body exceeds the 32 MiB limit for OpenAI request-body checks.";

static int on_request_body_filter(const addon_t *self, addon_req_t *req, const char *data,
                                  size_t len, const addon_sink_t *out, addon_answer_t *ans)
{
    (void)self;
    (void)out;
    if (!pv_openai_applies(req) || req->config == NULL)
        return ADDON_NEXT;
    if (data == NULL || len > ADDON_PROVIDER_BODY_CAP) {
        addon_req_annotate(req, "provider-fetch: <too-large>");
        return pv_refuse(ans, "provider_request_too_large", "<too-large>", pv_msg_too_large);
    }
    if (len == 0)
        return ADDON_NEXT;
    int ce = addon_req_find(req, "content-encoding", 0);
    const addon_str_t *cev = ce >= 0 ? &req->headers[ce].value : NULL;
    if (cev != NULL && cev->len > 0 &&
        !(cev->len == 8 && strncasecmp(cev->base, "identity", 8) == 0)) {
        addon_req_annotate(req, "provider-fetch: <invalid-json>");
        return pv_refuse(ans, "provider_request_invalid", "<invalid-json>", pv_msg_invalid);
    }
    json_t *body;
    int rc = addon_provider_parse(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &body, req, ans);
    if (rc == ADDON_ANSWER)
        return rc;
    if (rc != 0) {
        addon_req_annotate(req, "provider-fetch: <invalid-json>");
        return pv_refuse(ans, "provider_request_invalid", "<invalid-json>", pv_msg_invalid);
    }
    rc = addon_provider_check(req->config->policy, body, ADDON_PROVIDER_OPENAI, req, ans);
    json_decref(body);
    return rc;
}

static const addon_t addon__provider = {
    .name = "provider-fetch",
    .on_request_head = on_request_head,
    .on_request_body_filter = on_request_body_filter,
};

const addon_t *addon_provider(void)
{
    return &addon__provider;
}
