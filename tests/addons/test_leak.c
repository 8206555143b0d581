/* addon_leak: every encoding of every value is found, embedded in larger texts (base64 and hex
 * at every alignment), at every split position across two chunks and byte by byte; similar
 * strings are not; short values are skipped with a warning; canaries from the replacements file
 * are reported by name; 1,000 patterns stay exact. The encoders here are written independently
 * of the matcher's (base64 through OpenSSL).
 *
 * `test_leak --bench [MiB]` instead prints the matcher's speed over random data (1 GiB by
 * default) with 50 secrets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "addons/addon_leak.h"
#include "addons/addon_leak_int.h" /* bmi2: both sampling paths are tested */
#include "addons/addon_replacements.h"
#include "base/px_err.h"

#define TEXT_MAX 4096

typedef struct value_case {
    const char *name;
    const char *value;
    size_t len;
} value_case_t;

#define V(n, s)                                                                                    \
    {                                                                                              \
        n, s, sizeof(s) - 1                                                                        \
    }
static const value_case_t values[] = {
    V("gh", "ghp_REALSECRETtoken0123"),
    V("sym", "p@ss/w0rd+key=!xyz~"),
    V("bin", "\x00\xff\xfe\x80"
             "abc\x01\x02"),
    V("min", "12345678"),
    V("aws", "AKIAREALSECRET000000"),
    V("sp", "with space and ?&= chars"),
};
#define NVALUES (sizeof(values) / sizeof(values[0]))

static const unsigned char noise[] = "\x5a\xa5\x13\x37\xc0\xde\xfb\xef";

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static addon_leak_t *build_values(void)
{
    addon_leak_item_t items[NVALUES];
    for (size_t i = 0; i < NVALUES; i++) {
        items[i].name.base = values[i].name;
        items[i].name.len = strlen(values[i].name);
        items[i].value.base = values[i].value;
        items[i].value.len = values[i].len;
        items[i].kind = ADDON_LEAK_SECRET;
    }
    addon_leak_t *m = NULL;
    size_t nwarn = 99;
    assert_int_equal(addon_leak_new(items, NVALUES, &m, NULL, 0, &nwarn), 0);
    assert_int_equal(nwarn, 0);
    return m;
}

/* ---- independent encoders ------------------------------------------------------------- */

static size_t enc_url(const unsigned char *v, size_t n, int upper, char *out)
{
    static const char *const keep =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] != 0 && strchr(keep, v[i]) != NULL)
            out[o++] = (char)v[i];
        else
            o += (size_t)snprintf(out + o, 4, upper ? "%%%02X" : "%%%02x", v[i]);
    }
    return o;
}

static size_t enc_hex(const unsigned char *v, size_t n, int upper, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, upper ? "%02X" : "%02x", v[i]);
    return 2 * n;
}

static size_t enc_b64(const unsigned char *v, size_t n, int url, char *out)
{
    int len = EVP_EncodeBlock((unsigned char *)out, v, (int)n);
    for (int i = 0; url && i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    return (size_t)len;
}

/* noise[0..pre] + value + noise[0..post] into buf; returns the length. */
static size_t embed(const value_case_t *vc, size_t pre, size_t post, unsigned char *buf)
{
    memcpy(buf, noise, pre);
    memcpy(buf + pre, vc->value, vc->len);
    memcpy(buf + pre + vc->len, noise, post);
    return pre + vc->len + post;
}

/* ---- checking ------------------------------------------------------------------------- */

static int enc_ok(addon_leak_enc_t got, addon_leak_enc_t want)
{
    /* A pattern equal to another of the same value is kept once, under the first encoding. */
    return got == want || (want == ADDON_LEAK_URL && got == ADDON_LEAK_RAW) ||
           (want == ADDON_LEAK_BASE64URL && got == ADDON_LEAK_BASE64);
}

/* Whole, every split in two, byte by byte: the same match everywhere. */
static void check_found(const addon_leak_t *m, const char *text, size_t len, const char *name,
                        addon_leak_enc_t enc)
{
    addon_leak_match_t one;
    assert_int_equal(addon_leak_scan(m, text, len, &one), 1);
    assert_string_equal(one.name, name);
    if (!enc_ok(one.enc, enc))
        fail_msg("%s: got %s, want %s", name, addon_leak_enc_name(one.enc),
                 addon_leak_enc_name(enc));
    assert_true(one.end <= len);
    for (size_t k = 0; k <= len; k++) {
        addon_leak_state_t st;
        addon_leak_match_t mt;
        addon_leak_state_init(&st);
        int hit = addon_leak_feed(m, &st, text, k, &mt);
        if (!hit)
            hit = addon_leak_feed(m, &st, text + k, len - k, &mt);
        assert_int_equal(hit, 1);
        assert_int_equal(mt.end, one.end);
        assert_ptr_equal(mt.name, one.name);
        assert_int_equal(mt.enc, one.enc);
    }
    addon_leak_state_t st;
    addon_leak_state_init(&st);
    addon_leak_match_t mt;
    size_t i = 0;
    while (i < len && !addon_leak_feed(m, &st, text + i, 1, &mt))
        i++;
    assert_true(i < len);
    assert_int_equal(mt.end, one.end);
    assert_int_equal(mt.end, i + 1);
}

static void check_clean(const addon_leak_t *m, const char *text, size_t len)
{
    addon_leak_match_t mt;
    if (addon_leak_scan(m, text, len, &mt))
        fail_msg("false positive: %s (%s) at %llu", mt.name, addon_leak_enc_name(mt.enc),
                 (unsigned long long)mt.end);
    addon_leak_state_t st;
    addon_leak_state_init(&st);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(addon_leak_feed(m, &st, text + i, 1, &mt), 0);
    assert_int_equal(st.pos, len);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_leak_raw_url_hex(void **state)
{
    (void)state;
    addon_leak_t *m = build_values();
    char text[TEXT_MAX];
    unsigned char buf[256];
    for (size_t i = 0; i < NVALUES; i++) {
        const value_case_t *vc = &values[i];
        size_t n = (size_t)snprintf(text, sizeof(text), "GET /x?a=");
        memcpy(text + n, vc->value, vc->len);
        n += vc->len;
        memcpy(text + n, " HTTP/1.1", 9);
        check_found(m, text, n + 9, vc->name, ADDON_LEAK_RAW);
        for (int upper = 0; upper < 2; upper++) {
            n = (size_t)snprintf(text, sizeof(text), "q=");
            n += enc_url((const unsigned char *)vc->value, vc->len, upper, text + n);
            text[n++] = '&';
            check_found(m, text, n, vc->name, ADDON_LEAK_URL);
            /* hex at every byte offset inside a larger hex text */
            for (size_t pre = 0; pre < 4; pre++) {
                for (size_t post = 0; post < 3; post++) {
                    size_t bl = embed(vc, pre, post, buf);
                    n = enc_hex(buf, bl, upper, text);
                    check_found(m, text, n, vc->name, ADDON_LEAK_HEX);
                }
            }
        }
    }
    addon_leak_free(m);
}

/* The value at every offset mod 3 (and then some) of a larger base64 text, both alphabets,
 * with and without padding at the end. */
static void test_leak_base64_alignments(void **state)
{
    (void)state;
    addon_leak_t *m = build_values();
    char text[TEXT_MAX];
    unsigned char buf[256];
    for (size_t i = 0; i < NVALUES; i++) {
        for (size_t pre = 0; pre < 7; pre++) {
            for (size_t post = 0; post < 4; post++) {
                for (int url = 0; url < 2; url++) {
                    size_t bl = embed(&values[i], pre, post, buf);
                    size_t n = (size_t)snprintf(text, sizeof(text), "Authorization: Basic ");
                    n += enc_b64(buf, bl, url, text + n);
                    check_found(m, text, n, values[i].name,
                                url ? ADDON_LEAK_BASE64URL : ADDON_LEAK_BASE64);
                }
            }
        }
    }
    addon_leak_free(m);
}

/* A middle byte changed, or the first or last byte missing: not the value. */
static void test_leak_no_false_positive(void **state)
{
    (void)state;
    addon_leak_t *m = build_values();
    char text[TEXT_MAX];
    for (size_t i = 0; i < NVALUES; i++) {
        value_case_t vc = values[i];
        unsigned char v[64];
        memcpy(v, vc.value, vc.len);
        v[vc.len / 2] ^= 0x01;
        size_t n;
        check_clean(m, (const char *)v, vc.len);
        for (int alt = 0; alt < 2; alt++) {
            n = enc_url(v, vc.len, alt, text);
            check_clean(m, text, n);
            n = enc_hex(v, vc.len, alt, text);
            check_clean(m, text, n);
            n = enc_b64(v, vc.len, alt, text);
            check_clean(m, text, n);
        }
        for (int cut = 0; cut < 2; cut++) {
            const unsigned char *t = (const unsigned char *)vc.value + cut;
            check_clean(m, (const char *)t, vc.len - 1);
            n = enc_url(t, vc.len - 1, 1, text);
            check_clean(m, text, n);
            n = enc_hex(t, vc.len - 1, 0, text);
            check_clean(m, text, n);
        }
    }
    static const char *const near[] = {"ghp_REALSECRETtoken012",
                                       "ghp_REALSECRETtoken0124",
                                       "GHP_REALSECRETTOKEN0123",
                                       "1234567",
                                       "2345678",
                                       "AKIAREALSECRET00000",
                                       "akiarealsecret000000"};
    for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++)
        check_clean(m, near[i], strlen(near[i]));
    addon_leak_free(m);
}

static void test_leak_min_len(void **state)
{
    (void)state;
    addon_leak_item_t items[] = {
        {{"short", 5}, {"REALSEC", 7}, ADDON_LEAK_SECRET},
        {{"empty", 5}, {"", 0}, ADDON_LEAK_CANARY},
        {{"ok", 2}, {"REALSECR", 8}, ADDON_LEAK_SECRET},
    };
    addon_leak_t *m = NULL;
    char warn[256];
    size_t nwarn = 0;
    assert_int_equal(addon_leak_new(items, 3, &m, warn, sizeof(warn), &nwarn), 0);
    assert_int_equal(nwarn, 2);
    assert_string_equal(warn, "secret short: shorter than 8 bytes, not scanned for\n"
                              "canary empty: shorter than 8 bytes, not scanned for\n");
    assert_null(strstr(warn, "REALSEC"));
    addon_leak_match_t mt;
    assert_int_equal(addon_leak_scan(m, "xREALSECx", 9, &mt), 0);
    assert_int_equal(addon_leak_scan(m, "xREALSECRx", 10, &mt), 1);
    assert_string_equal(mt.name, "ok");
    assert_int_equal(mt.end, 9);
    addon_leak_free(m);

    /* Only short values: a matcher that never matches; a NULL matcher is the same. */
    assert_int_equal(addon_leak_new(items, 2, &m, NULL, 0, NULL), 0);
    assert_int_equal(addon_leak_pattern_count(m), 0);
    assert_int_equal(addon_leak_scan(m, "REALSEC", 7, &mt), 0);
    addon_leak_free(m);
    assert_int_equal(addon_leak_scan(NULL, "REALSEC", 7, &mt), 0);
}

static const char canary_json[] =
    "{\"sur-one\": {\"value\": \"REALSECRETvalue1\", \"scopes\": [\"a.com\"], \"headers\": "
    "[\"X-Key\"]},\n"
    " \"canaries\": [{\"name\": \"ssh-marker\", \"value\": \"CANARY-7f3e9a-ssh\"},\n"
    "               {\"name\": \"fake_aws.key\", \"value\": \"AKIAFAKECANARY000000\"}],\n"
    " \"AKIASURROGATE0000000\": {\"type\": \"aws-sigv4\", \"access_key_id\": "
    "\"AKIAREALSECRET000000\", \"secret_access_key\": \"REALSECRETsecretkey\", "
    "\"session_token\": \"REALSECRETsessiontoken\", \"scopes\": [\"*.amazonaws.com\"]}}\n";

static const char canary_yaml[] = "sur-one:\n"
                                  "  value: REALSECRETvalue1\n"
                                  "  scopes: [a.com]\n"
                                  "  headers: [X-Key]\n"
                                  "canaries:\n"
                                  "  - name: ssh-marker\n"
                                  "    value: CANARY-7f3e9a-ssh\n"
                                  "  - {name: fake_aws.key, value: AKIAFAKECANARY000000}\n";

static void check_canaries(const char *doc, size_t len, size_t nentries)
{
    addon_replacements_t *r = NULL;
    char err[256];
    assert_int_equal(addon_replacements_load_buffer("t", doc, len, &r, err, sizeof(err)), 0);
    assert_int_equal(addon_replacements_count(r), nentries);
    assert_int_equal(addon_replacements_canary_count(r), 2);
    addon_str_t nm = addon_replacements_canary_name(r, 1);
    assert_int_equal(nm.len, 12);
    assert_memory_equal(nm.base, "fake_aws.key", 12);
    assert_null(addon_replacements_canary_name(r, 2).base);
    char desc[1024];
    addon_replacements_describe(r, desc, sizeof(desc));
    assert_non_null(strstr(desc, "canaries: ssh-marker, fake_aws.key\n"));
    assert_null(strstr(desc, "CANARY-"));

    addon_leak_t *m = NULL;
    assert_int_equal(addon_leak_from_replacements(r, &m, NULL, 0, NULL), 0);
    addon_leak_match_t mt;
    static const char ssh[] = "cat ~/.ssh/id: Q0FOQVJZLTdmM2U5YS1zc2g=";
    assert_int_equal(addon_leak_scan(m, ssh, sizeof(ssh) - 1, &mt), 1);
    assert_string_equal(mt.name, "ssh-marker");
    assert_int_equal(mt.kind, ADDON_LEAK_CANARY);
    assert_int_equal(mt.enc, ADDON_LEAK_BASE64);
    assert_int_equal(addon_leak_scan(m, "k=AKIAFAKECANARY000000", 22, &mt), 1);
    assert_string_equal(mt.name, "fake_aws.key");
    assert_int_equal(addon_leak_scan(m, "x: REALSECRETvalue1", 19, &mt), 1);
    assert_string_equal(mt.name, "entry[0].value");
    assert_int_equal(mt.kind, ADDON_LEAK_SECRET);
    if (nentries == 2) {
        assert_int_equal(addon_leak_scan(m, "REALSECRETsecretkey", 19, &mt), 1);
        assert_string_equal(mt.name, "entry[1].secret_access_key");
        char hex[64];
        size_t hl = enc_hex((const unsigned char *)"AKIAREALSECRET000000", 20, 0, hex);
        assert_int_equal(addon_leak_scan(m, hex, hl, &mt), 1);
        assert_string_equal(mt.name, "entry[1].access_key_id");
        assert_int_equal(mt.enc, ADDON_LEAK_HEX);
        assert_int_equal(addon_leak_scan(m, "REALSECRETsessiontoken", 22, &mt), 1);
        assert_string_equal(mt.name, "entry[1].session_token");
    }
    addon_leak_free(m);
    addon_replacements_unref(r);
}

static void test_leak_canaries_from_replacements(void **state)
{
    (void)state;
    check_canaries(canary_json, sizeof(canary_json) - 1, 2);
    check_canaries(canary_yaml, sizeof(canary_yaml) - 1, 1);
}

/* Bad canary lists fail with a position and never echo a value; a "canaries" key holding a
 * mapping is still a surrogate (files written before canaries keep their meaning). */
static void test_leak_canary_syntax(void **state)
{
    (void)state;
    static const struct {
        const char *doc;
        const char *want;
    } cases[] = {
        {"canaries: [{name: 'a b', value: CANARYSECRETx}]", "t:1:19: canaries[0].name: 1 to 64"},
        {"canaries: [{name: a, value: CANARYSECRETx}, {name: a, value: CANARYSECRETy}]",
         "t:1:52: canaries[1].name: same name as canaries[0]"},
        {"canaries: [{name: a}]", "t:1:12: canaries[0]: missing required key"},
        {"canaries: [{name: a, value: ''}]", "t:1:29: canaries[0].value: empty"},
        {"canaries: [{name: a, value: CANARYSECRETx, scopes: []}]", "canaries[0]: unknown key"},
        {"canaries: [CANARYSECRETx]", "t:1:12: canaries[0]: expected"},
        {"canaries: [{name: a, value: [CANARYSECRETx]}]", "canaries[0].value"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        addon_replacements_t *r = NULL;
        char err[256];
        int rc = addon_replacements_load_buffer("t", cases[i].doc, strlen(cases[i].doc), &r, err,
                                                sizeof(err));
        assert_true(rc < 0);
        assert_null(r);
        if (strstr(err, cases[i].want) == NULL)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, err, cases[i].want);
        assert_null(strstr(err, "CANARYSECRET"));
    }
    static const char old[] =
        "canaries: {value: REALSECRETvalue1, scopes: [a.com], headers: [X-Key]}";
    addon_replacements_t *r = NULL;
    assert_int_equal(addon_replacements_load_buffer("t", old, sizeof(old) - 1, &r, NULL, 0), 0);
    assert_int_equal(addon_replacements_count(r), 1);
    assert_int_equal(addon_replacements_canary_count(r), 0);
    assert_int_equal(addon_replacements_surrogate(r, 0).len, 8);
    addon_replacements_unref(r);
}

/* 1,000 random values, each found by name in random noise, fed in random-sized pieces. */
static void test_leak_many_patterns(void **state)
{
    (void)state;
    enum { N = 1000 };
    static unsigned char vals[N][48];
    static char names[N][16];
    static addon_leak_item_t items[N];
    for (size_t i = 0; i < N; i++) {
        size_t len = 8 + (size_t)(rng() % 40);
        for (size_t k = 0; k < len; k++)
            vals[i][k] = (unsigned char)rng();
        snprintf(names[i], sizeof(names[i]), "p%zu", i);
        items[i] = (addon_leak_item_t){{names[i], strlen(names[i])},
                                       {(const char *)vals[i], len},
                                       i % 2 ? ADDON_LEAK_CANARY : ADDON_LEAK_SECRET};
    }
    addon_leak_t *m = NULL;
    assert_int_equal(addon_leak_new(items, N, &m, NULL, 0, NULL), 0);
    assert_true(addon_leak_pattern_count(m) >= 9 * N);
    static char text[TEXT_MAX];
    for (size_t i = 0; i < N; i++) {
        size_t pre = 50 + (size_t)(rng() % 50);
        for (size_t k = 0; k < pre; k++)
            text[k] = (char)('a' + rng() % 26);
        size_t n = pre;
        const unsigned char *v = vals[i];
        size_t vl = items[i].value.len;
        switch (i % 4) {
        case 0:
            memcpy(text + n, v, vl);
            n += vl;
            break;
        case 1:
            n += enc_url(v, vl, 1, text + n);
            break;
        case 2:
            n += enc_b64(v, vl, i % 8 == 2, text + n);
            break;
        default:
            n += enc_hex(v, vl, i % 8 == 3, text + n);
        }
        memcpy(text + n, "--tail--", 8);
        n += 8;
        addon_leak_state_t st;
        addon_leak_state_init(&st);
        addon_leak_match_t mt;
        int hit = 0;
        for (size_t off = 0; off < n && !hit;) {
            size_t piece = 1 + (size_t)(rng() % 17);
            piece = piece > n - off ? n - off : piece;
            hit = addon_leak_feed(m, &st, text + off, piece, &mt);
            off += piece;
        }
        assert_int_equal(hit, 1);
        assert_string_equal(mt.name, names[i]);
        assert_int_equal(mt.kind, i % 2 ? ADDON_LEAK_CANARY : ADDON_LEAK_SECRET);
    }
    for (size_t k = 0; k < sizeof(text); k++)
        text[k] = (char)rng();
    for (int round = 0; round < 64; round++)
        check_clean(m, text, sizeof(text));
    addon_leak_free(m);
}

/* First match of text[0..len) fed in the given piece sizes (0 ends the list, then the rest). */
static int feed_pieces(const addon_leak_t *m, const char *text, size_t len, const size_t *pieces,
                       addon_leak_match_t *mt)
{
    addon_leak_state_t st;
    addon_leak_state_init(&st);
    size_t off = 0;
    for (size_t k = 0; off < len; k++) {
        size_t piece = pieces != NULL && pieces[k] != 0 ? pieces[k] : len - off;
        piece = piece > len - off ? len - off : piece;
        if (addon_leak_feed(m, &st, text + off, piece, mt))
            return 1;
        off += piece;
        assert_int_equal(st.pos, off);
    }
    return 0;
}

/* Long pieces are sampled (one gram every shortest-pattern-less-3 bytes, the automaton over
 * their edges): the same first match as the byte-by-byte scan, for every pattern planted at
 * the edges of the text and of the pieces, at every offset mod the sampling step, and none in
 * random text. */
static void leak_long_pieces(int generic)
{
    enum { LEN = 64 << 10 };
    addon_leak_t *m = build_values();
    if (generic)
        m->bmi2 = 0; /* the mask-table path of processors without BMI2 */
    static char text[LEN];
    const size_t cuts[][4] = {{0}, {LEN / 2, 0}, {1000, 7, 30000, 0}, {4093, 4093, 4093, 0}};
    for (size_t i = 0; i < addon_leak_pattern_count(m); i++) {
        addon_str_t p = addon_leak_pattern(m, i, NULL, NULL);
        const size_t at[] = {0,           1,           5,           17,
                             997,         998,         999,         1000 - p.len / 2,
                             1004 - p.len, 1007 - p.len, LEN / 2 - 1, 4093 * 2 - 3,
                             LEN - p.len, 12345 + i % 23};
        for (size_t a = 0; a < sizeof(at) / sizeof(at[0]); a++) {
            for (size_t k = 0; k < LEN; k++)
                text[k] = (char)('a' + rng() % 26);
            memcpy(text + at[a], p.base, p.len);
            addon_leak_match_t want;
            addon_leak_state_t st;
            addon_leak_state_init(&st);
            size_t k = 0;
            while (k < LEN && !addon_leak_feed(m, &st, text + k, 1, &want))
                k++;
            assert_true(k < LEN);
            for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
                addon_leak_match_t got;
                assert_int_equal(feed_pieces(m, text, LEN, cuts[c], &got), 1);
                assert_int_equal(got.end, want.end);
                assert_ptr_equal(got.name, want.name);
                assert_int_equal(got.enc, want.enc);
            }
        }
    }
    for (int round = 0; round < 16; round++) {
        for (size_t k = 0; k < LEN; k++)
            text[k] = (char)rng();
        addon_leak_match_t mt;
        for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++)
            assert_int_equal(feed_pieces(m, text, LEN, cuts[c], &mt), 0);
    }
    addon_leak_free(m);
}

static void test_leak_long_pieces(void **state)
{
    (void)state;
    leak_long_pieces(0);
}

/* The same through the mask-table path that processors without BMI2 take. */
static void test_leak_long_pieces_generic(void **state)
{
    (void)state;
    leak_long_pieces(1);
}

/* What a caller must hold back: the bytes that may still begin a value, none otherwise. */
static void test_leak_pending(void **state)
{
    (void)state;
    addon_leak_t *m = build_values();
    addon_leak_state_t st;
    addon_leak_state_init(&st);
    addon_leak_match_t mt;
    assert_int_equal(addon_leak_pending(m, &st), 0);
    assert_int_equal(addon_leak_feed(m, &st, "zzzz zzzz", 9, &mt), 0);
    assert_int_equal(addon_leak_pending(m, &st), 0);
    assert_int_equal(addon_leak_feed(m, &st, "zz ghp_REAL", 11, &mt), 0);
    assert_int_equal(addon_leak_pending(m, &st), 8);
    assert_int_equal(addon_leak_feed(m, &st, "SECRET", 6, &mt), 0);
    assert_int_equal(addon_leak_pending(m, &st), 14);
    assert_int_equal(addon_leak_feed(m, &st, "!", 1, &mt), 0);
    assert_int_equal(addon_leak_pending(m, &st), 0);
    assert_true(addon_leak_pending(m, &st) < addon_leak_max_pattern_len(m));
    assert_int_equal(addon_leak_pending(NULL, &st), 0);
    addon_leak_free(m);
}

/* ---- benchmark ------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Scans mib MiB, cycling through buf[0..bufsize) in 64 KiB pieces; returns MB/s of CPU time. */
static double bench_run(const addon_leak_t *m, const unsigned char *buf, size_t bufsize, size_t mib,
                        size_t *hits)
{
    enum { PIECE = 64 << 10 };
    size_t total = mib << 20, done = 0;
    addon_leak_state_t st;
    addon_leak_state_init(&st);
    double t0 = now_s();
    while (done < total) {
        addon_leak_match_t mt;
        *hits += (size_t)addon_leak_feed(m, &st, buf + done % bufsize, PIECE, &mt);
        done += PIECE;
    }
    return (double)total / (now_s() - t0) / 1e6;
}

static int bench(size_t mib)
{
    enum { NSECRETS = 50, BIG = 64 << 20, SMALL = 256 << 10 };
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static char vals[NSECRETS][41];
    addon_leak_item_t items[NSECRETS];
    for (size_t i = 0; i < NSECRETS; i++) {
        size_t len = 20 + (size_t)(rng() % 21);
        for (size_t k = 0; k < len; k++)
            vals[i][k] = alnum[rng() % 62];
        items[i] = (addon_leak_item_t){{"s", 1}, {vals[i], len}, ADDON_LEAK_SECRET};
    }
    addon_leak_t *m = NULL;
    unsigned char *buf = malloc(BIG);
    if (buf == NULL || addon_leak_new(items, NSECRETS, &m, NULL, 0, NULL) != 0)
        return 1;
    for (size_t k = 0; k < BIG; k += 8) {
        uint64_t r = rng();
        memcpy(buf + k, &r, 8);
    }
    size_t hits = 0;
    printf("leak matcher, %zu secrets (%zu patterns), %zu MiB of random bytes, MB/s of CPU time\n",
           (size_t)NSECRETS, addon_leak_pattern_count(m), mib);
    printf("  from memory (64 MiB buffer): %.0f\n", bench_run(m, buf, BIG, mib, &hits));
    printf("  from cache (256 KiB buffer): %.0f\n", bench_run(m, buf, SMALL, mib, &hits));
    /* Text that looks like the patterns: the base64 of random bytes (an uploaded file). */
    size_t tl = (size_t)EVP_EncodeBlock(buf + BIG / 2, buf, BIG / 4);
    printf("  base64 text from memory (%zu MiB buffer): %.0f\n", tl >> 20,
           bench_run(m, buf + BIG / 2, tl & ~(size_t)0xffff, mib, &hits));
    /* A request head: the URL and 12 header values, each a one-shot scan. */
    static const char *const head[] = {"/repos/org/repo/pulls?state=open&per_page=100",
                                       "api.github.com",
                                       "Bearer ghp_SurrogateToken0123456789abcdefghij",
                                       "application/vnd.github+json",
                                       "curl/8.5.0",
                                       "*/*",
                                       "gzip, deflate, br",
                                       "keep-alive",
                                       "no-cache",
                                       "2022-11-28",
                                       "application/json",
                                       "b3f1c9e2-5a7d-4c8e-9f10-2d3b4a5c6d7e",
                                       "1024"};
    size_t nreq = 1000000, hb = 0;
    double t0 = now_s();
    for (size_t r = 0; r < nreq; r++) {
        for (size_t k = 0; k < sizeof(head) / sizeof(head[0]); k++) {
            addon_leak_match_t mt;
            hits += (size_t)addon_leak_scan(m, head[k], strlen(head[k]), &mt);
            hb += strlen(head[k]);
        }
    }
    double dt = now_s() - t0;
    printf("  request heads (URL + 12 headers, %zu bytes): %.0f ns each\n", hb / nreq,
           dt / (double)nreq * 1e9);
    printf("  (%zu matches)\n", hits);
    free(buf);
    addon_leak_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bench") == 0)
        return bench(argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 1024);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leak_raw_url_hex),
        cmocka_unit_test(test_leak_base64_alignments),
        cmocka_unit_test(test_leak_no_false_positive),
        cmocka_unit_test(test_leak_min_len),
        cmocka_unit_test(test_leak_canaries_from_replacements),
        cmocka_unit_test(test_leak_canary_syntax),
        cmocka_unit_test(test_leak_many_patterns),
        cmocka_unit_test(test_leak_long_pieces),
        cmocka_unit_test(test_leak_long_pieces_generic),
        cmocka_unit_test(test_leak_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
