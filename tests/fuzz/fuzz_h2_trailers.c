/* Fuzzes request trailers through the HTTP/2 server codec (px_h2.c), as the secret guard sees
 * them. Each input is a list of trailer fields (or, in raw mode, an HPACK block); the target
 * writes one client stream: a POST head, a DATA frame (or content-length: 0 and none), then the
 * trailing HEADERS with END_STREAM, the block cut across CONTINUATION frames where the input
 * asks, and feeds it in pieces. Checks: the request ends at most once and no body byte comes
 * after its end; trailers handed out stay inside their caps and spans; and trailers handed out
 * are exactly the fields written (same order, same bytes), so that the guard's scan of them
 * (addon_leak over every name and value, as proxy/px_stage_leak.c runs it) finds a planted
 * secret or canary exactly when the fields sent carry it: what the codec hands on is what the
 * guard read.
 *
 * Input: byte 0 the mode (bit 0 raw HPACK block, bit 1 an early CONTINUATION cut, bit 2
 * content-length: 0 and no DATA, bit 3 fed one byte at a time, bit 4 a DATA frame after the
 * trailers); then fields as [name length: 1 byte][name][value length: 2 bytes LE][value]. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "addons/addon_leak.h"
#include "http/px_h2.h"

#define FZ_FIELDS_MAX 48 /* past PX_TRAILERS_MAX: the cap is hit too */
#define FZ_OUT_MAX (3 * 65536)

typedef struct fz_field {
    const uint8_t *name, *value;
    size_t nlen, vlen;
} fz_field_t;

typedef struct fz {
    px_h2_t *h;
    int raw;
    const fz_field_t *fields;
    size_t nfields;
    int requests, ended;
} fz_t;

static const addon_leak_t *fz_matcher(void)
{
    static addon_leak_t *m;
    if (m == NULL) {
        addon_leak_item_t items[] = {
            {{"secret", 6}, {"ghp_FUZZSECRET0123", 18}, ADDON_LEAK_SECRET},
            {{"canary", 6}, {"canary-fuzz-77ab", 16}, ADDON_LEAK_CANARY},
        };
        if (addon_leak_new(items, 2, &m, NULL, 0, NULL) != 0)
            __builtin_trap();
    }
    return m;
}

/* 1 when the guard would refuse these fields (a match in a name or a value). */
static int fz_guard(const char *const *names, const size_t *nlens, const char *const *values,
                    const size_t *vlens, size_t n)
{
    addon_leak_match_t mt;
    for (size_t i = 0; i < n; i++)
        if (addon_leak_scan(fz_matcher(), names[i], nlens[i], &mt) ||
            addon_leak_scan(fz_matcher(), values[i], vlens[i], &mt))
            return 1;
    return 0;
}

static void on_request(void *o, int32_t sid, px_msg_t *m, const px_h2_req_t *rq)
{
    fz_t *f = o;
    f->requests++;
    for (size_t i = 0; i < m->n; i++)
        if ((size_t)m->names[i].off + m->names[i].len > m->len ||
            (size_t)m->values[i].off + m->values[i].len > m->len)
            __builtin_trap();
    px_msg_free(m);
}

static void on_data(void *o, int32_t sid, const char *data, size_t len)
{
    fz_t *f = o;
    if (f->ended)
        __builtin_trap(); /* a body byte after the request ended */
    px_h2_consume(f->h, sid, len);
}

static void fz_check_trailers(fz_t *f, const px_fields_t *t)
{
    if (t == NULL)
        return;
    if (t->n > PX_TRAILERS_MAX || t->len > PX_TRAILER_MAX)
        __builtin_trap();
    const char *names[PX_TRAILERS_MAX], *values[PX_TRAILERS_MAX];
    size_t nlens[PX_TRAILERS_MAX], vlens[PX_TRAILERS_MAX];
    for (size_t i = 0; i < t->n; i++) {
        if ((size_t)t->names[i].off + t->names[i].len > t->len ||
            (size_t)t->values[i].off + t->values[i].len > t->len)
            __builtin_trap();
        names[i] = t->buf + t->names[i].off;
        values[i] = t->buf + t->values[i].off;
        nlens[i] = t->names[i].len;
        vlens[i] = t->values[i].len;
    }
    int seen = fz_guard(names, nlens, values, vlens, t->n);
    if (f->raw)
        return;
    /* what was handed out is what was written */
    if (t->n != f->nfields)
        __builtin_trap();
    const char *wn[PX_TRAILERS_MAX], *wv[PX_TRAILERS_MAX];
    size_t wnl[PX_TRAILERS_MAX], wvl[PX_TRAILERS_MAX];
    for (size_t i = 0; i < t->n; i++) {
        const fz_field_t *w = &f->fields[i];
        if (w->nlen != nlens[i] || w->vlen != vlens[i] || memcmp(w->name, names[i], w->nlen) != 0 ||
            memcmp(w->value, values[i], w->vlen) != 0)
            __builtin_trap();
        wn[i] = (const char *)w->name;
        wv[i] = (const char *)w->value;
        wnl[i] = w->nlen;
        wvl[i] = w->vlen;
    }
    if (seen != fz_guard(wn, wnl, wv, wvl, t->n))
        __builtin_trap();
}

static void on_end(void *o, int32_t sid, const px_fields_t *t)
{
    fz_t *f = o;
    if (f->ended++)
        __builtin_trap(); /* one end per request */
    fz_check_trailers(f, t);
    if (!f->raw && t == NULL && f->nfields > 0)
        __builtin_trap(); /* trailers were written and accepted, but none handed out */
    px_h2_field_t fl[] = {{"Content-Type", 12, "text/plain", 10}};
    px_h2_respond(f->h, sid, 204, fl, 1, 0);
}

static void on_reset(void *o, int32_t sid, uint32_t code)
{
}

static const px_h2_cbs_t cbs = {on_request, on_data, on_end, on_reset, NULL, NULL};

/* ---- writing the client's bytes ---- */

typedef struct fz_out {
    uint8_t b[FZ_OUT_MAX];
    size_t len;
    int full;
} fz_out_t;

static void fz_put(fz_out_t *o, const void *p, size_t n)
{
    if (o->full || n > sizeof(o->b) - o->len) {
        o->full = 1;
        return;
    }
    memcpy(o->b + o->len, p, n);
    o->len += n;
}

static void fz_frame(fz_out_t *o, uint8_t type, uint8_t flags, uint32_t sid, const uint8_t *p,
                     size_t n)
{
    uint8_t hd[9] = {
        (uint8_t)(n >> 16),   (uint8_t)(n >> 8),    (uint8_t)n,          type,        flags,
        (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};
    fz_put(o, hd, 9);
    fz_put(o, p, n);
}

/* An HPACK integer with a 7-bit prefix (RFC 7541 section 5.1), H bit 0. */
static size_t fz_hpack_int(uint8_t *d, size_t v)
{
    if (v < 127) {
        d[0] = (uint8_t)v;
        return 1;
    }
    size_t n = 0;
    d[n++] = 127;
    v -= 127;
    while (v >= 128) {
        d[n++] = (uint8_t)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    d[n++] = (uint8_t)v;
    return n;
}

/* A literal field without indexing, new name (RFC 7541 section 6.2.2). */
static void fz_literal(fz_out_t *o, const void *n, size_t nl, const void *v, size_t vl)
{
    uint8_t d[16];
    d[0] = 0;
    fz_put(o, d, 1);
    fz_put(o, d, fz_hpack_int(d, nl));
    fz_put(o, n, nl);
    fz_put(o, d, fz_hpack_int(d, vl));
    fz_put(o, v, vl);
}

/* A header block as HEADERS plus CONTINUATION frames (first cut at cut, then every 16 KiB). */
static void fz_block(fz_out_t *o, uint32_t sid, uint8_t end_stream, const fz_out_t *blk, size_t cut)
{
    size_t off = 0;
    int first = 1;
    do {
        size_t max = first && cut > 0 && cut < blk->len ? cut : 16384;
        size_t n = blk->len - off < max ? blk->len - off : max;
        uint8_t flags = (off + n == blk->len ? 0x4 : 0) | (first ? end_stream : 0);
        fz_frame(o, first ? 0x1 : 0x9, flags, sid, blk->b + off, n);
        off += n;
        first = 0;
    } while (off < blk->len);
}

static size_t fz_parse(const uint8_t *d, size_t n, fz_field_t *fl)
{
    size_t k = 0, off = 0;
    while (k < FZ_FIELDS_MAX && off < n) {
        size_t nl = d[off++];
        if (nl > n - off)
            break;
        fl[k].name = d + off;
        fl[k].nlen = nl;
        off += nl;
        if (n - off < 2)
            break;
        size_t vl = (size_t)d[off] | (size_t)d[off + 1] << 8;
        off += 2;
        if (vl > n - off)
            vl = n - off;
        fl[k].value = d + off;
        fl[k].vlen = vl;
        off += vl;
        k++;
    }
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static fz_out_t out, blk;
    static fz_field_t fields[FZ_FIELDS_MAX];
    uint8_t mode = data[0];
    fz_t f = {.raw = mode & 1};
    f.nfields = f.raw ? 0 : fz_parse(data + 1, size - 1, fields);
    f.fields = fields;

    out.len = 0;
    out.full = 0;
    fz_frame(&out, 0x4, 0, 0, NULL, 0); /* SETTINGS */
    blk.len = 0;
    blk.full = 0;
    fz_literal(&blk, ":method", 7, "POST", 4);
    fz_literal(&blk, ":scheme", 7, "https", 5);
    fz_literal(&blk, ":authority", 10, "example.com", 11);
    fz_literal(&blk, ":path", 5, "/up", 3);
    if (mode & 4)
        fz_literal(&blk, "content-length", 14, "0", 1);
    fz_block(&out, 1, 0, &blk, 0);
    if (!(mode & 4))
        fz_frame(&out, 0x0, 0, 1, (const uint8_t *)"hello", 5);
    blk.len = 0;
    if (f.raw)
        fz_put(&blk, data + 1, size - 1);
    for (size_t i = 0; i < f.nfields; i++)
        fz_literal(&blk, fields[i].name, fields[i].nlen, fields[i].value, fields[i].vlen);
    if (blk.full || out.full)
        return 0;
    fz_block(&out, 1, 0x1, &blk, mode & 2 ? blk.len / 2 : 0);
    if (mode & 16)
        fz_frame(&out, 0x0, 0x1, 1, (const uint8_t *)"late", 4);
    if (out.full)
        return 0;

    f.h = px_h2_new(&cbs, &f);
    if (f.h == NULL)
        return 0;
    static const char magic[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    int rc = px_h2_feed(f.h, magic, sizeof(magic) - 1);
    size_t piece = mode & 8 ? 1 : out.len;
    for (size_t off = 0; rc == 0 && off < out.len; off += piece) {
        size_t n = out.len - off < piece ? out.len - off : piece;
        rc = px_h2_feed(f.h, (const char *)out.b + off, n);
        const char *o;
        size_t len;
        for (int i = 0; i < 64 && px_h2_take_output(f.h, &o, &len) == 0 && len > 0; i++) {
        }
    }
    if (f.requests > 1)
        __builtin_trap(); /* one stream was written */
    px_h2_free(f.h);
    return 0;
}
