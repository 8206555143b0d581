/* The scrub stage (px_stage.h): a response stage. Every real value of the replacements file that
 * an upstream hands back (an echoing debug endpoint, an error body quoting a header, a token
 * endpoint) is replaced with its surrogate before the agent sees it, in every encoding the
 * secret guard knows (addons/addon_scrub.h): in the reason phrase, every header value, and the
 * body as it streams (memory bounded by the longest value; docs/replacements.md, "Responses"),
 * and the trailers' values (on_response_end, which may hand the exchange a scrubbed copy).
 *
 * A body whose length may change (a surrogate not as long as its value in some encoding) loses
 * its Content-Length: it goes out chunked on HTTP/1.1, and as DATA frames without a length on
 * HTTP/2. A compressed body (Content-Encoding other than identity) is not decompressed: a value
 * inside it is not replaced (docs/replacements.md says so). A 101 (WebSocket) is not scrubbed
 * here: its frames go through the tunnel's guard, which scrubs the upstream's (px_wsscrub.c).
 * The log line gets " [scrubbed: N NAME...]": how many
 * replacements, and the entries' names, never a value. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/px_stage_scrub.h"

#include "addons/addon_scrub.h"
#include "base/px_err.h"
#include "proxy/px_policy.h"
#include "proxy/px_xchg_int.h"

typedef struct px__buf {
    char *p;
    size_t len, cap;
} px__buf_t;

struct px__xscrub {
    addon_scrub_stream_t *st;
    px_msg_t *head;        /* the head as it goes out, when a field or the reason was replaced */
    uint64_t *counts;      /* replacements per item, in the head (the body's are the stream's) */
    int holding;           /* the head is held: the body is gathered to give its new length */
    px_resp_t r;           /* ... that head */
    px__buf_t held;        /* ... the body, scrubbed, up to 2 x PX_SCRUB_HOLD_MAX */
    px_fields_t *trailers; /* the trailers as they go out, when a value was replaced */
};

static const addon_scrub_t *px__matcher(const px_xchg_t *x)
{
    return x->snap != NULL ? x->snap->scrub : NULL;
}

static int px__put(px__buf_t *b, const char *data, size_t len)
{
    if (b->len + len > b->cap) {
        size_t cap = (b->len + len) * 2 + 64;
        char *p = realloc(b->p, cap);
        if (p == NULL)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    if (len > 0)
        memcpy(b->p + b->len, data, len);
    b->len += len;
    return 0;
}

/* Appends s[0..len) to b, scrubbed; *changed set when a value was replaced. 0 or -1. */
static int px__put_scrubbed(const addon_scrub_t *sm, px__buf_t *b, const char *s, size_t len,
                            uint64_t *counts, int *changed)
{
    char *out = NULL;
    size_t olen = 0;
    int rc = addon_scrub_once(sm, s, len, &out, &olen, counts);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return px__put(b, s, len);
    *changed = 1;
    rc = px__put(b, out, olen);
    free(out);
    return rc;
}

/* 1 when no real value is in m's reason or field values (the usual answer: nothing to copy),
 * 0 when one is, -1 when out of memory. Counts nothing: the copy that follows a 0 counts. */
static int px__head_clean(const addon_scrub_t *sm, const px_msg_t *m)
{
    for (size_t i = 0; i <= m->n; i++) {
        px_span_t v = i < m->n ? m->values[i] : m->target;
        char *out = NULL;
        size_t olen = 0;
        int rc = addon_scrub_once(sm, px_msg_at(m, v), v.len, &out, &olen, NULL);
        free(out);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    return 1;
}

/* A copy of m with the reason and every field value scrubbed, and without Content-Length when
 * drop_length; NULL when out of memory. */
static px_msg_t *px__head_copy(const addon_scrub_t *sm, const px_msg_t *m, int drop_length,
                               uint64_t *counts, int *changed)
{
    px_msg_t *c = malloc(sizeof(*c));
    if (c == NULL)
        return NULL;
    *c = *m;
    c->n = 0;
    *changed = drop_length;
    px__buf_t b = {0};
    b.cap = m->len + 64; /* one allocation: the copy is about as long as the head */
    if ((b.p = malloc(b.cap)) == NULL)
        goto fail;
    c->target.off = 0;
    if (px__put_scrubbed(sm, &b, px_msg_at(m, m->target), m->target.len, counts, changed) != 0)
        goto fail;
    c->target.len = (uint32_t)b.len;
    for (size_t i = 0; i < m->n; i++) {
        if (drop_length && px_msg_span_ieq(m, m->names[i], "content-length"))
            continue;
        c->names[c->n] = (px_span_t){(uint32_t)b.len, m->names[i].len};
        if (px__put(&b, px_msg_at(m, m->names[i]), m->names[i].len) != 0)
            goto fail;
        size_t at = b.len;
        if (px__put_scrubbed(sm, &b, px_msg_at(m, m->values[i]), m->values[i].len, counts,
                             changed) != 0)
            goto fail;
        c->values[c->n] = (px_span_t){(uint32_t)at, (uint32_t)(b.len - at)};
        c->n++;
    }
    if (b.p == NULL && px__put(&b, "", 0) == 0 && (b.p = malloc(1)) == NULL)
        goto fail;
    c->buf = b.p;
    c->len = b.len;
    return c;
fail:
    free(b.p);
    free(c);
    return NULL;
}

/* 1 when the body is compressed (it is passed on as it is: see the file's comment). */
static int px__encoded(const px_msg_t *m)
{
    int i = px_msg_find(m, "content-encoding");
    if (i < 0)
        return 0;
    const char *v = px_msg_at(m, m->values[i]);
    return m->values[i].len > 0 && !(m->values[i].len == 8 && strncasecmp(v, "identity", 8) == 0);
}

static int on_response_head(px_xchg_t *x, px_resp_t *r)
{
    const addon_scrub_t *sm = px__matcher(x);
    if (sm == NULL || r->fields == NULL)
        return PX_STAGE_CONTINUE;
    struct px__xscrub *xs = calloc(1, sizeof(*xs));
    if (xs != NULL)
        xs->counts = calloc(addon_scrub_item_count(sm) + 1, sizeof(uint64_t));
    if (xs == NULL || xs->counts == NULL) {
        free(xs);
        px__x_finish(x, -1); /* fail closed: no answer goes out unscrubbed */
        return PX_STAGE_CONTINUE;
    }
    x->scrub = xs;
    int body = r->body != PX_RESP_NONE && !px__encoded(r->fields);
    /* a length may change unless every replacement is as long as what it replaces */
    int relength = body && r->body == PX_RESP_LENGTH && !x->snap->scrub_same_length;
    /* a short body is held whole and goes out with its new Content-Length (the framing the
     * upstream chose stays); a longer one goes out chunked as it streams */
    int hold = relength && r->length <= PX_SCRUB_HOLD_MAX;
    int changed = 0;
    /* a head with no value whose framing stays goes on as it is, uncopied (a held head is
     * always copied: its Content-Length is rewritten when it goes) */
    int clean = relength ? 0 : px__head_clean(sm, r->fields);
    px_msg_t *c =
        clean == 1 ? NULL : px__head_copy(sm, r->fields, relength && !hold, xs->counts, &changed);
    if (clean < 0 || (c == NULL && clean != 1)) {
        px__x_finish(x, -1);
        return PX_STAGE_CONTINUE;
    }
    if (hold && (xs->st = addon_scrub_stream_new(sm)) == NULL) {
        px_msg_free(c);
        px__x_finish(x, -1);
        return PX_STAGE_CONTINUE;
    }
    if (hold) {
        xs->head = c;
        xs->holding = 1;
        xs->r = *r;
        xs->r.fields = c;
        xs->r.reason = px_msg_at(c, c->target);
        xs->r.reason_len = c->target.len;
        return PX_STAGE_WAIT;
    }
    if (changed) {
        xs->head = c;
        r->fields = c;
        r->reason = px_msg_at(c, c->target);
        r->reason_len = c->target.len;
    } else {
        px_msg_free(c);
    }
    if (relength) {
        r->body = PX_RESP_CHUNKED;
        r->length = 0;
    }
    if (body && (xs->st = addon_scrub_stream_new(sm)) == NULL)
        px__x_finish(x, -1);
    return PX_STAGE_CONTINUE;
}

/* The held head goes out (with the body's length when known, else chunked), then the body. */
static void px__release(px_xchg_t *x, int whole)
{
    struct px__xscrub *xs = x->scrub;
    xs->holding = 0;
    px_msg_t *h = xs->head;
    int ci = px_msg_find(h, "content-length");
    if (whole && ci >= 0) {
        char v[24];
        int n = snprintf(v, sizeof(v), "%zu", xs->held.len);
        char *nb = realloc(h->buf, h->len + (size_t)n);
        if (nb == NULL) {
            px__x_finish(x, -1);
            return;
        }
        memcpy(nb + h->len, v, (size_t)n);
        h->buf = nb;
        h->values[ci] = (px_span_t){(uint32_t)h->len, (uint32_t)n};
        h->len += (size_t)n;
        xs->r.reason = px_msg_at(h, h->target);
        xs->r.length = xs->held.len;
    } else { /* over the hold: chunked from here, without the length */
        if (ci >= 0) {
            memmove(&h->names[ci], &h->names[ci + 1], (h->n - (size_t)ci - 1) * sizeof(px_span_t));
            memmove(&h->values[ci], &h->values[ci + 1],
                    (h->n - (size_t)ci - 1) * sizeof(px_span_t));
            h->n--;
        }
        xs->r.body = PX_RESP_CHUNKED;
        xs->r.length = 0;
    }
    px__x_resp_head(x, &xs->r);
    px__buf_t b = xs->held;
    xs->held = (px__buf_t){0};
    if (b.len > 0 && !x->finished)
        px_stage_resp_pass(x, &px_stage_scrub, b.p, b.len);
    free(b.p);
}

static int px__pass(void *arg, const char *data, size_t len)
{
    px_xchg_t *x = arg;
    struct px__xscrub *xs = x->scrub;
    if (xs->holding) {
        if (px__put(&xs->held, data, len) != 0)
            return -1;
        if (xs->held.len > 2 * PX_SCRUB_HOLD_MAX) /* surrogates much longer than the values */
            px__release(x, 0);
        return 0;
    }
    px_stage_resp_pass(x, &px_stage_scrub, data, len);
    return 0;
}

static int on_response_data(px_xchg_t *x, const char *data, size_t len)
{
    if (x->scrub == NULL || x->scrub->st == NULL)
        return PX_STAGE_CONTINUE;
    if (addon_scrub_stream_feed(x->scrub->st, data, len, px__pass, x) != 0)
        px__x_finish(x, -1);
    return PX_STAGE_REFUSE; /* taken: what is let go went on through px_stage_resp_pass */
}

/* The held bytes go out, the trailers' values are scrubbed (*t becomes the stage's copy when
 * one changed), then the annotation " [scrubbed: N names]" for the log line. */
static int on_response_end(px_xchg_t *x, const px_fields_t **t)
{
    struct px__xscrub *xs = x->scrub;
    const addon_scrub_t *sm = px__matcher(x);
    if (sm == NULL)
        return 0;
    if (xs == NULL) { /* the head was not seen (nothing to count): the trailers still are */
        if (*t == NULL || (xs = x->scrub = calloc(1, sizeof(*xs))) == NULL)
            return *t == NULL ? 0 : PX_ENOMEM;
    }
    size_t n = addon_scrub_item_count(sm);
    if (xs->st != NULL) {
        if (addon_scrub_stream_flush(xs->st, px__pass, x) != 0)
            return PX_ENOMEM;
        for (size_t i = 0; i < n; i++)
            xs->counts[i] += addon_scrub_stream_count(xs->st, i);
    }
    if (xs->holding && !x->finished)
        px__release(x, 1);
    if (x->finished)
        return 0;
    if (px_scrub_fields(sm, *t, &xs->trailers, xs->counts) != 0)
        return PX_ENOMEM;
    if (xs->trailers != NULL)
        *t = xs->trailers;
    if (xs->counts == NULL)
        return 0;
    char text[512];
    size_t len = addon_scrub_describe(sm, xs->counts, text, sizeof(text));
    if (len >= sizeof(text))
        len = sizeof(text) - 1;
    if (len > 2 && x->view != NULL) /* "[scrubbed: ...]": the annotation adds the brackets */
        addon_req_annotate(x->view, "%.*s", (int)(len - 2), text + 1);
    return 0;
}

/* Appends field i of t to c with value v[0..vl): 0, or -1 when it does not fit. */
static int px__field_add(px_fields_t *c, const px_fields_t *t, size_t i, const char *v, size_t vl)
{
    size_t nl = t->names[i].len;
    if (c->n == PX_TRAILERS_MAX || nl + vl > sizeof(c->buf) - c->len)
        return -1;
    memcpy(c->buf + c->len, t->buf + t->names[i].off, nl);
    c->names[c->n] = (px_span_t){(uint32_t)c->len, (uint32_t)nl};
    c->len += nl;
    if (vl > 0)
        memcpy(c->buf + c->len, v, vl);
    c->values[c->n] = (px_span_t){(uint32_t)c->len, (uint32_t)vl};
    c->len += vl;
    c->n++;
    return 0;
}

int px_scrub_fields(const addon_scrub_t *sm, const px_fields_t *t, px_fields_t **out,
                    uint64_t *counts)
{
    *out = NULL;
    if (sm == NULL || t == NULL)
        return 0;
    px_fields_t *c = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const char *v = t->buf + t->values[i].off;
        size_t vl = t->values[i].len;
        char *s = NULL;
        size_t sl = 0;
        int rc = addon_scrub_once(sm, v, vl, &s, &sl, counts);
        if (rc < 0)
            goto fail;
        if (rc == 1 && c == NULL) { /* the first change: the fields before it, as they are */
            if ((c = calloc(1, sizeof(*c))) == NULL) {
                free(s);
                goto fail;
            }
            for (size_t k = 0; k < i; k++)
                (void)px__field_add(c, t, k, t->buf + t->values[k].off, t->values[k].len);
        }
        if (c != NULL) /* a field that no longer fits is left out */
            (void)px__field_add(c, t, i, rc == 1 ? s : v, rc == 1 ? sl : vl);
        free(s);
    }
    *out = c;
    return 0;
fail:
    free(c);
    return PX_ENOMEM;
}

static void on_end(px_xchg_t *x)
{
    struct px__xscrub *xs = x->scrub;
    if (xs == NULL)
        return;
    addon_scrub_stream_free(xs->st);
    px_msg_free(xs->head);
    free(xs->held.p);
    free(xs->counts);
    free(xs->trailers);
    free(xs);
    x->scrub = NULL;
}

const px_stage_t px_stage_scrub = {.name = "scrub",
                                   .on_response_head = on_response_head,
                                   .on_response_data = on_response_data,
                                   .on_response_end = on_response_end,
                                   .on_end = on_end};
