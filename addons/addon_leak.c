#include "addons/addon_leak.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "addons/addon_blob.h"
#include "addons/addon_leak_int.h"
#include "base/px_b64.h"
#include "base/px_err.h"
#include "base/px_grow.h"

#define LEAK_ITEM_PATS 12 /* patterns one value can give (raw, 2 url, 6 base64, 2 hex) */
#define LEAK_WHAT_MAX 64  /* "entry[1023].secret_access_key" */

static const char leak_hex_lower[] = "0123456789abcdef";
static const char leak_hex_upper[] = "0123456789ABCDEF";

/* ---- patterns ------------------------------------------------------------------------- */

static int leak_reserve(addon_leak_t *m, size_t extra)
{
    int rc =
        addon_blob_reserve(&m->blob, &m->blobcap, m->bloblen, extra, ADDON_LEAK_MAX_PATTERN_BYTES);
    if (rc != 0)
        return rc;
    return px_grow(&m->pats, &m->patcap, m->npats + 1, sizeof(*m->pats), 64, SIZE_MAX);
}

/* Keeps the pattern just written at the blob's end (len bytes), unless the same item already
 * has the same bytes (a value without reserved bytes is its own URL encoding, and so on). */
static void leak_commit(addon_leak_t *m, size_t len, uint32_t item, addon_leak_enc_t enc)
{
    const unsigned char *p = m->blob + m->bloblen;
    for (size_t k = m->npats; k > 0 && m->pats[k - 1].item == item; k--) {
        const addon__leak_pat_t *q = &m->pats[k - 1];
        if (q->len == len && memcmp(m->blob + q->off, p, len) == 0)
            return;
    }
    if (len == 0)
        return;
    addon__leak_pat_t *n = &m->pats[m->npats++];
    n->off = m->bloblen;
    n->len = len;
    n->item = item;
    n->enc = enc;
    m->bloblen += len;
    if (len < m->minlen || m->minlen == 0)
        m->minlen = len;
    if (len > m->maxlen)
        m->maxlen = len;
}

static int leak_add_raw(addon_leak_t *m, addon_str_t v, uint32_t item)
{
    int rc = leak_reserve(m, v.len);
    if (rc != 0)
        return rc;
    memcpy(m->blob + m->bloblen, v.base, v.len);
    leak_commit(m, v.len, item, ADDON_LEAK_RAW);
    return 0;
}

static int leak_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* Percent-encoding of every byte outside the unreserved set (RFC 3986 2.3). */
static int leak_add_url(addon_leak_t *m, addon_str_t v, uint32_t item, const char *digits)
{
    int rc = leak_reserve(m, 3 * v.len);
    if (rc != 0)
        return rc;
    unsigned char *o = m->blob + m->bloblen;
    size_t n = 0;
    for (size_t i = 0; i < v.len; i++) {
        unsigned char c = (unsigned char)v.base[i];
        if (leak_unreserved(c)) {
            o[n++] = c;
        } else {
            o[n++] = '%';
            o[n++] = (unsigned char)digits[c >> 4];
            o[n++] = (unsigned char)digits[c & 15];
        }
    }
    leak_commit(m, n, item, ADDON_LEAK_URL);
    return 0;
}

static int leak_add_hex(addon_leak_t *m, addon_str_t v, uint32_t item, const char *digits)
{
    int rc = leak_reserve(m, 2 * v.len);
    if (rc != 0)
        return rc;
    unsigned char *o = m->blob + m->bloblen;
    for (size_t i = 0; i < v.len; i++) {
        unsigned char c = (unsigned char)v.base[i];
        o[2 * i] = (unsigned char)digits[c >> 4];
        o[2 * i + 1] = (unsigned char)digits[c & 15];
    }
    leak_commit(m, 2 * v.len, item, ADDON_LEAK_HEX);
    return 0;
}

/* Byte j of the virtual stream "align zero bytes, the value, zero bytes". */
static unsigned leak_vbyte(addon_str_t v, size_t align, size_t j)
{
    return j < align || j - align >= v.len ? 0 : (unsigned char)v.base[j - align];
}

/* The base64 characters that only the value decides when it starts at offset align (0..2)
 * of a 3-byte group: character k covers bits [6k, 6k+6) of the stream and is kept when they
 * all lie inside the value's bits [8 align, 8 (align + len)). */
static int leak_add_b64(addon_leak_t *m, addon_str_t v, uint32_t item, size_t align,
                        const char *alpha, addon_leak_enc_t enc)
{
    size_t k0 = (8 * align + 5) / 6;
    size_t k1 = 8 * (align + v.len) / 6;
    if (k1 <= k0)
        return 0;
    int rc = leak_reserve(m, k1 - k0);
    if (rc != 0)
        return rc;
    unsigned char *o = m->blob + m->bloblen;
    for (size_t k = k0; k < k1; k++) {
        size_t bit = 6 * k;
        unsigned w = leak_vbyte(v, align, bit / 8) << 8 | leak_vbyte(v, align, bit / 8 + 1);
        o[k - k0] = (unsigned char)alpha[(w >> (10 - bit % 8)) & 63];
    }
    leak_commit(m, k1 - k0, item, enc);
    return 0;
}

static int leak_add_value(addon_leak_t *m, addon_str_t v, uint32_t item)
{
    int rc = leak_add_raw(m, v, item);
    if (rc == 0)
        rc = leak_add_url(m, v, item, leak_hex_upper);
    if (rc == 0)
        rc = leak_add_url(m, v, item, leak_hex_lower);
    for (size_t a = 0; a < 3 && rc == 0; a++) {
        rc = leak_add_b64(m, v, item, a, px_b64_std, ADDON_LEAK_BASE64);
        if (rc == 0)
            rc = leak_add_b64(m, v, item, a, px_b64_url, ADDON_LEAK_BASE64URL);
    }
    if (rc == 0)
        rc = leak_add_hex(m, v, item, leak_hex_lower);
    if (rc == 0)
        rc = leak_add_hex(m, v, item, leak_hex_upper);
    return rc;
}

/* ---- automaton ------------------------------------------------------------------------ */

/* A pattern as qsort sees it (no context argument in C11 qsort: the key carries its bytes). */
typedef struct leak_key {
    const unsigned char *p;
    size_t len;
    uint32_t idx;
} leak_key_t;

/* Bytes, then shorter first, then file order: equal patterns keep the earliest item. */
static int leak_cmp(const void *a, const void *b)
{
    const leak_key_t *p = a;
    const leak_key_t *q = b;
    int c = memcmp(p->p, q->p, p->len < q->len ? p->len : q->len);
    if (c != 0)
        return c;
    if (p->len != q->len)
        return p->len < q->len ? -1 : 1;
    return p->idx < q->idx ? -1 : 1;
}

/* A trie of the sorted patterns with sibling lists: in sorted order an existing child for the
 * next byte is always the last child added. Returns the node count. */
static uint32_t leak_trie(const addon_leak_t *m, const leak_key_t *order, uint32_t *fc,
                          uint32_t *ns, uint32_t *lc, unsigned char *lab, int32_t *term)
{
    uint32_t n = 1;
    fc[0] = ns[0] = lc[0] = 0;
    term[0] = ADDON__LEAK_NONE;
    for (size_t i = 0; i < m->npats; i++) {
        const leak_key_t *p = &order[i];
        uint32_t s = 0;
        for (size_t k = 0; k < p->len; k++) {
            unsigned char c = p->p[k];
            uint32_t last = lc[s];
            if (last != 0 && lab[last] == c) {
                s = last;
                continue;
            }
            fc[n] = ns[n] = lc[n] = 0;
            lab[n] = c;
            term[n] = ADDON__LEAK_NONE;
            if (last != 0)
                ns[last] = n;
            else
                fc[s] = n;
            lc[s] = n;
            s = n++;
        }
        if (term[s] == ADDON__LEAK_NONE)
            term[s] = (int32_t)p->idx;
    }
    return n;
}

/* Renumbers the trie in BFS order into m (children consecutive), then sets failure links and
 * outputs (a failure link or dictionary suffix is shallower, so already set). */
static void leak_bfs(addon_leak_t *m, const uint32_t *fc, const uint32_t *ns,
                     const unsigned char *lab, const int32_t *term, uint32_t *queue)
{
    uint32_t head = 0, tail = 1;
    queue[0] = 0;
    uint32_t *parent = m->fail; /* parents first, failure links over them below */
    parent[0] = 0;
    while (head < tail) {
        uint32_t v = head, old = queue[head++];
        m->label[v] = lab[old];
        m->out[v] = term[old];
        m->first[v] = tail;
        m->cnt[v] = 0;
        for (uint32_t c = fc[old]; c != 0; c = ns[c]) {
            parent[tail] = v;
            queue[tail++] = c;
            m->cnt[v]++;
        }
    }
    memset(m->root, 0, sizeof(m->root));
    for (uint32_t c = m->first[0]; c < m->first[0] + m->cnt[0]; c++)
        m->root[m->label[c]] = c;
    m->out[0] = ADDON__LEAK_NONE;
    m->depth[0] = 0;
    for (uint32_t v = 1; v < m->nnodes; v++) {
        uint32_t u = parent[v];
        m->depth[v] = m->depth[u] + 1;
        uint32_t f = ADDON__LEAK_ROOT;
        if (u != ADDON__LEAK_ROOT)
            f = addon__leak_step(m, m->fail[u], m->label[v]);
        m->fail[v] = f;
        if (m->out[v] == ADDON__LEAK_NONE)
            m->out[v] = m->out[f];
    }
}

static int leak_build(addon_leak_t *m)
{
    if (m->npats == 0)
        return 0;
    size_t cap = m->bloblen + 1;
    leak_key_t *order = malloc(m->npats * sizeof(*order));
    uint32_t *fc = malloc(cap * sizeof(*fc));
    uint32_t *ns = malloc(cap * sizeof(*ns));
    uint32_t *lc = malloc(cap * sizeof(*lc));
    unsigned char *lab = malloc(cap);
    int32_t *term = malloc(cap * sizeof(*term));
    int rc = PX_ENOMEM;
    if (order == NULL || fc == NULL || ns == NULL || lc == NULL || lab == NULL || term == NULL)
        goto fail;
    for (size_t i = 0; i < m->npats; i++) {
        order[i].p = m->blob + m->pats[i].off;
        order[i].len = m->pats[i].len;
        order[i].idx = (uint32_t)i;
    }
    qsort(order, m->npats, sizeof(*order), leak_cmp);
    m->nnodes = leak_trie(m, order, fc, ns, lc, lab, term);
    m->first = malloc(m->nnodes * sizeof(*m->first));
    m->cnt = malloc(m->nnodes * sizeof(*m->cnt));
    m->fail = malloc(m->nnodes * sizeof(*m->fail));
    m->out = malloc(m->nnodes * sizeof(*m->out));
    m->label = malloc(m->nnodes);
    m->depth = malloc(m->nnodes * sizeof(*m->depth));
    if (m->first == NULL || m->cnt == NULL || m->fail == NULL || m->out == NULL ||
        m->label == NULL || m->depth == NULL)
        goto fail;
    leak_bfs(m, fc, ns, lab, term, lc);
    rc = addon__leak_tables_build(m);
fail:
    if (lab != NULL)
        OPENSSL_cleanse(lab, cap);
    free(term);
    free(lab);
    free(lc);
    free(ns);
    free(fc);
    free(order);
    return rc;
}

/* ---- building ------------------------------------------------------------------------- */

void addon_leak_free(addon_leak_t *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->nitems; i++)
        free(m->names[i]);
    free(m->names);
    free(m->kinds);
    addon_blob_free(m->blob, m->blobcap);
    free(m->pats);
    free(m->first);
    free(m->cnt);
    free(m->fail);
    free(m->out);
    if (m->label != NULL)
        OPENSSL_cleanse(m->label, m->nnodes);
    free(m->label);
    free(m->depth);
    addon__leak_tables_free(m);
    free(m);
}

static int leak_items(addon_leak_t *m, const addon_leak_item_t *items, size_t n, char *warn,
                      size_t warnlen, size_t *nwarn)
{
    size_t wpos = 0;
    for (size_t i = 0; i < n; i++) {
        const addon_leak_item_t *it = &items[i];
        m->names[i] = malloc(it->name.len + 1);
        if (m->names[i] == NULL)
            return PX_ENOMEM;
        memcpy(m->names[i], it->name.base, it->name.len);
        m->names[i][it->name.len] = '\0';
        m->kinds[i] = it->kind;
        m->nitems = i + 1;
        if (it->value.len < ADDON_LEAK_MIN_LEN) {
            int w = snprintf(warn != NULL && wpos < warnlen ? warn + wpos : NULL,
                             warn != NULL && wpos < warnlen ? warnlen - wpos : 0,
                             "%s %s: shorter than %d bytes, not scanned for\n",
                             addon_leak_kind_name(it->kind), m->names[i], ADDON_LEAK_MIN_LEN);
            wpos += w > 0 ? (size_t)w : 0;
            if (nwarn != NULL)
                (*nwarn)++;
            continue;
        }
        int rc = leak_add_value(m, it->value, (uint32_t)i);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int addon_leak_new(const addon_leak_item_t *items, size_t n, addon_leak_t **out, char *warn,
                   size_t warnlen, size_t *nwarn)
{
    *out = NULL;
    if (warn != NULL && warnlen > 0)
        warn[0] = '\0';
    if (nwarn != NULL)
        *nwarn = 0;
    if (n > UINT32_MAX / LEAK_ITEM_PATS)
        return PX_ETOOBIG;
    addon_leak_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return PX_ENOMEM;
    m->names = calloc(n ? n : 1, sizeof(*m->names));
    m->kinds = calloc(n ? n : 1, sizeof(*m->kinds));
    int rc = PX_ENOMEM;
    if (m->names != NULL && m->kinds != NULL)
        rc = leak_items(m, items, n, warn, warnlen, nwarn);
    if (rc == 0)
        rc = leak_build(m);
    if (rc != 0) {
        addon_leak_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* Appends one item named "entry[i].field" (the name is formatted into names[]). */
static void leak_push(addon_leak_item_t *items, char (*names)[LEAK_WHAT_MAX], size_t *n,
                      size_t entry, const char *field, addon_str_t value)
{
    if (value.base == NULL) /* an absent optional field; an empty value gets a warning */
        return;
    int w = snprintf(names[*n], LEAK_WHAT_MAX, "entry[%zu].%s", entry, field);
    items[*n].name.base = names[*n];
    items[*n].name.len = w > 0 ? (size_t)w : 0;
    items[*n].value = value;
    items[*n].kind = ADDON_LEAK_SECRET;
    (*n)++;
}

int addon_leak_from_replacements(const addon_replacements_t *r, addon_leak_t **out, char *warn,
                                 size_t warnlen, size_t *nwarn)
{
    size_t nent = addon_replacements_count(r);
    size_t ncan = addon_replacements_canary_count(r);
    size_t cap = 3 * nent + ncan;
    addon_leak_item_t *items = calloc(cap ? cap : 1, sizeof(*items));
    char(*names)[LEAK_WHAT_MAX] = calloc(cap ? cap : 1, sizeof(*names));
    if (items == NULL || names == NULL) {
        free(items);
        free(names);
        *out = NULL;
        return PX_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < nent; i++) {
        addon_replacements_aws_t aws;
        if (addon_replacements_kind(r, i) == ADDON_REPLACEMENTS_MASKED) {
            leak_push(items, names, &n, i, "value", addon_replacements_value(r, i));
        } else if (addon_replacements_aws(r, i, &aws) == 0) {
            leak_push(items, names, &n, i, "access_key_id", aws.access_key_id);
            leak_push(items, names, &n, i, "secret_access_key", aws.secret_access_key);
            leak_push(items, names, &n, i, "session_token", aws.session_token);
        }
    }
    for (size_t i = 0; i < ncan; i++) {
        items[n].name = addon_replacements_canary_name(r, i);
        items[n].value = addon_replacements_canary_value(r, i);
        items[n].kind = ADDON_LEAK_CANARY;
        n++;
    }
    int rc = addon_leak_new(items, n, out, warn, warnlen, nwarn);
    free(items);
    free(names);
    return rc;
}

size_t addon_leak_pattern_count(const addon_leak_t *m)
{
    return m != NULL ? m->npats : 0;
}

addon_str_t addon_leak_pattern(const addon_leak_t *m, size_t i, addon_leak_enc_t *enc,
                               const char **name)
{
    addon_str_t v = {NULL, 0};
    if (m == NULL || i >= m->npats)
        return v;
    v.base = (const char *)m->blob + m->pats[i].off;
    v.len = m->pats[i].len;
    if (enc != NULL)
        *enc = m->pats[i].enc;
    if (name != NULL)
        *name = m->names[m->pats[i].item];
    return v;
}

size_t addon_leak_max_pattern_len(const addon_leak_t *m)
{
    return m != NULL ? m->maxlen : 0;
}

const char *addon_leak_enc_name(addon_leak_enc_t enc)
{
    switch (enc) {
    case ADDON_LEAK_RAW:
        return "raw";
    case ADDON_LEAK_URL:
        return "url";
    case ADDON_LEAK_BASE64:
        return "base64";
    case ADDON_LEAK_BASE64URL:
        return "base64url";
    case ADDON_LEAK_HEX:
        return "hex";
    }
    return "?";
}

const char *addon_leak_kind_name(addon_leak_kind_t kind)
{
    return kind == ADDON_LEAK_CANARY ? "canary" : "secret";
}
