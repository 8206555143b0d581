/* addon_scrub: every encoding of every value is replaced by the surrogate in the same
 * encoding (the encoders here are written independently, base64 through OpenSSL); the value
 * inside a larger base64 text at each offset mod 3; streaming equals one-shot at every split
 * point and byte by byte; nothing else changes (near misses, random bytes); leftmost-longest;
 * the held bytes never pass longest - 1; 40 values against a naive reference; the items a
 * replacements file gives, and the "[scrubbed: N ...]" annotation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "addons/addon_replacements.h"
#include "addons/addon_scrub.h"
#include "base/px_err.h"

#define TEXT_MAX 8192

typedef struct pair_case {
    const char *name;
    const char *value;
    size_t vlen;
    const char *surrogate;
    size_t slen;
} pair_case_t;

#define P(n, v, s)                                                                                 \
    {                                                                                              \
        n, v, sizeof(v) - 1, s, sizeof(s) - 1                                                      \
    }
static const pair_case_t pairs[] = {
    P("gh", "ghp_REALSECRETtoken0123", "ghp_SURROGATE000000000000000"),
    P("sym", "p@ss/w0rd+key=!xyz~", "sur/rog+ate=~!"),
    P("bin",
      "\x00\xff\xfe\x80"
      "abc\x01\x02",
      "\x01\x02surrogate"),
    P("min", "12345678", "abcdefgh"),
    P("aws", "AKIAREALSECRET000000", "AKIASURROGATE0000000"),
    P("sp", "with space and ?&= chars", "SURROGATE with space"),
    P("empty", "to-be-removed-entirely", ""),
};
#define NPAIRS (sizeof(pairs) / sizeof(pairs[0]))

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static addon_scrub_t *build(const pair_case_t *pc, size_t n)
{
    addon_scrub_item_t items[64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++) {
        items[i].name.base = pc[i].name;
        items[i].name.len = strlen(pc[i].name);
        items[i].value.base = pc[i].value;
        items[i].value.len = pc[i].vlen;
        items[i].surrogate.base = pc[i].surrogate;
        items[i].surrogate.len = pc[i].slen;
    }
    addon_scrub_t *m = NULL;
    size_t nwarn = 99;
    assert_int_equal(addon_scrub_new(items, n, &m, NULL, 0, &nwarn), 0);
    assert_int_equal(nwarn, 0);
    return m;
}

/* ---- independent encoders ------------------------------------------------------------- */

typedef enum enc {
    E_RAW,
    E_URL_U,
    E_URL_L,
    E_B64,
    E_B64_NOPAD,
    E_B64URL,
    E_B64URL_NOPAD,
    E_HEX_L,
    E_HEX_U,
    E_COUNT
} enc_t;

static size_t encode(enc_t e, const unsigned char *v, size_t n, char *out)
{
    static const char *const keep =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    size_t o = 0;
    switch (e) {
    case E_RAW:
        memcpy(out, v, n);
        return n;
    case E_URL_U:
    case E_URL_L:
        for (size_t i = 0; i < n; i++) {
            if (v[i] != 0 && strchr(keep, v[i]) != NULL)
                out[o++] = (char)v[i];
            else
                o += (size_t)snprintf(out + o, 4, e == E_URL_U ? "%%%02X" : "%%%02x", v[i]);
        }
        return o;
    case E_HEX_L:
    case E_HEX_U:
        for (size_t i = 0; i < n; i++)
            snprintf(out + 2 * i, 3, e == E_HEX_U ? "%02X" : "%02x", v[i]);
        return 2 * n;
    default:
        break;
    }
    int len = EVP_EncodeBlock((unsigned char *)out, v, (int)n);
    int url = e == E_B64URL || e == E_B64URL_NOPAD;
    for (int i = 0; url && i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    if (e == E_B64_NOPAD || e == E_B64URL_NOPAD)
        while (len > 0 && out[len - 1] == '=')
            len--;
    return (size_t)len;
}

/* ---- helpers -------------------------------------------------------------------------- */

typedef struct sink {
    char *p;
    size_t len, cap;
    int fail_after; /* emits before an error, -1 never */
} sink_t;

static int on_emit(void *arg, const char *data, size_t len)
{
    sink_t *s = arg;
    if (s->fail_after == 0)
        return PX_EIO;
    if (s->fail_after > 0)
        s->fail_after--;
    assert_true(len > 0);
    if (s->len + len > s->cap) {
        s->cap = (s->len + len) * 2;
        s->p = realloc(s->p, s->cap);
        assert_non_null(s->p);
    }
    memcpy(s->p + s->len, data, len);
    s->len += len;
    return 0;
}

/* One-shot output of t (a copy of t when nothing is replaced), into *out (malloc'ed). */
static size_t once(const addon_scrub_t *m, const char *t, size_t n, char **out, uint64_t *counts)
{
    size_t olen = 0;
    int rc = addon_scrub_once(m, t, n, out, &olen, counts);
    assert_true(rc == 0 || rc == 1);
    if (rc == 0) {
        *out = malloc(n ? n : 1);
        memcpy(*out, t, n);
        olen = n;
    }
    return olen;
}

/* Feeds t cut at the given points (ascending); checks the held bound after every feed. */
static void stream_cuts(const addon_scrub_t *m, const char *t, size_t n, const size_t *cuts,
                        size_t ncuts, sink_t *s, uint64_t *total)
{
    addon_scrub_stream_t *st = addon_scrub_stream_new(m);
    assert_non_null(st);
    size_t max = addon_scrub_max_pattern_len(m);
    size_t from = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t to = c < ncuts ? cuts[c] : n;
        assert_int_equal(addon_scrub_stream_feed(st, t + from, to - from, on_emit, s), 0);
        assert_true(addon_scrub_stream_held(st) <= (max ? max - 1 : 0));
        assert_int_equal(s->len + addon_scrub_stream_held(st) >= s->len, 1);
        from = to;
    }
    assert_int_equal(addon_scrub_stream_flush(st, on_emit, s), 0);
    assert_int_equal(addon_scrub_stream_held(st), 0);
    if (total != NULL)
        *total = addon_scrub_stream_total(st);
    addon_scrub_stream_free(st);
}

/* Whole, every split in two, byte by byte: the same output as one-shot, which is want. */
static void check_all_splits(const addon_scrub_t *m, const char *t, size_t n, const char *want,
                             size_t wantlen)
{
    char *one;
    size_t olen = once(m, t, n, &one, NULL);
    if (olen != wantlen || memcmp(one, want, wantlen) != 0)
        fail_msg("one-shot output differs (%zu bytes, want %zu)", olen, wantlen);
    for (size_t k = 0; k <= n; k++) {
        sink_t s = {NULL, 0, 0, -1};
        stream_cuts(m, t, n, &k, 1, &s, NULL);
        if (s.len != wantlen || memcmp(s.p, want, wantlen) != 0)
            fail_msg("split at %zu of %zu differs", k, n);
        free(s.p);
    }
    size_t *cuts = malloc((n + 1) * sizeof(*cuts));
    for (size_t k = 0; k < n; k++)
        cuts[k] = k + 1;
    sink_t s = {NULL, 0, 0, -1};
    stream_cuts(m, t, n, cuts, n, &s, NULL);
    assert_int_equal(s.len, wantlen);
    assert_memory_equal(s.p, want, wantlen);
    free(s.p);
    free(cuts);
    free(one);
}

/* The naive reference: at each position the longest pattern (of equal bytes the first), the
 * patterns tried being those that begin with the position's byte. */
static size_t naive(const addon_scrub_t *m, const char *t, size_t n, char *out, uint64_t *count)
{
    size_t np = addon_scrub_pattern_count(m);
    size_t *by = malloc((np + 1) * sizeof(*by)), start[257] = {0};
    for (size_t k = 0; k < np; k++)
        start[(unsigned char)addon_scrub_pattern(m, k, NULL, NULL, NULL).base[0] + 1]++;
    for (size_t c = 1; c <= 256; c++)
        start[c] += start[c - 1];
    size_t fill[256];
    memcpy(fill, start, sizeof(fill));
    for (size_t k = 0; k < np; k++) /* in pattern order within each byte */
        by[fill[(unsigned char)addon_scrub_pattern(m, k, NULL, NULL, NULL).base[0]]++] = k;
    size_t o = 0;
    *count = 0;
    for (size_t i = 0; i < n;) {
        size_t best = SIZE_MAX, bestlen = 0;
        unsigned char c = (unsigned char)t[i];
        for (size_t j = start[c]; j < start[c + 1]; j++) {
            addon_str_t p = addon_scrub_pattern(m, by[j], NULL, NULL, NULL);
            if (p.len > bestlen && p.len <= n - i && memcmp(t + i, p.base, p.len) == 0) {
                best = by[j];
                bestlen = p.len;
            }
        }
        if (best == SIZE_MAX) {
            out[o++] = t[i++];
            continue;
        }
        addon_str_t r;
        addon_scrub_pattern(m, best, &r, NULL, NULL);
        memcpy(out + o, r.base, r.len);
        o += r.len;
        i += bestlen;
        (*count)++;
    }
    free(by);
    return o;
}

/* ---- tests ---------------------------------------------------------------------------- */

/* The encoding whose replacement applies: the first in the order above that gives the same
 * bytes for the value (a value without reserved bytes is its own URL encoding, ...). */
static enc_t want_enc(const pair_case_t *pc, enc_t e)
{
    char a[256], b[256];
    size_t al = encode(e, (const unsigned char *)pc->value, pc->vlen, a);
    for (enc_t f = 0; f < e; f++) {
        size_t bl = encode(f, (const unsigned char *)pc->value, pc->vlen, b);
        if (al == bl && memcmp(a, b, al) == 0)
            return f;
    }
    return e;
}

/* Each value in each encoding between delimiters becomes the surrogate in that encoding. */
static void test_addon_scrub_every_encoding(void **state)
{
    (void)state;
    addon_scrub_t *m = build(pairs, NPAIRS);
    char text[TEXT_MAX], want[TEXT_MAX];
    for (size_t i = 0; i < NPAIRS; i++) {
        const pair_case_t *pc = &pairs[i];
        for (enc_t e = 0; e < E_COUNT; e++) {
            size_t n = (size_t)snprintf(text, sizeof(text), "{\"k\": \"");
            size_t w = (size_t)snprintf(want, sizeof(want), "{\"k\": \"");
            n += encode(e, (const unsigned char *)pc->value, pc->vlen, text + n);
            w += encode(want_enc(pc, e), (const unsigned char *)pc->surrogate, pc->slen, want + w);
            memcpy(text + n, "\"}\n", 3);
            memcpy(want + w, "\"}\n", 3);
            uint64_t counts[NPAIRS] = {0};
            char *out;
            size_t olen = once(m, text, n + 3, &out, counts);
            if (olen != w + 3 || memcmp(out, want, w + 3) != 0)
                fail_msg("%s, encoding %d: got '%.*s', want '%.*s'", pc->name, (int)e, (int)olen,
                         out, (int)(w + 3), want);
            for (size_t k = 0; k < NPAIRS; k++)
                assert_int_equal(counts[k], k == i ? 1 : 0);
            free(out);
            check_all_splits(m, text, n + 3, want, w + 3);
        }
    }
    addon_scrub_free(m);
}

/* The value inside a larger base64 text at each offset mod 3: the real value is gone; with a
 * surrogate as long as the value, the decoded text holds the surrogate (but for the bits of
 * its first and last byte that the end characters share with the neighbours) and the text
 * after it decodes unchanged. */
static void test_addon_scrub_base64_embedded(void **state)
{
    (void)state;
    static const pair_case_t same[] = {
        P("tok", "tok_REAL_value_0123456789", "tok_SURR_value_9876543210"),
    };
    addon_scrub_t *m = build(same, 1);
    const pair_case_t *pc = &same[0];
    unsigned char raw[256], dec[256];
    char text[512], got[512];
    for (size_t pre = 0; pre < 6; pre++) {
        for (int url = 0; url < 2; url++) {
            size_t n = 0;
            memcpy(raw, "user:x", pre);
            n = pre;
            memcpy(raw + n, pc->value, pc->vlen);
            n += pc->vlen;
            memcpy(raw + n, ":suffix-bytes", 13);
            n += 13;
            size_t tl = encode(url ? E_B64URL : E_B64, raw, n, text);
            char *out;
            size_t olen = once(m, text, tl, &out, NULL);
            assert_int_equal(olen, tl);
            memcpy(got, out, olen);
            for (size_t i = 0; url && i < olen; i++)
                got[i] = got[i] == '-' ? '+' : got[i] == '_' ? '/' : got[i];
            int dl = EVP_DecodeBlock(dec, (unsigned char *)got, (int)olen);
            assert_true(dl >= (int)n);
            assert_memory_equal(dec, raw, pre);
            assert_memory_equal(dec + pre + 1, pc->surrogate + 1, pc->slen - 2);
            assert_memory_equal(dec + pre + pc->vlen, ":suffix-bytes", 13);
            assert_null(memmem(dec, n, pc->value + 1, pc->vlen - 2));
            check_all_splits(m, text, tl, out, olen);
            free(out);
        }
    }
    addon_scrub_free(m);
}

/* Near misses, other values' shapes and random bytes pass unchanged, with no count. */
static void test_addon_scrub_no_false_replacement(void **state)
{
    (void)state;
    addon_scrub_t *m = build(pairs, NPAIRS);
    static const struct {
        const char *text;
    } clean[] = {
        {"ghp_REALSECRETtoken012"}, /* a prefix */
        {"ghp_REALSECRETtoken0124"},
        {"hp_REALSECRETtoken0123"},
        {"ghp_REALSECRETtokeN0123"},
        {"1234567"},
        {"12345679"},
        {"AKIAREALSECRET00000"},
        {"p%40ss%2Fw0rd%2Bkey%3D%21xyz"},  /* cut short */
        {"p%40ss%2fw0rd%2Bkey%3D%21xyz~"}, /* mixed case */
        {"Z2hwX1JFQUxTRUNSRVR0b2tlbjAx"},  /* shorter than its core */
        {"6768705f5245414c534543524554746f6b656e303132"},
        {"with space and ?&= char"},
    };
    for (size_t i = 0; i < sizeof(clean) / sizeof(clean[0]); i++) {
        char *out = NULL;
        size_t olen = 0;
        uint64_t counts[NPAIRS] = {0};
        const char *t = clean[i].text;
        if (addon_scrub_once(m, t, strlen(t), &out, &olen, counts) != 0)
            fail_msg("false replacement in '%s': '%.*s'", t, (int)olen, out);
        check_all_splits(m, t, strlen(t), t, strlen(t));
    }
    size_t n = 1 << 20;
    char *body = malloc(n);
    for (size_t i = 0; i < n; i++)
        body[i] = (char)rng();
    size_t cuts[64];
    for (size_t c = 0; c < 64; c++)
        cuts[c] = (c + 1) * (n / 65) + (rng() % 1000);
    sink_t s = {NULL, 0, 0, -1};
    uint64_t total = 99;
    stream_cuts(m, body, n, cuts, 64, &s, &total);
    assert_int_equal(total, 0);
    assert_int_equal(s.len, n);
    assert_memory_equal(s.p, body, n);
    free(s.p);
    free(body);
    addon_scrub_free(m);
}

/* Overlapping and prefix values: the leftmost match wins, then the longest. */
static void test_addon_scrub_leftmost_longest(void **state)
{
    (void)state;
    static const pair_case_t ov[] = {
        P("short", "secret-value-01", "S1"), P("long", "secret-value-01-and-more", "L2"),
        P("left", "abcdefgh12", "X3"),       P("right", "gh12345678", "Y4"),
        P("dup", "secret-value-01", "D5"), /* the same value again: the first entry's */
    };
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"[secret-value-01]", "[S1]"},
        {"[secret-value-01-and-more]", "[L2]"},
        {"[secret-value-01-and-mor]", "[S1-and-mor]"},
        {"abcdefgh12345678", "X3345678"},
        {"zgh12345678", "zY4"},
        {"secret-value-01secret-value-01", "S1S1"},
    };
    addon_scrub_t *m = build(ov, 5);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_all_splits(m, cases[i].text, strlen(cases[i].text), cases[i].want,
                         strlen(cases[i].want));
    addon_scrub_free(m);
}

/* Text made of a value's prefixes keeps the stream waiting, never past longest - 1 bytes;
 * byte by byte and in pieces. */
static void test_addon_scrub_memory_bound(void **state)
{
    (void)state;
    addon_scrub_t *m = build(pairs, NPAIRS);
    size_t max = addon_scrub_max_pattern_len(m);
    assert_true(max > 0);
    size_t n = 200000;
    char *body = malloc(n);
    const char *v = pairs[0].value;
    size_t vl = pairs[0].vlen;
    for (size_t i = 0; i < n; i++)
        body[i] = v[i % (vl - 1)]; /* the value less its last byte, again and again */
    addon_scrub_stream_t *st = addon_scrub_stream_new(m);
    sink_t s = {NULL, 0, 0, -1};
    size_t fed = 0, peak = 0;
    while (fed < n) {
        size_t k = 1 + rng() % (fed < n / 2 ? 3 : 5000);
        if (k > n - fed)
            k = n - fed;
        assert_int_equal(addon_scrub_stream_feed(st, body + fed, k, on_emit, &s), 0);
        fed += k;
        size_t h = addon_scrub_stream_held(st);
        assert_true(h <= max - 1);
        assert_int_equal(s.len + h, fed); /* nothing replaced: every byte out or held */
        if (h > peak)
            peak = h;
    }
    assert_true(peak > 0);
    assert_int_equal(addon_scrub_stream_flush(st, on_emit, &s), 0);
    assert_int_equal(s.len, n);
    assert_memory_equal(s.p, body, n);
    assert_int_equal(addon_scrub_stream_total(st), 0);
    addon_scrub_stream_free(st);
    free(s.p);
    free(body);
    addon_scrub_free(m);
}

/* 40 values, each planted in every encoding at random places of a random body: random cuts,
 * byte-sized cuts near the plants and one-shot all equal the naive reference. */
static void test_addon_scrub_forty_values(void **state)
{
    (void)state;
    enum { NV = 40 };
    pair_case_t pc[NV];
    char vals[NV][48], surs[NV][48], names[NV][16];
    for (size_t i = 0; i < NV; i++) {
        size_t vl = 8 + rng() % 40, sl = rng() % 40;
        for (size_t k = 0; k < vl; k++)
            vals[i][k] = (char)(i % 3 == 0 ? rng() : 'A' + rng() % 58);
        for (size_t k = 0; k < sl; k++)
            surs[i][k] = (char)('a' + rng() % 26);
        snprintf(names[i], sizeof(names[i]), "v%zu", i);
        pc[i] = (pair_case_t){names[i], vals[i], vl, surs[i], sl};
    }
    addon_scrub_t *m = build(pc, NV);
    size_t n = 4 << 20;
    char *body = malloc(n);
    for (size_t i = 0; i < n; i++)
        body[i] = (char)rng();
    char enc[256];
    for (size_t i = 0; i < NV; i++) {
        for (enc_t e = 0; e < E_COUNT; e++) {
            size_t el = encode(e, (const unsigned char *)vals[i], pc[i].vlen, enc);
            size_t at = rng() % (n - el);
            memcpy(body + at, enc, el);
        }
    }
    char *want = malloc(2 * n);
    uint64_t nref;
    size_t wl = naive(m, body, n, want, &nref);
    assert_true(nref >= NV * 4); /* some plants overwrite others */
    char *one;
    size_t ol = once(m, body, n, &one, NULL);
    assert_int_equal(ol, wl);
    assert_memory_equal(one, want, wl);
    for (int round = 0; round < 3; round++) {
        size_t cuts[512], nc = 0, at = 0;
        while (nc < 512) {
            at += round == 0 ? 1 + rng() % 20000 : 1 + rng() % 200;
            if (at >= n)
                break;
            cuts[nc++] = at;
        }
        sink_t s = {NULL, 0, 0, -1};
        uint64_t total;
        stream_cuts(m, body, n, cuts, nc, &s, &total);
        assert_int_equal(s.len, wl);
        assert_memory_equal(s.p, want, wl);
        assert_int_equal(total, nref);
        free(s.p);
    }
    free(one);
    free(want);
    free(body);
    addon_scrub_free(m);
}

/* A replacements file: masked and aws-sigv4 entries give their items; the annotation names
 * them without a value; short values are skipped with a warning. */
static void test_addon_scrub_from_replacements(void **state)
{
    (void)state;
    static const char json[] =
        "{\"SURROGATE-masked-0001\": {\"value\": \"real-masked-value-01\","
        " \"scopes\": [\"a.example\"], \"headers\": [\"Authorization\"]},"
        " \"AKIASURROGATE0000000\": {\"type\": \"aws-sigv4\", \"access_key_id\":"
        " \"AKIAREALKEY000000000\", \"secret_access_key\": \"real/secret+key/0123456789\","
        " \"session_token\": \"real-session-token-abc\", \"surrogate_session_token\":"
        " \"surrogate-session\", \"scopes\": [\"*.amazonaws.com\"]},"
        " \"short-surrogate\": {\"value\": \"short\", \"scopes\": [\"b.example\"],"
        " \"headers\": [\"X-Key\"]}}";
    addon_replacements_t *r = NULL;
    char err[256];
    assert_int_equal(addon_replacements_load_buffer("t", json, strlen(json), &r, err, sizeof(err)),
                     0);
    addon_scrub_t *m = NULL;
    char warn[256];
    size_t nwarn = 0;
    assert_int_equal(addon_scrub_from_replacements(r, &m, warn, sizeof(warn), &nwarn), 0);
    assert_int_equal(nwarn, 1);
    assert_non_null(strstr(warn, "entry[2].value"));
    assert_null(strstr(warn, "short\n"));
    assert_int_equal(addon_scrub_item_count(m), 5);
    static const char in[] = "id=AKIAREALKEY000000000&tok=real-session-token-abc "
                             "sk=real%2Fsecret%2Bkey%2F0123456789 v=real-masked-value-01 short";
    static const char want[] = "id=AKIASURROGATE0000000&tok=surrogate-session "
                               "sk=" ADDON_SCRUB_PLACEHOLDER " v=SURROGATE-masked-0001 short";
    uint64_t counts[5] = {0};
    char *out = NULL;
    size_t olen = 0;
    assert_int_equal(addon_scrub_once(m, in, sizeof(in) - 1, &out, &olen, counts), 1);
    assert_int_equal(olen, sizeof(want) - 1);
    assert_memory_equal(out, want, olen);
    free(out);
    char note[256];
    size_t nl = addon_scrub_describe(m, counts, note, sizeof(note));
    assert_string_equal(note, "[scrubbed: 4 entry[0].value, entry[1].access_key_id, "
                              "entry[1].secret_access_key, entry[1].session_token]");
    assert_int_equal(nl, strlen(note));
    assert_null(strstr(note, "real"));
    uint64_t zero[5] = {0};
    assert_int_equal(addon_scrub_describe(m, zero, note, sizeof(note)), 0);
    assert_string_equal(note, "");
    addon_scrub_free(m);
    addon_replacements_unref(r);
}

/* No values (or no matcher): everything passes, nothing is held; an emit error stops a feed. */
static void test_addon_scrub_empty_and_errors(void **state)
{
    (void)state;
    addon_scrub_t *m = NULL;
    assert_int_equal(addon_scrub_new(NULL, 0, &m, NULL, 0, NULL), 0);
    assert_int_equal(addon_scrub_max_pattern_len(m), 0);
    static const char t[] = "anything at all";
    char *out = NULL;
    size_t olen = 0;
    assert_int_equal(addon_scrub_once(m, t, sizeof(t) - 1, &out, &olen, NULL), 0);
    assert_int_equal(addon_scrub_once(NULL, t, sizeof(t) - 1, &out, &olen, NULL), 0);
    check_all_splits(m, t, sizeof(t) - 1, t, sizeof(t) - 1);
    addon_scrub_stream_t *st = addon_scrub_stream_new(NULL);
    sink_t s = {NULL, 0, 0, -1};
    assert_int_equal(addon_scrub_stream_feed(st, t, sizeof(t) - 1, on_emit, &s), 0);
    assert_int_equal(s.len, sizeof(t) - 1);
    addon_scrub_stream_free(st);
    free(s.p);
    addon_scrub_free(m);

    m = build(pairs, NPAIRS);
    static const char hit[] = "a ghp_REALSECRETtoken0123 b";
    for (int after = 0; after < 3; after++) {
        st = addon_scrub_stream_new(m);
        sink_t f = {NULL, 0, 0, after};
        int rc = addon_scrub_stream_feed(st, hit, sizeof(hit) - 1, on_emit, &f);
        if (rc == 0)
            rc = addon_scrub_stream_flush(st, on_emit, &f);
        assert_int_equal(rc, PX_EIO);
        addon_scrub_stream_free(st);
        free(f.p);
    }
    addon_scrub_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addon_scrub_every_encoding),
        cmocka_unit_test(test_addon_scrub_base64_embedded),
        cmocka_unit_test(test_addon_scrub_no_false_replacement),
        cmocka_unit_test(test_addon_scrub_leftmost_longest),
        cmocka_unit_test(test_addon_scrub_memory_bound),
        cmocka_unit_test(test_addon_scrub_forty_values),
        cmocka_unit_test(test_addon_scrub_from_replacements),
        cmocka_unit_test(test_addon_scrub_empty_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
