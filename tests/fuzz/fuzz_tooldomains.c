/* Fuzzer for the request-body filters that read provider bodies: the Anthropic tool-domain trim
 * with its provider-fetch check (addon_tooldomains.c, addon_provider*.c) and the OpenAI filter.
 * The first input byte picks the endpoint, the rest is the body. Any body is forwarded,
 * rewritten or answered, never crashes, leaks or reads out of bounds; an answer is a 403 with a
 * detail; a body jansson reads only when duplicate keys are allowed is always refused; a
 * rewritten body is JSON again. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "addons/addon_provider.h"
#include "addons/addon_tooldomains.h"

static const char fuzz_allow[] = "domains: [img.example, \"*.docs.example\"]\n"
                                 "url_prefixes:\n"
                                 "  - {host: path.example, path: /repos/*}\n"
                                 "  - {host: mcp.example}\n"
                                 "provider_fetch_pass: [newblock, new_field]\n";

typedef struct fuzz_out {
    char *buf;
    size_t len;
} fuzz_out_t;

static int fuzz_sink(void *data, const char *buf, size_t len)
{
    fuzz_out_t *o = data;
    char *b = realloc(o->buf, o->len + len + 1);
    if (b == NULL)
        return -1;
    memcpy(b + o->len, buf, len);
    o->buf = b;
    o->len += len;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static addon_policy_t *policy;
    if (policy == NULL) {
        char err[256];
        if (addon_policy_load_buffer("fuzz", fuzz_allow, strlen(fuzz_allow), &policy, err,
                                     sizeof(err)) != 0)
            __builtin_trap();
    }
    if (size < 1)
        return 0;
    static const char *const paths[] = {"/v1/messages", "/v1/messages/batches", "/v1/responses",
                                        "/v1/chat/completions"};
    const char *path = paths[data[0] & 3];
    int openai = (data[0] & 3) >= 2;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;

    addon_config_t cfg = {.policy = policy};
    addon_req_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return 0;
    const char *host = openai ? "api.openai.com" : "api.anthropic.com";
    r->method = (addon_str_t){"POST", 4};
    r->host = (addon_str_t){host, strlen(host)};
    r->path = (addon_str_t){path, strlen(path)};
    r->target = r->path;
    r->port = 443;
    r->tls = 1;
    r->config = &cfg;
    r->url = "https://fuzz/";
    const addon_t *a = openai ? addon_provider() : addon_tooldomains();
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    fuzz_out_t o = {0};
    addon_sink_t sink = {fuzz_sink, &o};
    a->on_request_head(a, r, &ans);
    int rc = a->on_request_body_filter(a, r, body, len, &sink, &ans);
    if (rc != ADDON_NEXT && rc != ADDON_REWRITTEN && rc != ADDON_ANSWER && rc >= 0)
        __builtin_trap();
    if (rc == ADDON_ANSWER && (ans.status != 403 || ans.error == NULL || !ans.with_detail ||
                               memchr(ans.detail, '\0', sizeof(ans.detail)) == NULL))
        __builtin_trap();
    if (rc != ADDON_REWRITTEN && o.len != 0)
        __builtin_trap();
    if (rc == ADDON_NEXT || rc == ADDON_REWRITTEN) {
        /* what goes upstream was read without duplicate keys */
        json_error_t jerr;
        json_t *lax = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        json_t *strict =
            json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr);
        if (lax != NULL && strict == NULL)
            __builtin_trap();
        json_decref(lax);
        json_decref(strict);
    }
    if (rc == ADDON_REWRITTEN && memmem(o.buf, o.len, "\\ud", 3) == NULL &&
        memmem(o.buf, o.len, "\\uD", 3) == NULL) {
        json_error_t jerr;
        json_t *back = json_loadb(o.buf, o.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (back == NULL)
            __builtin_trap();
        json_decref(back);
    }
    free(o.buf);
    addon_req_reset(r);
    free(r);
    return 0;
}
