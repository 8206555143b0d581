/* Fuzzes the request-head path: llhttp (strict) plus airlock's head handling (spans, header
 * caps, bare-LF / obs-fold checks), then the policy decision and the JSON answer writer on
 * whatever came out. The first byte picks where the input is split into two reads. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "proxy/px_answer.h"
#include "proxy/px_int.h"

static addon_policy_t *policy;
static llhttp_settings_t req_settings, resp_settings, body_settings;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (policy == NULL) {
        static const char yaml[] = "domains: [a.test, \"*.b.test\"]\n"
                                   "url_prefixes:\n  - host: api.test\n    path: /v1/*\n"
                                   "    methods: [GET]\n    ports: [8443]\n";
        char err[256];
        if (addon_policy_load_buffer("fuzz", yaml, sizeof(yaml) - 1, &policy, err,
                                     sizeof(err)) != 0)
            return 0;
        px_head_settings(&req_settings, &resp_settings, &body_settings);
    }
    if (size < 1)
        return 0;
    size_t split = data[0] % (size);
    const char *in = (const char *)data + 1;
    size -= 1;
    if (split > size)
        split = size;
    for (int type = 0; type < 2; type++) {
        px_head_t h;
        memset(&h, 0, sizeof(h));
        llhttp_t p;
        llhttp_init(&p, type == 0 ? HTTP_REQUEST : HTTP_RESPONSE,
                    type == 0 ? &req_settings : &resp_settings);
        const char *reason;
        int rc = px_head_feed(&h, &p, in, split, &reason);
        if (rc == 0)
            rc = px_head_feed(&h, &p, in + split, size - split, &reason);
        if (rc == 1) {
            /* every span lies inside the buffer */
            for (size_t i = 0; i < h.n; i++) {
                if ((size_t)h.names[i].off + h.names[i].len > h.len ||
                    (size_t)h.values[i].off + h.values[i].len > h.len)
                    __builtin_trap();
            }
            if ((size_t)h.url.off + h.url.len > h.len || h.head_end > h.len)
                __builtin_trap();
            int hi = px_head_find(&h, "host");
            addon_policy_query_t q = {
                .method = {"GET", 3},
                .host = {hi >= 0 ? h.buf + h.values[hi].off : "", hi >= 0 ? h.values[hi].len : 0},
                .path = {h.buf + h.url.off, h.url.len},
                .port = 443,
                .tls = 1,
            };
            addon_policy_decision_t d;
            addon_policy_decide(policy, &q, &d);
            char json[4096];
            px_sbuf_t b;
            px_sbuf_init(&b, json, sizeof(json));
            px_sbuf_json_str(&b, q.path.base, q.path.len);
            px_sbuf_json_str(&b, q.host.base, q.host.len);
        } else if (rc < 0 && reason == NULL) {
            __builtin_trap(); /* every failure carries a reason */
        }
        px_head_free(&h);
    }
    return 0;
}
