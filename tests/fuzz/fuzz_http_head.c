/* Fuzzes the request-head path: llhttp (strict) plus airlock's head handling (spans, header
 * caps, bare-LF / obs-fold checks), then the policy decision and the JSON answer writer on
 * whatever came out; then, as the proxy does, the bytes after the head go through the same
 * parser from buffers of their own (bodies, chunked framing, trailer fields), and the head's
 * spans must still lie inside the head. The first two bytes pick where the input is split. */
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "proxy/px_answer.h"
#include "proxy/px_int.h"

static addon_policy_t *policy;
static llhttp_settings_t req_settings, resp_settings, body_settings;

/* Every span of the head lies inside its buffer. */
static void check_spans(const px_head_t *h)
{
    for (size_t i = 0; i < h->n; i++) {
        if ((size_t)h->names[i].off + h->names[i].len > h->len ||
            (size_t)h->values[i].off + h->values[i].len > h->len)
            __builtin_trap();
    }
}

/* Feeds len bytes (a copy, so reads past it are caught) to the parser as the body phase does. */
static int feed_body(px_head_t *h, llhttp_t *p, const char *data, size_t len)
{
    if (len == 0)
        return 0;
    char *copy = malloc(len);
    if (copy == NULL)
        return -1;
    memcpy(copy, data, len);
    h->msg_done = 0;
    p->data = h;
    llhttp_errno_t err = llhttp_execute(p, copy, len);
    free(copy);
    check_spans(h);
    if (h->trailer_bytes > PX_TRAILER_MAX + 65536 || h->trailer_fields > PX_TRAILERS_MAX + 1)
        __builtin_trap(); /* the caps stop the parser */
    if (err == HPE_PAUSED) {
        /* the message ended: a further one would start from a fresh head */
        return 1;
    }
    return err == HPE_OK ? 0 : -1;
}

/* The bytes after a complete head (rest, len), as when the head arrived alone: a parser that
 * read just the head gets the rest in two reads from buffers of their own, cut at cut. */
static void body_phase(const px_head_t *h, const llhttp_t *p, const char *rest, size_t len,
                       size_t cut)
{
    llhttp_t q;
    llhttp_init(&q, (llhttp_type_t)p->type, p->settings);
    px_head_t h2;
    memset(&h2, 0, sizeof(h2));
    const char *reason;
    if (px_head_feed(&h2, &q, h->buf, h->head_end, &reason) == 1 && !h2.msg_done) {
        cut = cut % (len + 1);
        if (feed_body(&h2, &q, rest, cut) == 0)
            feed_body(&h2, &q, rest + cut, len - cut);
    }
    px_head_free(&h2);
}

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
    if (size < 2)
        return 0;
    size_t split = data[0] % size;
    size_t split2 = data[1];
    const char *in = (const char *)data + 2;
    size -= 2;
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
            /* the rest, in two reads of their own, through the body phase */
            if (h.msg_start == 0 && h.head_end <= size)
                body_phase(&h, &p, in + h.head_end, size - h.head_end, split2);
        } else if (rc < 0 && reason == NULL) {
            __builtin_trap(); /* every failure carries a reason */
        }
        px_head_free(&h);
    }
    return 0;
}
