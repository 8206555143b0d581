/* The secret guard of an exchange: the real value of a credential airlock holds (a masked
 * secret, an AWS key or session token) or a canary the operator planted, found anywhere in a
 * request (its target, a field, its body, in any encoding addons/addon_leak knows), refuses
 * the request before that value leaves: never sent upstream, whatever the host. The match is
 * named in the answer and the log by the entry's name, never by its value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_pct.h"
#include "base/px_sbuf.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_xchg_int.h"

#define PX__LEAK_MSG                                                                           \
    "The request carries the real value of a credential airlock holds, or a canary planted "  \
    "in the sandbox; it was not sent."

/* Refuses x for match mt found in where ("url", "header", "body"; hname for a header). */
static void px__leak_refuse(px_xchg_t *x, const addon_leak_match_t *mt, const char *where,
                            const char *hname, size_t hlen)
{
    const char *kind = addon_leak_kind_name(mt->kind);
    const char *enc = addon_leak_enc_name(mt->enc);
    int aborted = x->up != NULL;
    if (aborted) {
        px_up_abort(x->up);
        x->up = NULL;
    }
    char tail[256];
    if (hname != NULL)
        snprintf(tail, sizeof(tail), " (leak: %s %s, %s, in header '%.*s'%s)", kind, mt->name,
                 enc, (int)(hlen < 64 ? hlen : 64), hname,
                 aborted ? "; the upstream request was aborted" : "");
    else
        snprintf(tail, sizeof(tail), " (leak: %s %s, %s, in %s%s)", kind, mt->name, enc, where,
                 aborted ? "; the upstream request was aborted" : "");
    if (strcmp(where, "url") == 0) {
        /* the target holds the value: the log gets scheme://host/... only */
        snprintf(x->pre.url, sizeof(x->pre.url), "%s://%.*s/...", x->tls ? "https" : "http",
                 (int)x->pre.host_len, x->pre.host);
    }
    px__x_log(x, "BLOCKED", 403, tail);
    if (x->rs == PX__RS_BODY || x->rs == PX__RS_DONE) {
        px__x_finish(x, 0); /* the upstream's answer is on its way: the connection just ends */
        return;
    }
    char json[1024];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": \"blocked_secret_leak\", \"kind\": ");
    px_sbuf_json_str(&b, kind, strlen(kind));
    px_sbuf_adds(&b, ", \"name\": ");
    px_sbuf_json_str(&b, mt->name, strlen(mt->name));
    px_sbuf_adds(&b, ", \"encoding\": ");
    px_sbuf_json_str(&b, enc, strlen(enc));
    px_sbuf_adds(&b, ", \"where\": ");
    px_sbuf_json_str(&b, where, strlen(where));
    if (hname != NULL) {
        px_sbuf_adds(&b, ", \"header\": ");
        px_sbuf_json_str(&b, hname, hlen < 64 ? hlen : 64);
    }
    px_sbuf_adds(&b, ", \"method\": ");
    px_sbuf_json_str(&b, x->method, strlen(x->method));
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, PX__LEAK_MSG, sizeof(PX__LEAK_MSG) - 1);
    px_sbuf_adds(&b, "}");
    px__x_answer(x, 403, json, b.len, x->rq != PX__RQ_DONE);
}

/* The target percent-decoded (a value partly encoded, "ghp%5Fxyz", is the value once the
 * upstream decodes it): a malloc'd copy, or NULL when there is no escape to decode. */
static char *px__pct_decode(const char *s, size_t len, size_t *out_len)
{
    if (memchr(s, '%', len) == NULL)
        return NULL;
    char *d = malloc(len);
    if (d != NULL)
        *out_len = px_pct_unquote(s, len, d);
    return d;
}

int px__x_leak_head(px_xchg_t *x)
{
    const addon_leak_t *m = x->snap != NULL ? x->snap->leak : NULL;
    if (m == NULL)
        return 0;
    addon_leak_match_t mt;
    const px_msg_t *r = x->req;
    if (addon_leak_scan(m, r->buf + r->target.off, r->target.len, &mt)) {
        px__leak_refuse(x, &mt, "url", NULL, 0);
        return 1;
    }
    size_t dlen = 0;
    char *dec = px__pct_decode(r->buf + r->target.off, r->target.len, &dlen);
    int hit = dec != NULL && addon_leak_scan(m, dec, dlen, &mt);
    free(dec);
    if (hit) {
        px__leak_refuse(x, &mt, "url", NULL, 0);
        return 1;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (addon_leak_scan(m, r->buf + r->values[i].off, r->values[i].len, &mt)) {
            px__leak_refuse(x, &mt, "header", r->buf + r->names[i].off, r->names[i].len);
            return 1;
        }
    }
    if (x->rq == PX__RQ_BODY) {
        x->leak_on = 1;
        addon_leak_state_init(&x->leak_st);
    }
    return 0;
}

void px__x_leak_body(px_xchg_t *x, const char *data, size_t len)
{
    const addon_leak_t *m = x->snap->leak;
    addon_leak_match_t mt;
    if (addon_leak_feed(m, &x->leak_st, data, len, &mt)) {
        px__leak_refuse(x, &mt, "body", NULL, 0);
        return;
    }
    /* A value split across pieces: its start is still held, never sent, when its end arrives.
     * Only the bytes that may still begin a value are held (usually none). */
    size_t keep = addon_leak_pending(m, &x->leak_st);
    if (keep == 0 && x->held_len == 0) {
        px__x_body_out(x, data, len);
        return;
    }
    size_t total = x->held_len + len;
    size_t out = total > keep ? total - keep : 0;
    size_t from_held = out < x->held_len ? out : x->held_len;
    size_t from_data = out - from_held;
    if (x->held == NULL) {
        x->held = malloc(addon_leak_max_pattern_len(m)); /* keep is always less */
        if (x->held == NULL) {
            px__x_finish(x, -1);
            return;
        }
    }
    /* what goes on is copied out first: handing it on may end the exchange */
    char small[256];
    char *send = NULL;
    if (from_held > 0) {
        send = from_held <= sizeof(small) ? small : malloc(from_held);
        if (send == NULL) {
            px__x_finish(x, -1);
            return;
        }
        memcpy(send, x->held, from_held);
    }
    memmove(x->held, x->held + from_held, x->held_len - from_held);
    x->held_len -= from_held;
    memcpy(x->held + x->held_len, data + from_data, len - from_data);
    x->held_len += len - from_data;
    if (send != NULL) {
        px__x_body_out(x, send, from_held);
        if (send != small)
            free(send);
        if (x->finished)
            return;
    }
    if (from_data > 0)
        px__x_body_out(x, data, from_data);
}

void px__x_leak_flush(px_xchg_t *x)
{
    if (x->held_len == 0 || x->sink == PX__SINK_DISCARD)
        return;
    char *held = x->held;
    size_t n = x->held_len;
    x->held = NULL;
    x->held_len = 0;
    px__x_body_out(x, held, n);
    free(held);
}
