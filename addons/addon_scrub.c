/* Response scrubbing: the patterns and their replacements, the filter, the sorted pattern
 * table walked as a trie, and the stream (addons/addon_scrub.h explains the choices). */
#include "addons/addon_scrub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "addons/addon_blob.h"
#include "base/px_b64.h"
#include "base/px_err.h"
#include "base/px_grow.h"

#define SCRUB_NAME_MAX 64 /* "entry[1023].secret_access_key" */
/* Blob bytes (patterns and their replacements): the filter's own cap, for each of the two. */
#define SCRUB_BLOB_MAX (2u * ADDON_LEAK_MAX_PATTERN_BYTES)

static const char scrub_hex_lower[] = "0123456789abcdef";
static const char scrub_hex_upper[] = "0123456789ABCDEF";

typedef struct scrub_pat {
    size_t off, len;   /* pattern bytes in blob */
    size_t roff, rlen; /* replacement bytes in blob */
    uint32_t item;
    addon_leak_enc_t enc;
} scrub_pat_t;

struct addon_scrub {
    char **names;
    size_t nitems;
    unsigned char *blob;
    size_t bloblen, blobcap;
    scrub_pat_t *pats;
    size_t npats, patcap;
    size_t maxlen;
    addon_leak_t *filter;
    /* Pattern numbers sorted by bytes, then length, then number: the patterns beginning with
     * byte c are order[lo[c] .. lo[c + 1]). */
    uint32_t *order;
    uint32_t lo[257];
};

struct addon_scrub_stream {
    const addon_scrub_t *m;
    unsigned char *buf; /* held bytes, then (during a feed) the next piece's first ones */
    size_t held;
    uint64_t *counts;
    uint64_t total;
};

/* ---- patterns ------------------------------------------------------------------------- */

static int scrub_reserve(addon_scrub_t *m, size_t extra)
{
    int rc = addon_blob_reserve(&m->blob, &m->blobcap, m->bloblen, extra, SCRUB_BLOB_MAX);
    if (rc != 0)
        return rc;
    return px_grow(&m->pats, &m->patcap, m->npats + 1, sizeof(*m->pats), 64, SIZE_MAX);
}

/* Adds pattern p -> replacement r (both copied) for item, unless the item already has a
 * pattern with the same bytes (the earlier encoding's replacement stays). */
static int scrub_add(addon_scrub_t *m, uint32_t item, addon_leak_enc_t enc, const char *p,
                     size_t plen, const char *r, size_t rlen)
{
    if (plen == 0)
        return 0;
    for (size_t k = m->npats; k > 0 && m->pats[k - 1].item == item; k--) {
        const scrub_pat_t *q = &m->pats[k - 1];
        if (q->len == plen && memcmp(m->blob + q->off, p, plen) == 0)
            return 0;
    }
    int rc = scrub_reserve(m, plen + rlen);
    if (rc != 0)
        return rc;
    scrub_pat_t *n = &m->pats[m->npats++];
    n->off = m->bloblen;
    n->len = plen;
    memcpy(m->blob + m->bloblen, p, plen);
    m->bloblen += plen;
    n->roff = m->bloblen;
    n->rlen = rlen;
    if (rlen > 0)
        memcpy(m->blob + m->bloblen, r, rlen);
    m->bloblen += rlen;
    n->item = item;
    n->enc = enc;
    if (plen > m->maxlen)
        m->maxlen = plen;
    return 0;
}

static int scrub_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* Percent-encoding (out: 3 * len bytes at most); returns the length. */
static size_t scrub_url(addon_str_t v, const char *digits, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < v.len; i++) {
        unsigned char c = (unsigned char)v.base[i];
        if (scrub_unreserved(c)) {
            out[n++] = (char)c;
        } else {
            out[n++] = '%';
            out[n++] = digits[c >> 4];
            out[n++] = digits[c & 15];
        }
    }
    return n;
}

static size_t scrub_hex(addon_str_t v, const char *digits, char *out)
{
    for (size_t i = 0; i < v.len; i++) {
        unsigned char c = (unsigned char)v.base[i];
        out[2 * i] = digits[c >> 4];
        out[2 * i + 1] = digits[c & 15];
    }
    return 2 * v.len;
}

/* Byte j of "align zero bytes, then v, then zeros". */
static unsigned scrub_vbyte(addon_str_t v, size_t align, size_t j)
{
    return j < align || j - align >= v.len ? 0 : (unsigned char)v.base[j - align];
}

/* The stable core of v at offset align (0..2) of a 3-byte group: the base64 characters whose
 * bits [6k, 6k + 6) all lie in v's bits [8 align, 8 (align + len)). Returns its length. */
static size_t scrub_core(addon_str_t v, size_t align, const char *alpha, char *out)
{
    size_t k0 = (8 * align + 5) / 6;
    size_t k1 = 8 * (align + v.len) / 6;
    for (size_t k = k0; k < k1; k++) {
        size_t bit = 6 * k;
        unsigned w = scrub_vbyte(v, align, bit / 8) << 8 | scrub_vbyte(v, align, bit / 8 + 1);
        out[k - k0] = alpha[(w >> (10 - bit % 8)) & 63];
    }
    return k1 > k0 ? k1 - k0 : 0;
}

static size_t scrub_b64(addon_str_t v, int flags, char *out, size_t cap)
{
    long n = px_b64_encode_as((const unsigned char *)v.base, v.len, flags, out, cap);
    return n > 0 ? (size_t)n : 0;
}

/* Every (pattern, replacement) of item i, in the order of the header. a and b are scratch
 * buffers of at least 3 * len + 8 bytes for v and s respectively. */
static int scrub_add_item(addon_scrub_t *m, uint32_t i, addon_str_t v, addon_str_t s, char *a,
                          size_t acap, char *b, size_t bcap)
{
    int rc = scrub_add(m, i, ADDON_LEAK_RAW, v.base, v.len, s.base, s.len);
    for (int k = 0; k < 2 && rc == 0; k++) {
        const char *d = k == 0 ? scrub_hex_upper : scrub_hex_lower;
        rc = scrub_add(m, i, ADDON_LEAK_URL, a, scrub_url(v, d, a), b, scrub_url(s, d, b));
    }
    for (int url = 0; url < 2 && rc == 0; url++) {
        addon_leak_enc_t enc = url ? ADDON_LEAK_BASE64URL : ADDON_LEAK_BASE64;
        int f = url ? PX_B64_URL : 0;
        rc = scrub_add(m, i, enc, a, scrub_b64(v, f, a, acap), b, scrub_b64(s, f, b, bcap));
        if (rc == 0)
            rc = scrub_add(m, i, enc, a, scrub_b64(v, f | PX_B64_NOPAD, a, acap), b,
                           scrub_b64(s, f | PX_B64_NOPAD, b, bcap));
        const char *alpha = url ? px_b64_url : px_b64_std;
        for (size_t al = 0; al < 3 && rc == 0; al++)
            rc = scrub_add(m, i, enc, a, scrub_core(v, al, alpha, a), b,
                           scrub_core(s, al, alpha, b));
    }
    for (int k = 0; k < 2 && rc == 0; k++) {
        const char *d = k == 0 ? scrub_hex_lower : scrub_hex_upper;
        rc = scrub_add(m, i, ADDON_LEAK_HEX, a, scrub_hex(v, d, a), b, scrub_hex(s, d, b));
    }
    return rc;
}

/* ---- the sorted table ----------------------------------------------------------------- */

typedef struct scrub_key {
    const unsigned char *p;
    size_t len;
    uint32_t idx;
} scrub_key_t;

static int scrub_cmp(const void *x, const void *y)
{
    const scrub_key_t *p = x;
    const scrub_key_t *q = y;
    int c = memcmp(p->p, q->p, p->len < q->len ? p->len : q->len);
    if (c != 0)
        return c;
    if (p->len != q->len)
        return p->len < q->len ? -1 : 1;
    return p->idx < q->idx ? -1 : 1;
}

static int scrub_table(addon_scrub_t *m)
{
    m->order = malloc((m->npats ? m->npats : 1) * sizeof(*m->order));
    scrub_key_t *keys = malloc((m->npats ? m->npats : 1) * sizeof(*keys));
    if (m->order == NULL || keys == NULL) {
        free(keys);
        return PX_ENOMEM;
    }
    for (size_t i = 0; i < m->npats; i++) {
        keys[i].p = m->blob + m->pats[i].off;
        keys[i].len = m->pats[i].len;
        keys[i].idx = (uint32_t)i;
    }
    qsort(keys, m->npats, sizeof(*keys), scrub_cmp);
    memset(m->lo, 0, sizeof(m->lo));
    for (size_t i = 0; i < m->npats; i++) {
        m->order[i] = keys[i].idx;
        m->lo[keys[i].p[0] + 1]++;
    }
    for (size_t c = 1; c <= 256; c++)
        m->lo[c] += m->lo[c - 1];
    free(keys);
    return 0;
}

/* The first pattern number in order[lo, hi) (all longer than d) whose byte d is >= c (or,
 * with above, > c). */
static size_t scrub_bound(const addon_scrub_t *m, size_t lo, size_t hi, size_t d, unsigned c,
                          int above)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        unsigned b = m->blob[m->pats[m->order[mid]].off + d];
        if (b < c || (above && b == c))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The longest pattern that begins t[0..n) (n >= 1; of equal ones the lowest number): 1 and
 * *pat; 0 when none does; -1 when that depends on bytes after t[n - 1] (never when final). */
static int scrub_longest(const addon_scrub_t *m, const unsigned char *t, size_t n, int final,
                         uint32_t *pat)
{
    size_t lo = m->lo[t[0]], hi = m->lo[t[0] + 1];
    int found = 0;
    for (size_t d = 1; lo < hi; d++) {
        /* order[lo, hi) begin with t[0..d); those exactly d long sort first */
        if (m->pats[m->order[lo]].len == d) {
            *pat = m->order[lo];
            found = 1;
            while (lo < hi && m->pats[m->order[lo]].len == d)
                lo++;
            if (lo == hi)
                break;
        }
        if (d == n)
            return final ? found : -1;
        lo = scrub_bound(m, lo, hi, d, t[d], 0);
        hi = scrub_bound(m, lo, hi, d, t[d], 1);
    }
    return found;
}

/* ---- building ------------------------------------------------------------------------- */

void addon_scrub_free(addon_scrub_t *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->nitems; i++)
        free(m->names[i]);
    free(m->names);
    addon_blob_free(m->blob, m->blobcap);
    free(m->pats);
    free(m->order);
    addon_leak_free(m->filter);
    free(m);
}

static int scrub_items(addon_scrub_t *m, const addon_scrub_item_t *items, size_t n)
{
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = items[i].value.len > items[i].surrogate.len ? items[i].value.len
                                                               : items[i].surrogate.len;
        if (l > SCRUB_BLOB_MAX)
            return PX_ETOOBIG;
        if (3 * l + 8 > cap)
            cap = 3 * l + 8;
    }
    char *a = malloc(cap ? cap : 1);
    char *b = malloc(cap ? cap : 1);
    int rc = a != NULL && b != NULL ? 0 : PX_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        m->names[i] = malloc(items[i].name.len + 1);
        if (m->names[i] == NULL) {
            rc = PX_ENOMEM;
            break;
        }
        memcpy(m->names[i], items[i].name.base, items[i].name.len);
        m->names[i][items[i].name.len] = '\0';
        m->nitems = i + 1;
        if (items[i].value.len >= ADDON_LEAK_MIN_LEN)
            rc = scrub_add_item(m, (uint32_t)i, items[i].value, items[i].surrogate, a, cap, b, cap);
    }
    if (a != NULL)
        OPENSSL_cleanse(a, cap);
    if (b != NULL)
        OPENSSL_cleanse(b, cap);
    free(a);
    free(b);
    return rc;
}

/* The filter: the secret guard's matcher over the same values (it skips and warns about the
 * same short ones). */
static int scrub_filter(addon_scrub_t *m, const addon_scrub_item_t *items, size_t n, char *warn,
                        size_t warnlen, size_t *nwarn)
{
    addon_leak_item_t *li = calloc(n ? n : 1, sizeof(*li));
    if (li == NULL)
        return PX_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        li[i].name = items[i].name;
        li[i].value = items[i].value;
        li[i].kind = ADDON_LEAK_SECRET;
    }
    int rc = addon_leak_new(li, n, &m->filter, warn, warnlen, nwarn);
    free(li);
    return rc;
}

int addon_scrub_new(const addon_scrub_item_t *items, size_t n, addon_scrub_t **out, char *warn,
                    size_t warnlen, size_t *nwarn)
{
    *out = NULL;
    if (warn != NULL && warnlen > 0)
        warn[0] = '\0';
    if (nwarn != NULL)
        *nwarn = 0;
    if (n > UINT32_MAX / 16)
        return PX_ETOOBIG;
    addon_scrub_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return PX_ENOMEM;
    m->names = calloc(n ? n : 1, sizeof(*m->names));
    int rc = m->names != NULL ? scrub_items(m, items, n) : PX_ENOMEM;
    if (rc == 0)
        rc = scrub_table(m);
    if (rc == 0)
        rc = scrub_filter(m, items, n, warn, warnlen, nwarn);
    if (rc != 0) {
        addon_scrub_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

static void scrub_push(addon_scrub_item_t *items, char (*names)[SCRUB_NAME_MAX], size_t *n,
                       size_t entry, const char *field, addon_str_t value, addon_str_t surrogate)
{
    if (value.base == NULL) /* an absent optional field */
        return;
    int w = snprintf(names[*n], SCRUB_NAME_MAX, "entry[%zu].%s", entry, field);
    items[*n].name.base = names[*n];
    items[*n].name.len = w > 0 ? (size_t)w : 0;
    items[*n].value = value;
    if (surrogate.base == NULL) {
        surrogate.base = ADDON_SCRUB_PLACEHOLDER;
        surrogate.len = sizeof(ADDON_SCRUB_PLACEHOLDER) - 1;
    }
    items[*n].surrogate = surrogate;
    (*n)++;
}

int addon_scrub_from_replacements(const addon_replacements_t *r, addon_scrub_t **out, char *warn,
                                  size_t warnlen, size_t *nwarn)
{
    size_t nent = addon_replacements_count(r);
    addon_scrub_item_t *items = calloc(nent ? 3 * nent : 1, sizeof(*items));
    char(*names)[SCRUB_NAME_MAX] = calloc(nent ? 3 * nent : 1, sizeof(*names));
    if (items == NULL || names == NULL) {
        free(items);
        free(names);
        *out = NULL;
        return PX_ENOMEM;
    }
    size_t n = 0;
    addon_str_t none = {NULL, 0};
    for (size_t i = 0; i < nent; i++) {
        addon_replacements_aws_t aws;
        if (addon_replacements_kind(r, i) == ADDON_REPLACEMENTS_MASKED) {
            scrub_push(items, names, &n, i, "value", addon_replacements_value(r, i),
                       addon_replacements_surrogate(r, i));
        } else if (addon_replacements_aws(r, i, &aws) == 0) {
            scrub_push(items, names, &n, i, "access_key_id", aws.access_key_id,
                       aws.surrogate_key_id);
            scrub_push(items, names, &n, i, "secret_access_key", aws.secret_access_key, none);
            scrub_push(items, names, &n, i, "session_token", aws.session_token,
                       aws.surrogate_session_token);
        }
    }
    int rc = addon_scrub_new(items, n, out, warn, warnlen, nwarn);
    free(items);
    free(names);
    return rc;
}

size_t addon_scrub_item_count(const addon_scrub_t *m)
{
    return m != NULL ? m->nitems : 0;
}

const char *addon_scrub_item_name(const addon_scrub_t *m, size_t i)
{
    return m != NULL && i < m->nitems ? m->names[i] : NULL;
}

size_t addon_scrub_max_pattern_len(const addon_scrub_t *m)
{
    return m != NULL ? m->maxlen : 0;
}

size_t addon_scrub_pattern_count(const addon_scrub_t *m)
{
    return m != NULL ? m->npats : 0;
}

addon_str_t addon_scrub_pattern(const addon_scrub_t *m, size_t i, addon_str_t *replacement,
                                addon_leak_enc_t *enc, size_t *item)
{
    addon_str_t v = {NULL, 0};
    if (m == NULL || i >= m->npats)
        return v;
    const scrub_pat_t *p = &m->pats[i];
    v.base = (const char *)m->blob + p->off;
    v.len = p->len;
    if (replacement != NULL) {
        replacement->base = (const char *)m->blob + p->roff;
        replacement->len = p->rlen;
    }
    if (enc != NULL)
        *enc = p->enc;
    if (item != NULL)
        *item = p->item;
    return v;
}

/* ---- scrubbing ------------------------------------------------------------------------ */

typedef struct scrub_run {
    const addon_scrub_t *m;
    uint64_t *counts; /* may be NULL */
    uint64_t total;
    addon_scrub_emit_cb emit;
    void *arg;
} scrub_run_t;

static int scrub_out(scrub_run_t *r, const unsigned char *p, size_t len)
{
    return len > 0 ? r->emit(r->arg, (const char *)p, len) : 0;
}

/* Decides positions *pp .. to - 1 of t[0..n) (to <= n) one by one, emitting t's bytes and the
 * replacement of each longest match (which may run past to). Stops early at a position whose
 * decision needs bytes past t[n - 1] (not when final): *pp < to then. 0 or emit's error. */
static int scrub_exact(scrub_run_t *r, const unsigned char *t, size_t n, size_t *pp, size_t to,
                       int final)
{
    const addon_scrub_t *m = r->m;
    size_t p = *pp, run = p;
    int rc = 0;
    while (p < to) {
        uint32_t k;
        int hit = scrub_longest(m, t + p, n - p, final, &k);
        if (hit < 0)
            break;
        if (hit == 0) {
            p++;
            continue;
        }
        const scrub_pat_t *pat = &m->pats[k];
        rc = scrub_out(r, t + run, p - run);
        if (rc == 0)
            rc = scrub_out(r, m->blob + pat->roff, pat->rlen);
        if (rc != 0)
            return rc;
        if (r->counts != NULL)
            r->counts[pat->item]++;
        r->total++;
        p += pat->len;
        run = p;
    }
    *pp = p;
    return scrub_out(r, t + run, p - run);
}

/* Decides t[*pp .. n): the filter finds where a pattern may lie wholly in it (every pattern
 * holds one of the filter's); scrub_exact decides the longest pattern's length before each
 * place it reports, and the bytes at the end that may begin a pattern (the filter's state
 * depth: every proper prefix of a pattern here is a prefix of one of the filter's, or holds
 * one whole). Everything else is emitted as it is. *pp ends at the first undecided byte. */
static int scrub_body(scrub_run_t *r, const unsigned char *t, size_t n, size_t *pp, int final)
{
    const addon_scrub_t *m = r->m;
    size_t p = *pp, base = p, fpos = p;
    addon_leak_state_t ls;
    addon_leak_state_init(&ls);
    int rc = 0;
    while (fpos < n) {
        addon_leak_match_t mt;
        if (addon_leak_feed(m->filter, &ls, t + fpos, n - fpos, &mt) == 0)
            break;
        size_t e = base + (size_t)mt.end;
        size_t start = e > m->maxlen ? e - m->maxlen : 0;
        if (start > p) {
            rc = scrub_out(r, t + p, start - p);
            p = start;
        }
        fpos = e;
        if (rc == 0)
            rc = scrub_exact(r, t, n, &p, e, final);
        if (rc != 0 || p < e) {
            *pp = p;
            return rc;
        }
    }
    size_t tail = n - addon_leak_pending(m->filter, &ls);
    if (tail > p) {
        rc = scrub_out(r, t + p, tail - p);
        p = tail;
    }
    if (rc == 0)
        rc = scrub_exact(r, t, n, &p, n, final);
    *pp = p;
    return rc;
}

addon_scrub_stream_t *addon_scrub_stream_new(const addon_scrub_t *m)
{
    addon_scrub_stream_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return NULL;
    st->m = m;
    size_t cap = m != NULL && m->maxlen > 0 ? 2 * m->maxlen : 1;
    st->buf = malloc(cap);
    st->counts = calloc(m != NULL && m->nitems > 0 ? m->nitems : 1, sizeof(*st->counts));
    if (st->buf == NULL || st->counts == NULL) {
        addon_scrub_stream_free(st);
        return NULL;
    }
    return st;
}

void addon_scrub_stream_free(addon_scrub_stream_t *st)
{
    if (st == NULL)
        return;
    if (st->buf != NULL && st->m != NULL)
        OPENSSL_cleanse(st->buf, st->m->maxlen > 0 ? 2 * st->m->maxlen : 1);
    free(st->buf);
    free(st->counts);
    free(st);
}

/* The held bytes followed by the piece's first ones: their positions are decided (a match
 * beginning in the held bytes ends within maxlen - 1 bytes of the piece, so none of them can
 * need more unless the whole piece fit). *pp: where the piece goes on. */
static int scrub_seam(addon_scrub_stream_t *st, scrub_run_t *r, const unsigned char *d, size_t len,
                      size_t *pp)
{
    size_t held = st->held;
    size_t k = len < st->m->maxlen - 1 ? len : st->m->maxlen - 1;
    memcpy(st->buf + held, d, k);
    size_t q = 0;
    int rc = scrub_exact(r, st->buf, held + k, &q, held, 0);
    if (q < held) { /* undecided: only when k == len, so the whole piece is in buf */
        memmove(st->buf, st->buf + q, held + k - q);
        st->held = held + k - q;
        *pp = len;
        return rc;
    }
    st->held = 0;
    *pp = q - held;
    return rc;
}

int addon_scrub_stream_feed(addon_scrub_stream_t *st, const void *data, size_t len,
                            addon_scrub_emit_cb emit, void *arg)
{
    const addon_scrub_t *m = st->m;
    if (len == 0)
        return 0;
    if (m == NULL || m->npats == 0)
        return emit(arg, data, len);
    scrub_run_t r = {m, st->counts, 0, emit, arg};
    const unsigned char *d = data;
    size_t p = 0;
    int rc = 0;
    if (st->held > 0)
        rc = scrub_seam(st, &r, d, len, &p);
    if (rc == 0 && p < len) {
        rc = scrub_body(&r, d, len, &p, 0);
        if (rc == 0 && p < len) { /* fewer than maxlen bytes: scrub_longest never walks more */
            memcpy(st->buf, d + p, len - p);
            st->held = len - p;
        }
    }
    st->total += r.total;
    return rc;
}

int addon_scrub_stream_flush(addon_scrub_stream_t *st, addon_scrub_emit_cb emit, void *arg)
{
    if (st->held == 0)
        return 0;
    scrub_run_t r = {st->m, st->counts, 0, emit, arg};
    size_t q = 0, held = st->held;
    st->held = 0;
    int rc = scrub_exact(&r, st->buf, held, &q, held, 1);
    st->total += r.total;
    return rc;
}

size_t addon_scrub_stream_held(const addon_scrub_stream_t *st)
{
    return st->held;
}

uint64_t addon_scrub_stream_total(const addon_scrub_stream_t *st)
{
    return st->total;
}

uint64_t addon_scrub_stream_count(const addon_scrub_stream_t *st, size_t i)
{
    return st->m != NULL && i < st->m->nitems ? st->counts[i] : 0;
}

const uint64_t *addon_scrub_stream_counts(const addon_scrub_stream_t *st)
{
    return st->counts;
}

size_t addon_scrub_describe(const addon_scrub_t *m, const uint64_t *counts, char *buf, size_t len)
{
    uint64_t total = 0;
    for (size_t i = 0; i < addon_scrub_item_count(m); i++)
        total += counts[i];
    size_t pos = 0;
#define SCRUB_PUT(...)                                                                             \
    do {                                                                                           \
        int w_ = snprintf(buf != NULL && pos < len ? buf + pos : NULL,                             \
                          buf != NULL && pos < len ? len - pos : 0, __VA_ARGS__);                  \
        pos += w_ > 0 ? (size_t)w_ : 0;                                                            \
    } while (0)
    if (buf != NULL && len > 0)
        buf[0] = '\0';
    if (total == 0)
        return 0;
    SCRUB_PUT("[scrubbed: %llu", (unsigned long long)total);
    const char *sep = " ";
    for (size_t i = 0; i < m->nitems; i++) {
        if (counts[i] == 0)
            continue;
        SCRUB_PUT("%s%s", sep, m->names[i]);
        sep = ", ";
    }
    SCRUB_PUT("]");
#undef SCRUB_PUT
    return pos;
}

/* ---- one-shot ------------------------------------------------------------------------- */

static int on_once_emit(void *arg, const char *data, size_t len)
{
    return px_buf_append(arg, data, len) == 0 ? 0 : PX_ENOMEM;
}

int addon_scrub_once(const addon_scrub_t *m, const void *data, size_t len, char **out,
                     size_t *outlen, uint64_t *counts)
{
    addon_leak_match_t mt;
    if (m == NULL || m->npats == 0 || addon_leak_scan(m->filter, data, len, &mt) == 0)
        return 0;
    px_buf_t b;
    px_buf_init(&b, 256, SIZE_MAX);
    scrub_run_t r = {m, counts, 0, on_once_emit, &b};
    size_t p = 0;
    int rc = scrub_body(&r, data, len, &p, 1);
    if (rc != 0 || r.total == 0) {
        px_buf_free(&b);
        return rc;
    }
    *out = b.data;
    *outlen = b.len;
    return 1;
}
