/* SigV4A: key derivation vectors (v4a-keys, plus the reference-doc AKIAIOSFODNN7EXAMPLE key),
 * the v4a suite case by case (38 x {header, query}): canonical request and string to sign
 * byte for byte, our derived public key equals public-key.json, our new signature verifies
 * with that published key, and the published signatures verify with our derived key; plus
 * sign/verify edge cases. ECDSA is randomized: signatures are verified, never compared. */
#include "tests/signing/sig_test_resign.h"

#include <openssl/evp.h>

#include "signing/sig_v4a.h"

static void hex32(const char *hex, unsigned char out[32])
{
    size_t n = 0;

    assert_int_equal(strlen(hex), 64);
    assert_int_equal(sig_hex_decode(hex, 64, out, 32, &n), 0);
    assert_int_equal(n, 32);
}

static EVP_PKEY *pub_from_hex(const char *x, const char *y)
{
    unsigned char bx[32];
    unsigned char by[32];
    EVP_PKEY *k = NULL;

    hex32(x, bx);
    hex32(y, by);
    assert_int_equal(sig_v4a_pubkey_from_xy(bx, by, &k), 0);
    return k;
}

static void check_derivation(const char *akid, const char *secret, const char *d_hex,
                             const char *x_hex, const char *y_hex)
{
    EVP_PKEY *k = NULL;
    unsigned char d[32];
    unsigned char x[32];
    unsigned char y[32];
    unsigned char want[32];

    assert_int_equal(sig_v4a_derive_key(tu_s(akid), tu_s(secret), &k), 0);
    if (d_hex != NULL) {
        assert_int_equal(sig_v4a_private_bytes(k, d), 0);
        hex32(d_hex, want);
        assert_memory_equal(d, want, 32);
    }
    assert_int_equal(sig_v4a_pubkey_xy(k, x, y), 0);
    hex32(x_hex, want);
    assert_memory_equal(x, want, 32);
    hex32(y_hex, want);
    assert_memory_equal(y, want, 32);
    EVP_PKEY_free(k);
}

static void test_sig_v4a_key_vectors(void **state)
{
    char *text = tu_read(NULL, VEC_DIR "/v4a-keys/key-derivation.json");
    tj_t *doc = tj_parse(text);
    tj_t *v = tj_get(doc, "vectors");
    size_t i;

    (void)state;
    assert_int_equal(v->n, 3);
    for (i = 0; i < v->n; i++) {
        check_derivation(tj_str(v->items[i], "access_key_id"),
                         tj_str(v->items[i], "secret_access_key"),
                         tj_str(v->items[i], "private_key_hex"),
                         tj_str(v->items[i], "public_x_hex"), tj_str(v->items[i], "public_y_hex"));
    }
    tj_free(doc);
    free(text);
}

static void test_sig_v4a_key_reference_doc(void **state)
{
    (void)state;
    /* the spec-correct key for the AWS example credentials the re-signing tests use (a key
     * derived any other way signs requests AWS rejects) */
    check_derivation("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                     "7b949fbb61b2a406410d1be788fae973808162517f81aa6deea4a75926a83eae",
                     "085eb287ba9b2cc7711896efeda87fed3afc231d7578d5ec055baa4f569958c3",
                     "123e9f409bcbfab4d60fea84372c256d24f42543ecb7d9c43425a4b3ef6a38a5");
}

static void test_sig_v4a_key_long_id(void **state)
{
    char akid[301];
    EVP_PKEY *k = NULL;
    EVP_PKEY *k2 = NULL;
    unsigned char x1[32];
    unsigned char y1[32];
    unsigned char x2[32];
    unsigned char y2[32];

    (void)state;
    /* aws-c-auth also derives from a ~300-character access key id */
    memset(akid, 'A', 300);
    akid[300] = '\0';
    assert_int_equal(sig_v4a_derive_key(tu_s(akid), tu_s("secret"), &k), 0);
    akid[299] = 'B'; /* the key id is part of the KDF input */
    assert_int_equal(sig_v4a_derive_key(tu_s(akid), tu_s("secret"), &k2), 0);
    assert_int_equal(sig_v4a_pubkey_xy(k, x1, y1), 0);
    assert_int_equal(sig_v4a_pubkey_xy(k2, x2, y2), 0);
    assert_true(memcmp(x1, x2, 32) != 0);
    EVP_PKEY_free(k);
    EVP_PKEY_free(k2);
}

static void test_sig_v4a_sign_verify(void **state)
{
    EVP_PKEY *k = NULL;
    EVP_PKEY *other = NULL;
    char sig[SIG_V4A_SIG_MAX];
    char padded[SIG_V4A_SIG_MAX + 8];
    size_t n = 0;
    int i;

    (void)state;
    assert_int_equal(sig_v4a_derive_key(tu_s("AKIDEXAMPLE"),
                                        tu_s("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"), &k),
                     0);
    assert_int_equal(sig_v4a_derive_key(tu_s("AKIDEXAMPLE2"),
                                        tu_s("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"), &other),
                     0);
    for (i = 0; i < 16; i++) {
        assert_int_equal(sig_v4a_sign(k, "message", 7, sig, sizeof(sig), &n), 0);
        assert_true(n >= 136 && n <= SIG_V4A_SIG_MAX && n % 2 == 0);
        assert_memory_equal(sig, "30", 2);
        assert_int_equal(sig_v4a_verify(k, "message", 7, sig, n), 0);
        assert_int_equal(sig_v4a_verify(k, "messagf", 7, sig, n), PX_ESIGNING);
        assert_int_equal(sig_v4a_verify(other, "message", 7, sig, n), PX_ESIGNING);
        memcpy(padded, sig, n);
        memset(padded + n, '*', SIG_V4A_SIG_MAX - n);
        assert_int_equal(sig_v4a_verify(k, "message", 7, padded, SIG_V4A_SIG_MAX), 0);
    }
    assert_int_equal(sig_v4a_verify(k, "message", 7, "zz", 2), PX_EPARSE);
    assert_int_equal(sig_v4a_verify(k, "message", 7, sig, n - 1), PX_EPARSE);
    assert_int_equal(sig_v4a_verify(k, "message", 7, "", 0), PX_EPARSE);
    assert_int_equal(sig_v4a_verify(k, "message", 7, "3006020101020101", 16), PX_ESIGNING);
    sig[10] = sig[10] == '0' ? '1' : '0';
    assert_int_equal(sig_v4a_verify(k, "message", 7, sig, n), PX_ESIGNING);
    EVP_PKEY_free(other);
    EVP_PKEY_free(k);
}

static void test_sig_v4a_bad_point(void **state)
{
    unsigned char x[32] = {1};
    unsigned char y[32] = {2};
    EVP_PKEY *k = NULL;

    (void)state;
    assert_int_equal(sig_v4a_pubkey_from_xy(x, y, &k), PX_ECRYPTO);
    assert_null(k);
}

/* Signature text of the vector's signed request (header Authorization or X-Amz-Signature). */
static sig_str_t strip_signature(const char *s, size_t len, sig_str_t *tail)
{
    const char *p = NULL;
    size_t i;
    sig_str_t head = {s, len};

    for (i = 0; i + 10 <= len; i++) {
        if (memcmp(s + i, "Signature=", 10) == 0) {
            p = s + i + 10;
        }
    }
    assert_non_null(p);
    head.len = (size_t)(p - s);
    tail->base = p;
    while (p < s + len && *p != '&') {
        p++;
    }
    tail->base = p;
    tail->len = (size_t)(s + len - p);
    return head;
}

static void v4a_case(void **state, int query)
{
    const char *name = *state;
    const char *var = query ? "query" : "header";
    char *ctx_text = tu_read(NULL, VEC_DIR "/v4a/%s/context.json", name);
    tj_t *ctx = tj_parse(ctx_text);
    tj_t *cj = tj_get(ctx, "credentials");
    char *pk_text = tu_read(NULL, VEC_DIR "/v4a/%s/public-key.json", name);
    tj_t *pk = tj_parse(pk_text);
    size_t len;
    char *text = tu_read(&len, VEC_DIR "/v4a/%s/%s-signed-request.txt", name, var);
    char *want_creq = tu_read(NULL, VEC_DIR "/v4a/%s/%s-canonical-request.txt", name, var);
    char *want_sts = tu_read(NULL, VEC_DIR "/v4a/%s/%s-string-to-sign.txt", name, var);
    char *pub_sig = tu_read(NULL, VEC_DIR "/v4a/%s/%s-signature.txt", name, var);
    EVP_PKEY *pub = pub_from_hex(tj_str(pk, "X"), tj_str(pk, "Y"));
    EVP_PKEY *derived = NULL;
    tu_req_t req;
    sig_creds_t creds;
    sig_auth_t auth;
    sig_str_t orig;
    sig_str_t orig_head;
    sig_str_t orig_tail;
    sig_str_t new_head;
    sig_str_t new_tail;
    unsigned char x[32];
    unsigned char y[32];
    unsigned char want[32];
    char hash[65];
    run_t r;

    tu_chomp(pub_sig);
    tu_parse_request(text, len, &req);
    if (query) {
        sig_str_t p;

        sig_target_split(req.target, &p, &orig);
    } else {
        orig = tu_trim(req.headers[tu_find(&req, "authorization")].value);
    }
    memset(&creds, 0, sizeof(creds));
    creds.access_key_id = tu_s(tj_str(cj, "access_key_id"));
    creds.secret = tu_s(tj_str(cj, "secret_access_key"));
    if (tj_get(cj, "token") != NULL) {
        creds.session_token = tu_s(tj_str(cj, "token"));
    }
    assert_int_equal(sig_v4a_derive_key(creds.access_key_id, creds.secret, &derived), 0);
    assert_int_equal(sig_v4a_pubkey_xy(derived, x, y), 0);
    hex32(tj_str(pk, "X"), want);
    assert_memory_equal(x, want, 32);
    hex32(tj_str(pk, "Y"), want);
    assert_memory_equal(y, want, 32);
    /* the header variant derives the key inside the call, the query variant uses a cached one */
    creds.v4a_key = query ? derived : NULL;

    body_hash(&req, hash);
    resign(&req, query, &creds, tj_bool(ctx, "normalize") ? SIG_URI_NORMALIZE : SIG_URI_DOUBLE,
           (!query && tu_find(&req, "x-amz-content-sha256") >= 0) ? NULL : hash,
           query && tj_bool(ctx, "omit_session_token") ? SIG_OPT_UNSIGNED_TOKEN : 0, &auth, &r, 0);
    assert_int_equal(auth.alg, SIG_ALG_V4A);
    assert_mem_str(r.creq.base, r.creq.len, want_creq);
    assert_mem_str(r.sts.base, r.sts.len, want_sts);
    /* our new signature verifies with the published public key */
    assert_int_equal(
        sig_v4a_verify(pub, r.sts.base, r.sts.len, r.res.signature, r.res.signature_len), 0);
    /* the published signature verifies with our derived key */
    assert_int_equal(sig_v4a_verify(derived, want_sts, strlen(want_sts), pub_sig, strlen(pub_sig)),
                     0);
    /* the re-signed output is the original with only the signature replaced */
    orig_head = strip_signature(orig.base, orig.len, &orig_tail);
    new_head = strip_signature(r.out, r.out_len, &new_tail);
    assert_int_equal(new_head.len, orig_head.len);
    assert_memory_equal(new_head.base, orig_head.base, orig_head.len);
    assert_int_equal(new_tail.len, orig_tail.len);
    assert_memory_equal(new_tail.base, orig_tail.base, orig_tail.len);
    assert_int_equal((size_t)(new_tail.base - new_head.base) - new_head.len, r.res.signature_len);

    if (!query && tu_exists(VEC_DIR "/v4a/%s/canonical-request.txt", name)) {
        char *c2 = tu_read(NULL, VEC_DIR "/v4a/%s/canonical-request.txt", name);
        char *s2 = tu_read(NULL, VEC_DIR "/v4a/%s/string-to-sign.txt", name);

        assert_mem_str(r.creq.base, r.creq.len, c2);
        assert_mem_str(r.sts.base, r.sts.len, s2);
        free(s2);
        free(c2);
    }
    run_free(&r);
    EVP_PKEY_free(derived);
    EVP_PKEY_free(pub);
    free(pub_sig);
    free(want_sts);
    free(want_creq);
    free(text);
    tj_free(pk);
    free(pk_text);
    tj_free(ctx);
    free(ctx_text);
}

static void test_sig_v4a_header(void **state)
{
    v4a_case(state, 0);
}

static void test_sig_v4a_query(void **state)
{
    v4a_case(state, 1);
}

int main(void)
{
    tu_tests_t ts = {NULL, 0};
    char **cases;
    size_t n = tu_list_dirs(VEC_DIR "/v4a", &cases);
    size_t i;
    int failed = 0;

    tu_tests_add(&ts, "v4a-keys/key-derivation.json", test_sig_v4a_key_vectors, NULL);
    tu_tests_add(&ts, "key/reference-doc-W23", test_sig_v4a_key_reference_doc, NULL);
    tu_tests_add(&ts, "key/long-access-key-id", test_sig_v4a_key_long_id, NULL);
    tu_tests_add(&ts, "sign-verify", test_sig_v4a_sign_verify, NULL);
    tu_tests_add(&ts, "bad-point", test_sig_v4a_bad_point, NULL);
    failed += tu_tests_run("sig_v4a keys", &ts);

    if (n != 38) {
        fprintf(stderr, "expected 38 v4a cases under %s, found %zu\n", VEC_DIR "/v4a", n);
        return 1;
    }
    for (i = 0; i < n; i++) {
        char tname[256];

        snprintf(tname, sizeof(tname), "v4a/%s/header", cases[i]);
        tu_tests_add(&ts, tname, test_sig_v4a_header, cases[i]);
        snprintf(tname, sizeof(tname), "v4a/%s/query", cases[i]);
        tu_tests_add(&ts, tname, test_sig_v4a_query, cases[i]);
    }
    failed += tu_tests_run("sig_v4a suite v4a", &ts);
    for (i = 0; i < n; i++) {
        free(cases[i]);
    }
    free(cases);
    return failed;
}
