/* Fuzzes the request side of the HTTP/1 codec the proxy runs (px_h1.c): heads, bodies with
 * their framing, trailer fields, pipelined requests, in three reads from buffers of their own
 * (so that a read past one is caught), then the pre-checks (px_precheck.c), the policy decision
 * and the JSON writer on whatever came out. The first bytes pick the splits and the listener. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "proxy/px_answer.h"
#include "http/px_h1.h"
#include "proxy/px_precheck.h"

static addon_policy_t *policy;

typedef struct state {
    px_pre_ctx_t ctx;
    size_t heads, bytes, ends;
} state_t;

static void check_msg(const px_msg_t *m)
{
    for (size_t i = 0; i < m->n; i++)
        if ((size_t)m->names[i].off + m->names[i].len > m->len ||
            (size_t)m->values[i].off + m->values[i].len > m->len)
            __builtin_trap();
    if ((size_t)m->target.off + m->target.len > m->len)
        __builtin_trap();
}

static int on_head(void *owner, px_msg_t *m)
{
    state_t *st = owner;
    st->heads++;
    check_msg(m);
    px_pre_t pre;
    px_precheck(m, &st->ctx, &pre);
    if (pre.verdict == PX_PRE_OK) {
        if (pre.host_len > 255 || pre.path == NULL)
            __builtin_trap();
        addon_policy_query_t q = {
            .method = {"GET", 3},
            .host = {pre.host, pre.host_len},
            .path = {pre.path, pre.path_len},
            .port = pre.port,
            .tls = st->ctx.tls,
        };
        addon_policy_decision_t d;
        addon_policy_decide(policy, &q, &d);
        char json[4096];
        px_sbuf_t b;
        px_sbuf_init(&b, json, sizeof(json));
        px_sbuf_json_str(&b, q.path.base, q.path.len);
        px_sbuf_json_str(&b, q.host.base, q.host.len);
    } else if (pre.verdict == PX_PRE_BAD && pre.reason == NULL) {
        __builtin_trap(); /* every refusal says why */
    }
    px_msg_free(m);
    return 0;
}

static int on_data(void *owner, const char *data, size_t len)
{
    state_t *st = owner;
    volatile char c = len ? data[len - 1] : 0; /* touch the last byte: inside the read */
    (void)c;
    st->bytes += len;
    return 0;
}

static int on_end(void *owner, const px_fields_t *t)
{
    state_t *st = owner;
    st->ends++;
    if (t != NULL) {
        if (t->n > PX_TRAILERS_MAX || t->len > PX_TRAILER_MAX)
            __builtin_trap();
        for (size_t i = 0; i < t->n; i++)
            if ((size_t)t->names[i].off + t->names[i].len > t->len ||
                (size_t)t->values[i].off + t->values[i].len > t->len)
                __builtin_trap();
    }
    return 1;
}

static const px_h1_cbs_t cbs = {on_head, on_data, on_end};

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
    }
    if (size < 3)
        return 0;
    state_t st;
    memset(&st, 0, sizeof(st));
    st.ctx.kind = (px_listener_kind_t)(data[2] % 4);
    st.ctx.tls = data[2] & 4 ? 1 : 0;
    st.ctx.sni = data[2] & 8 ? "a.test" : "";
    st.ctx.tunnel = data[2] & 16 ? "api.test" : "";
    st.ctx.tunnel_port = 8443;
    st.ctx.orig_port = data[2] & 32 ? 8080 : 0;
    const char *in = (const char *)data + 3;
    size_t len = size - 3;
    size_t cut1 = len ? data[0] % (len + 1) : 0;
    size_t cut2 = cut1 + (len - cut1 ? data[1] % (len - cut1 + 1) : 0);
    size_t cuts[4] = {0, cut1, cut2, len};
    px_h1_t p;
    px_h1_init(&p, 1, &cbs, &st);
    char *keep = NULL; /* what a read did not take waits, as the client connection keeps it */
    size_t klen = 0;
    for (int i = 0; i < 3; i++) {
        size_t n = cuts[i + 1] - cuts[i];
        char *buf = malloc(klen + n + 1);
        if (buf == NULL)
            break;
        if (klen > 0)
            memcpy(buf, keep, klen);
        if (n > 0)
            memcpy(buf + klen, in + cuts[i], n);
        free(keep);
        keep = NULL;
        size_t total = klen + n, off = 0;
        klen = 0;
        int failed = 0;
        for (int guard = 0; guard < 64 && off < total; guard++) {
            size_t used = 0;
            if (px_h1_feed(&p, buf + off, total - off, &used) < 0) {
                if (p.reason == NULL)
                    __builtin_trap();
                failed = 1;
                break;
            }
            off += used;
            if (p.state == PX_H1_DONE || p.state == PX_H1_UPGRADED)
                px_h1_next(&p); /* the next pipelined request */
            else if (used == 0)
                break;
        }
        if (!failed && off < total) {
            keep = malloc(total - off);
            if (keep != NULL) {
                memcpy(keep, buf + off, total - off);
                klen = total - off;
            }
        }
        free(buf);
        if (failed)
            break;
    }
    free(keep);
    px_h1_free(&p);
    return 0;
}
