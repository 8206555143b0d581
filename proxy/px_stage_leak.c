/* The secret guard stage of an exchange (px_stage.h): the real value of a credential airlock holds
 * (a masked secret, an AWS key or session token) or a canary the operator planted, found anywhere
 * in a request (its target, a field, its body, in any encoding addons/addon_leak knows), refuses
 * the request before that value leaves: never sent upstream, whatever the host. The match is
 * named in the answer and the log by the entry's name, never by its value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_pct.h"
#include "base/px_sbuf.h"
#include "proxy/px_answer.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_xchg_int.h"

/* Refuses x for match mt found in where: "url", "body", "header" or "trailer" (with hname, the
 * field's name, scanned clean), "header name" or "trailer name" (the name holds the value: it is
 * not shown). */
static void px__leak_refuse(px_xchg_t *x, const addon_leak_match_t *mt, const char *where,
                            const char *hname, size_t hlen)
{
    const char *kind = addon_leak_kind_name(mt->kind);
    const char *enc = addon_leak_enc_name(mt->enc);
    int aborted = x->up != NULL;
    if (aborted) {
        px_up_abort(x->up); /* nothing more of the request leaves: not the held bytes, trailers */
        x->up = NULL;
    }
    const char *sep = aborted ? "; the upstream request was aborted" : "";
    char tail[256];
    if (hname != NULL)
        snprintf(tail, sizeof(tail), " (leak: %s %s, %s, in %s '%.*s'%s)", kind, mt->name, enc,
                 where, (int)(hlen < 64 ? hlen : 64), hname, sep);
    else
        snprintf(tail, sizeof(tail), " (leak: %s %s, %s, in %s%s%s)", kind, mt->name, enc,
                 strstr(where, " name") != NULL ? "a " : "", where, sep);
    if (strcmp(where, "url") == 0) {
        /* the target holds the value: the log gets scheme://host/... only */
        if (x->pre.host_len > 0)
            snprintf(x->pre.url, sizeof(x->pre.url), "%s://%.*s/...", x->tls ? "https" : "http",
                     (int)x->pre.host_len, x->pre.host);
        else
            snprintf(x->pre.url, sizeof(x->pre.url), "-"); /* a CONNECT target */
    }
    addon_leak_match_t in_url;
    if (addon_leak_scan(x->snap->leak, x->pre.url, strlen(x->pre.url), &in_url))
        snprintf(x->pre.url, sizeof(x->pre.url), "-"); /* the host (Host, :authority) holds it */
    px__x_log(x, "BLOCKED", 403, tail);
    if (x->rs == PX__RS_BODY || x->rs == PX__RS_DONE) {
        px__x_finish(x, 0); /* the upstream's answer is on its way: the connection just ends */
        return;
    }
    char json[1024];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_answer_leak_json(&b, kind, mt->name, enc, where, hname, hlen, x->method, ADDON_LEAK_MESSAGE);
    px__x_answer(x, 403, json, b.len, x->rq != PX__RQ_DONE);
}

/* Fields (the head's or the trailers'): each name, then its value, so that a value's match is
 * shown with a name known clean. 1 when it refused x. */
static int px__leak_fields(px_xchg_t *x, const addon_leak_t *m, const char *buf,
                           const px_span_t *names, const px_span_t *values, size_t n, int trailer)
{
    addon_leak_match_t mt;
    for (size_t i = 0; i < n; i++) {
        const char *name = buf + names[i].off;
        if (addon_leak_scan(m, name, names[i].len, &mt)) {
            px__leak_refuse(x, &mt, trailer ? "trailer name" : "header name", NULL, 0);
            return 1;
        }
        if (addon_leak_scan(m, buf + values[i].off, values[i].len, &mt)) {
            px__leak_refuse(x, &mt, trailer ? "trailer" : "header", name, names[i].len);
            return 1;
        }
    }
    return 0;
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

static int on_head(px_xchg_t *x);

int px__x_leak_pre(px_xchg_t *x)
{
    /* their log lines and answers show the Host, the SNI, the CONNECT target as sent */
    if (x->pre.verdict != PX_PRE_MISMATCH && x->pre.verdict != PX_PRE_NO_TUNNEL)
        return 0;
    if (x->snap_from == NULL || x->snap_from->leak == NULL)
        return 0;
    x->snap = px_snapshot_ref(x->snap_from); /* let go with the exchange */
    return on_head(x) != PX_STAGE_CONTINUE;
}

/* Scans the request target and fields for a secret or a canary, before any addon: the policy,
 * and the credentials that put real values in. */
static int on_head(px_xchg_t *x)
{
    const addon_leak_t *m = x->snap != NULL ? x->snap->leak : NULL;
    if (m == NULL)
        return PX_STAGE_CONTINUE;
    addon_leak_match_t mt;
    const px_msg_t *r = x->req;
    if (addon_leak_scan(m, r->buf + r->target.off, r->target.len, &mt)) {
        px__leak_refuse(x, &mt, "url", NULL, 0);
        return PX_STAGE_REFUSE;
    }
    size_t dlen = 0;
    char *dec = px__pct_decode(r->buf + r->target.off, r->target.len, &dlen);
    int hit = dec != NULL && addon_leak_scan(m, dec, dlen, &mt);
    free(dec);
    if (hit) {
        px__leak_refuse(x, &mt, "url", NULL, 0);
        return PX_STAGE_REFUSE;
    }
    if (px__leak_fields(x, m, r->buf, r->names, r->values, r->n, 0))
        return PX_STAGE_REFUSE;
    if (x->rq == PX__RQ_BODY) {
        x->leak.on = 1;
        addon_leak_state_init(&x->leak.st);
    }
    return PX_STAGE_CONTINUE;
}

static void px__leak_body(px_xchg_t *x, const char *data, size_t len);

/* A piece of the body through the guard: scanned, then all but the held tail handed on. */
static int on_body(px_xchg_t *x, const char *data, size_t len)
{
    if (!x->leak.on || x->sink == PX__SINK_DISCARD)
        return PX_STAGE_CONTINUE;
    px__leak_body(x, data, len);
    return PX_STAGE_REFUSE; /* taken: what it lets go was handed on */
}

static void px__leak_body(px_xchg_t *x, const char *data, size_t len)
{
    const addon_leak_t *m = x->snap->leak;
    addon_leak_match_t mt;
    if (addon_leak_feed(m, &x->leak.st, data, len, &mt)) {
        px__leak_refuse(x, &mt, "body", NULL, 0);
        return;
    }
    /* A value split across pieces: its start is still held, never sent, when its end arrives.
     * Only the bytes that may still begin a value are held (usually none). */
    size_t keep = addon_leak_pending(m, &x->leak.st);
    if (keep == 0 && x->leak.held_len == 0) {
        px_stage_pass(x, &px_stage_leak, data, len);
        return;
    }
    size_t total = x->leak.held_len + len;
    size_t out = total > keep ? total - keep : 0;
    size_t from_held = out < x->leak.held_len ? out : x->leak.held_len;
    size_t from_data = out - from_held;
    if (x->leak.held == NULL) {
        x->leak.held = malloc(addon_leak_max_pattern_len(m)); /* keep is always less */
        if (x->leak.held == NULL) {
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
        memcpy(send, x->leak.held, from_held);
    }
    memmove(x->leak.held, x->leak.held + from_held, x->leak.held_len - from_held);
    x->leak.held_len -= from_held;
    memcpy(x->leak.held + x->leak.held_len, data + from_data, len - from_data);
    x->leak.held_len += len - from_data;
    if (send != NULL) {
        px_stage_pass(x, &px_stage_leak, send, from_held);
        if (send != small)
            free(send);
        if (x->finished)
            return;
    }
    if (from_data > 0)
        px_stage_pass(x, &px_stage_leak, data, from_data);
}

/* The body ended: the held tail goes on. */
static void px__leak_flush(px_xchg_t *x)
{
    if (x->leak.held_len == 0 || x->sink == PX__SINK_DISCARD)
        return;
    char *held = x->leak.held;
    size_t n = x->leak.held_len;
    x->leak.held = NULL;
    x->leak.held_len = 0;
    px_stage_pass(x, &px_stage_leak, held, n);
    free(held);
}

/* The request ended with trailer fields t (borrowed; NULL: none): they are scanned as the head's
 * fields are (a match aborts the upstream request, nothing of t or the held tail leaves), then
 * the held tail goes on. REFUSE when the exchange ended (refused, or failed). */
static int on_body_end(px_xchg_t *x, const px_fields_t *t)
{
    const addon_leak_t *m = x->snap != NULL ? x->snap->leak : NULL;
    /* the head went upstream long ago: a match aborts that request before the held bytes or
     * any trailer field are handed on (a request already answered takes nothing more) */
    if (m != NULL && t != NULL && x->sink != PX__SINK_DISCARD &&
        px__leak_fields(x, m, t->buf, t->names, t->values, t->n, 1))
        return PX_STAGE_REFUSE;
    if (!x->leak.on)
        return PX_STAGE_CONTINUE;
    px__leak_flush(x);
    return x->finished ? PX_STAGE_REFUSE : PX_STAGE_CONTINUE;
}

static void on_end(px_xchg_t *x)
{
    free(x->leak.held);
    x->leak.held = NULL;
}

const px_stage_t px_stage_leak = {.name = "leak",
                                  .on_head = on_head,
                                  .on_body = on_body,
                                  .on_body_end = on_body_end,
                                  .on_end = on_end};
