/* ca/: host name normalization, every field of a minted leaf, chain verification (OpenSSL API
 * and `openssl verify`), serials, the LRU cache and leaf lifetimes, and the minting cost. */
#include <arpa/inet.h>

#include "tests/ca/ca_test_util.h"

#define ERRLEN CA_ERR_LEN
#define BENCH_MINTS 1000
#define BENCH_MINTS_RSA 200
#define BENCH_HITS 100000

typedef struct fixture {
    char dir[CT_DIR_LEN];
    char certfile[4096]; /* the generated mitmproxy-ca-cert.pem */
    ca_t *ca;
} fixture_t;

static int setup_ca(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    char err[ERRLEN];

    assert_non_null(f);
    ct_tmpdir(f->dir);
    assert_int_equal(ca_load(&f->ca, f->dir, CA_CREATE, 0, err, sizeof(err)), 0);
    ct_path(f->certfile, sizeof(f->certfile), "%s/%s", f->dir, CA_FILE_CERT_PEM);
    *state = f;
    return 0;
}

static int teardown_ca(void **state)
{
    fixture_t *f = *state;

    ca_free(f->ca);
    ct_rmtree(f->dir);
    free(f);
    return 0;
}

static int acquire(ca_t *ca, const char *name, ca_leaf_t **out)
{
    return ca_leaf_acquire(ca, name, strlen(name), out);
}

/* ---- names ---- */

typedef struct name_case {
    const char *in;
    size_t len;       /* 0: strlen(in) */
    const char *want; /* NULL: PX_EPARSE */
    int is_ip;
} name_case_t;

#define LONG63 "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabc"
#define LONG64 LONG63 "d"
#define NAME64 "x.abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijab"
#define NAME68 "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij.example"
#define NAME253                                                                                    \
    LONG63 "." LONG63 "." LONG63 "."                                                               \
           "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghija"

static const name_case_t name_cases[] = {
    {"example.com", 0, "example.com", 0},
    {"Example.COM", 0, "example.com", 0},
    {"example.com.", 0, "example.com", 0},
    {"a", 0, "a", 0},
    {"*.example.com", 0, "*.example.com", 0},
    {"under_score.example-1.com", 0, "under_score.example-1.com", 0},
    {LONG63 ".com", 0, LONG63 ".com", 0},
    {NAME253, 0, NAME253, 0},
    {"10.0.0.1", 0, "10.0.0.1", 1},
    {"10.0.0.1.", 0, "10.0.0.1", 1},
    {"255.255.255.255", 0, "255.255.255.255", 1},
    {"::1", 0, "::1", 1},
    {"[::1]", 0, "::1", 1},
    {"2001:DB8:0:0:0:0:0:1", 0, "2001:db8::1", 1},
    {"[2001:db8::a:B]", 0, "2001:db8::a:b", 1},
    {"::ffff:10.0.0.1", 0, "::ffff:10.0.0.1", 1},
    {"256.1.1.1", 0, "256.1.1.1", 0}, /* not an address: a (strange) DNS name */
    {"", 0, NULL, 0},
    {".", 0, NULL, 0},
    {"..", 0, NULL, 0},
    {".example.com", 0, NULL, 0},
    {"a..b", 0, NULL, 0},
    {"example.com..", 0, NULL, 0},
    {"exa mple.com", 0, NULL, 0},
    {"exa\0mple.com", 12, NULL, 0},
    {"a/b", 0, NULL, 0},
    {"a\\b", 0, NULL, 0},
    {"a;b", 0, NULL, 0},
    {"host:443", 0, NULL, 0},
    {"a:b", 0, NULL, 0},
    {"exa\xc3\xa9mple.com", 0, NULL, 0},
    {"a\r\nb", 0, NULL, 0},
    {"[example.com]", 0, NULL, 0},
    {"[10.0.0.1]", 0, NULL, 0},
    {"[::1", 0, NULL, 0},
    {"::1]", 0, NULL, 0},
    {"[]", 0, NULL, 0},
    {"[::1].", 0, NULL, 0},
    {"fe80::1%eth0", 0, NULL, 0},
    {"::1\0", 4, NULL, 0},
    {LONG64 ".com", 0, NULL, 0},
    {NAME253 "j", 0, NULL, 0},
};

static void test_ca_leaf_name_normalize(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]); i++) {
        const name_case_t *c = &name_cases[i];
        char out[CA_NAME_MAX + 1];
        int is_ip = -1;
        size_t len = c->len ? c->len : strlen(c->in);
        int rc = ca_name_normalize(c->in, len, out, sizeof(out), &is_ip);
        if (c->want == NULL) {
            if (rc != PX_EPARSE) {
                print_error("case %zu '%s' accepted as '%s'\n", i, c->in, out);
            }
            assert_int_equal(rc, PX_EPARSE);
            continue;
        }
        if (rc != 0) {
            print_error("case %zu '%s' rejected\n", i, c->in);
        }
        assert_int_equal(rc, 0);
        assert_string_equal(out, c->want);
        assert_int_equal(is_ip, c->is_ip);
    }
    assert_int_equal(strlen(NAME253), 253);
    assert_int_equal(strlen(NAME64), 64);
    assert_int_equal(strlen(NAME68), 68);
    char small[4];
    assert_int_equal(ca_name_normalize("example.com", 11, small, sizeof(small), NULL), PX_ETOOBIG);
}

/* A bad name is refused before anything is minted or cached. */
static void test_ca_leaf_bad_name(void **state)
{
    fixture_t *f = *state;
    ca_leaf_t *leaf = (ca_leaf_t *)f;
    ca_cache_stats_t st;

    assert_int_equal(ca_leaf_acquire(f->ca, "bad name", 8, &leaf), PX_EPARSE);
    assert_null(leaf);
    leaf = (ca_leaf_t *)f;
    assert_int_equal(ca_mint_leaf(f->ca, "x\ny", 3, &leaf), PX_EPARSE);
    assert_null(leaf);
    assert_int_equal(ca_leaf_acquire(f->ca, NULL, 0, &leaf), PX_EPARSE);
    ca_cache_get_stats(f->ca, &st);
    assert_int_equal(st.count, 0);
    assert_int_equal(st.misses, 0);
}

/* ---- leaf fields ---- */

typedef struct leaf_case {
    const char *in;
    const char *name; /* normalized */
    int af;           /* 0 DNS, AF_INET, AF_INET6 */
    int has_cn;
} leaf_case_t;

static const leaf_case_t leaf_cases[] = {
    {"example.com", "example.com", 0, 1},
    {"API.GitHub.com.", "api.github.com", 0, 1},
    {"*.example.com", "*.example.com", 0, 1},
    {"10.199.1.100", "10.199.1.100", AF_INET, 1},
    {"::1", "::1", AF_INET6, 1},
    {"[2001:db8::1]", "2001:db8::1", AF_INET6, 1},
    {LONG63 ".", LONG63, 0, 1}, /* 63 chars: CN kept */
    {NAME64, NAME64, 0, 1},     /* 64 chars: CN kept (ub-common-name) */
    {NAME68 ".", NAME68, 0, 0}, /* 68 chars: no CN, critical SAN */
};

static void check_leaf(const fixture_t *f, const leaf_case_t *c, ca_leaf_t *leaf)
{
    X509 *x = ca_leaf_get_cert(leaf);
    X509 *cacert = ca_get_cert(f->ca);
    time_t now = time(NULL);
    char buf[512];
    int crit = -1;

    assert_string_equal(ca_leaf_get_name(leaf), c->name);
    assert_ptr_equal(ca_leaf_get_ca_cert(leaf), cacert);
    assert_ptr_equal(ca_leaf_get_key(leaf), ca_get_leaf_key(f->ca));
    STACK_OF(X509) *chain = ca_leaf_get_chain(leaf);
    assert_int_equal(sk_X509_num(chain), 1);
    assert_ptr_equal(sk_X509_value(chain, 0), cacert);

    /* version 3, 128-bit positive non-zero serial */
    assert_int_equal(X509_get_version(x), X509_VERSION_3);
    const ASN1_INTEGER *sn = X509_get0_serialNumber(x);
    assert_int_equal(ASN1_STRING_type(sn), V_ASN1_INTEGER);
    BIGNUM *bn = ASN1_INTEGER_to_BN(sn, NULL);
    assert_false(BN_is_negative(bn));
    assert_false(BN_is_zero(bn));
    assert_true(BN_num_bits(bn) <= 128);
    assert_true(BN_num_bits(bn) > 64); /* 2^-64 odds of a false failure */
    BN_free(bn);

    /* subject: CN=name only when it fits; issuer = CA subject */
    X509_NAME *subj = X509_get_subject_name(x);
    if (c->has_cn) {
        assert_int_equal(X509_NAME_entry_count(subj), 1);
        assert_int_equal(X509_NAME_get_text_by_NID(subj, NID_commonName, buf, sizeof(buf)),
                         (int)strlen(c->name));
        assert_string_equal(buf, c->name);
    } else {
        assert_int_equal(X509_NAME_entry_count(subj), 0);
    }
    assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(cacert)), 0);

    /* SAN: exactly one name, DNS or IP; critical iff there is no CN */
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL);
    assert_non_null(gens);
    assert_int_equal(crit, c->has_cn ? 0 : 1);
    assert_int_equal(sk_GENERAL_NAME_num(gens), 1);
    const GENERAL_NAME *gn = sk_GENERAL_NAME_value(gens, 0);
    if (c->af == 0) {
        assert_int_equal(gn->type, GEN_DNS);
        assert_int_equal(ASN1_STRING_length(gn->d.dNSName), (int)strlen(c->name));
        assert_memory_equal(ASN1_STRING_get0_data(gn->d.dNSName), c->name, strlen(c->name));
    } else {
        unsigned char ip[16];
        size_t iplen = c->af == AF_INET ? 4 : 16;
        assert_int_equal(inet_pton(c->af, c->name, ip), 1);
        assert_int_equal(gn->type, GEN_IPADD);
        assert_int_equal(ASN1_STRING_length(gn->d.iPAddress), (int)iplen);
        assert_memory_equal(ASN1_STRING_get0_data(gn->d.iPAddress), ip, iplen);
        assert_int_equal(X509_check_ip_asc(x, c->name, 0), 1);
    }
    GENERAL_NAMES_free(gens);
    if (c->af == 0 && c->name[0] != '*') {
        assert_int_equal(X509_check_host(x, c->name, 0, 0, NULL), 1);
    }

    /* validity: notBefore = now - 1 day, total < 200 days */
    time_t nb = ct_time(X509_get0_notBefore(x));
    time_t na = ct_time(X509_get0_notAfter(x));
    assert_true(llabs((long long)(nb - (now - 86400))) <= 120);
    assert_true(na - nb < (time_t)200 * 86400);
    assert_int_equal(na - nb, (time_t)CA_LEAF_VALID_DAYS * 86400);
    assert_true(X509_cmp_current_time(X509_get0_notBefore(x)) < 0);
    assert_true(X509_cmp_current_time(X509_get0_notAfter(x)) > 0);

    /* EKU serverAuth only, not critical */
    EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(x, NID_ext_key_usage, &crit, NULL);
    assert_non_null(eku);
    assert_int_equal(crit, 0);
    assert_int_equal(sk_ASN1_OBJECT_num(eku), 1);
    assert_int_equal(OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, 0)), NID_server_auth);
    EXTENDED_KEY_USAGE_free(eku);
    assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_SERVER);

    /* KeyUsage digitalSignature, critical */
    ASN1_BIT_STRING *ku = X509_get_ext_d2i(x, NID_key_usage, &crit, NULL);
    assert_non_null(ku);
    assert_int_equal(crit, 1);
    ASN1_BIT_STRING_free(ku);
    assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);

    /* BasicConstraints CA:FALSE, critical */
    BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
    assert_non_null(bc);
    assert_int_equal(crit, 1);
    assert_false(bc->ca);
    BASIC_CONSTRAINTS_free(bc);
    assert_int_equal(X509_check_ca(x), 0);

    /* AKI keyid = the CA's SKI; no SKI on the leaf (mitmproxy #6494) */
    AUTHORITY_KEYID *akid = X509_get_ext_d2i(x, NID_authority_key_identifier, &crit, NULL);
    assert_non_null(akid);
    assert_int_equal(crit, 0);
    assert_non_null(akid->keyid);
    assert_null(akid->issuer);
    assert_null(akid->serial);
    assert_int_equal(ASN1_OCTET_STRING_cmp(akid->keyid, X509_get0_subject_key_id(cacert)), 0);
    AUTHORITY_KEYID_free(akid);
    assert_int_equal(X509_get_ext_by_NID(x, NID_subject_key_identifier, -1), -1);
    assert_int_equal(X509_get_ext_count(x), 5);

    /* key: P-256, the shared leaf key, never the CA key */
    EVP_PKEY *pub = X509_get0_pubkey(x);
    assert_non_null(pub);
    assert_int_equal(EVP_PKEY_get_base_id(pub), EVP_PKEY_EC);
    assert_int_equal(EVP_PKEY_get_group_name(pub, buf, sizeof(buf), NULL), 1);
    assert_string_equal(buf, "prime256v1");
    assert_int_equal(EVP_PKEY_eq(pub, ca_leaf_get_key(leaf)), 1);
    assert_int_not_equal(EVP_PKEY_eq(pub, X509_get0_pubkey(cacert)), 1);
    assert_int_equal(X509_check_private_key(x, ca_leaf_get_key(leaf)), 1);

    /* signed by the CA with SHA-256 */
    assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
    assert_int_equal(X509_verify(x, X509_get0_pubkey(cacert)), 1);
}

/* ---- validity inside the CA's ---- */

typedef struct window_case {
    long ca_from, ca_to;     /* the CA's notBefore, notAfter: seconds from now */
    long want_from, want_to; /* the leaf's, seconds from now; CA_LEAF_* when not clamped */
} window_case_t;

#define DAY 86400L
#define LEAF_FROM (-CA_LEAF_BACKDATE_DAYS * DAY)
#define LEAF_TO ((CA_LEAF_VALID_DAYS - CA_LEAF_BACKDATE_DAYS) * DAY)

static const window_case_t window_cases[] = {
    {-2 * DAY, 3648 * DAY, LEAF_FROM, LEAF_TO},   /* mitmproxy's own CA: nothing to clamp */
    {-3600, 3648 * DAY, -3600, LEAF_TO},          /* a CA made an hour ago: notBefore */
    {-2 * DAY, 3 * DAY, LEAF_FROM, 3 * DAY},      /* a CA valid three more days: notAfter */
    {-600, 3600, -600, 3600},                     /* both */
    {-2 * DAY, LEAF_TO + 60, LEAF_FROM, LEAF_TO}, /* ends just after a leaf would */
};

/* A CA whose validity runs from..to (seconds from now), written to a fresh confdir; a leaf
 * minted under it lies inside that window and still verifies. */
static void test_ca_leaf_validity_inside_ca(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(window_cases) / sizeof(window_cases[0]); i++) {
        const window_case_t *c = &window_cases[i];
        char dir[CT_DIR_LEN], err[ERRLEN];
        EVP_PKEY *key = EVP_EC_gen("P-256");
        assert_non_null(key);
        X509 *cert = ct_make_ca_cert(key, 1, 1);
        time_t now = time(NULL);
        assert_non_null(X509_gmtime_adj(X509_getm_notBefore(cert), c->ca_from));
        assert_non_null(X509_gmtime_adj(X509_getm_notAfter(cert), c->ca_to));
        assert_true(X509_sign(cert, key, EVP_sha256()) > 0);
        ct_tmpdir(dir);
        ct_write_mitm_pem(dir, key, cert, CT_KEY_PKCS8);
        ca_t *ca = NULL;
        assert_int_equal(ca_load(&ca, dir, 0, 0, err, sizeof(err)), 0);
        ca_leaf_t *leaf = NULL;
        assert_int_equal(acquire(ca, "inside.example", &leaf), 0);
        X509 *x = ca_leaf_get_cert(leaf);
        time_t nb = ct_time(X509_get0_notBefore(x)), na = ct_time(X509_get0_notAfter(x));
        time_t cnb = ct_time(X509_get0_notBefore(cert)), cna = ct_time(X509_get0_notAfter(cert));
        if (nb < cnb || na > cna || llabs((long long)(nb - (now + c->want_from))) > 5 ||
            llabs((long long)(na - (now + c->want_to))) > 5) {
            print_error("case %zu: CA %+ld..%+ld s, leaf %+lld..%+lld s, want %+ld..%+ld s\n", i,
                        c->ca_from, c->ca_to, (long long)(nb - now), (long long)(na - now),
                        c->want_from, c->want_to);
            fail();
        }
        assert_int_equal(ct_verify_chain(cert, x), 1);
        ca_leaf_release(leaf);
        ca_free(ca);
        ct_rmtree(dir);
        X509_free(cert);
        EVP_PKEY_free(key);
    }
}

static void test_ca_leaf_fields(void **state)
{
    fixture_t *f = *state;

    for (size_t i = 0; i < sizeof(leaf_cases) / sizeof(leaf_cases[0]); i++) {
        const leaf_case_t *c = &leaf_cases[i];
        ca_leaf_t *leaf = NULL;
        print_message("leaf case %s\n", c->in);
        assert_int_equal(acquire(f->ca, c->in, &leaf), 0);
        check_leaf(f, c, leaf);
        ca_leaf_release(leaf);
        assert_int_equal(ca_mint_leaf(f->ca, c->in, strlen(c->in), &leaf), 0);
        check_leaf(f, c, leaf);
        ca_leaf_release(leaf);
    }
}

static void test_ca_leaf_chain_verifies(void **state)
{
    fixture_t *f = *state;

    for (size_t i = 0; i < sizeof(leaf_cases) / sizeof(leaf_cases[0]); i++) {
        ca_leaf_t *leaf = NULL;
        assert_int_equal(acquire(f->ca, leaf_cases[i].in, &leaf), 0);
        assert_int_equal(ct_verify_chain(ca_get_cert(f->ca), ca_leaf_get_cert(leaf)), 1);
        assert_int_equal(ct_openssl_verify(f->certfile, ca_leaf_get_cert(leaf), CT_VERIFY_STRICT),
                         0);
        ca_leaf_release(leaf);
    }

    /* A leaf does not verify against another CA. */
    fixture_t *other = NULL;
    ca_leaf_t *leaf = NULL;
    setup_ca((void **)&other);
    assert_int_equal(acquire(f->ca, "example.com", &leaf), 0);
    ERR_set_mark();
    assert_int_not_equal(ct_verify_chain_ex(ca_get_cert(other->ca), ca_leaf_get_cert(leaf), 1), 1);
    ERR_pop_to_mark();
    assert_int_not_equal(
        ct_openssl_verify(other->certfile, ca_leaf_get_cert(leaf), CT_VERIFY_QUIET), 0);
    ca_leaf_release(leaf);
    teardown_ca((void **)&other);
}

static void test_ca_leaf_serials_differ(void **state)
{
    fixture_t *f = *state;
    enum { N = 64 };
    ca_leaf_t *leaves[N];

    for (int i = 0; i < N; i++) {
        assert_int_equal(ca_mint_leaf(f->ca, "example.com", 11, &leaves[i]), 0);
        for (int j = 0; j < i; j++) {
            assert_int_not_equal(
                ASN1_INTEGER_cmp(X509_get0_serialNumber(ca_leaf_get_cert(leaves[i])),
                                 X509_get0_serialNumber(ca_leaf_get_cert(leaves[j]))),
                0);
        }
    }
    for (int i = 0; i < N; i++) {
        ca_leaf_release(leaves[i]);
    }
    /* Minting bypasses the cache. */
    ca_cache_stats_t st;
    ca_cache_get_stats(f->ca, &st);
    assert_int_equal(st.count, 0);
}

/* ---- cache ---- */

static void test_ca_leaf_cache_hit(void **state)
{
    fixture_t *f = *state;
    ca_leaf_t *a = NULL, *b = NULL, *c = NULL;
    ca_cache_stats_t st;

    assert_int_equal(acquire(f->ca, "hit.example.com", &a), 0);
    assert_int_equal(acquire(f->ca, "hit.example.com", &b), 0);
    assert_ptr_equal(a, b);
    assert_ptr_equal(ca_leaf_get_cert(a), ca_leaf_get_cert(b));
    /* Same normalized name, same entry. */
    assert_int_equal(acquire(f->ca, "HIT.Example.COM.", &c), 0);
    assert_ptr_equal(a, c);
    ca_cache_get_stats(f->ca, &st);
    assert_int_equal(st.count, 1);
    assert_int_equal(st.cap, CA_CACHE_DEFAULT_CAP);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.evictions, 0);
    ca_leaf_release(a);
    ca_leaf_release(b);
    ca_leaf_release(c);
    /* Released by every caller, still cached. */
    assert_int_equal(acquire(f->ca, "hit.example.com", &a), 0);
    ca_cache_get_stats(f->ca, &st);
    assert_int_equal(st.hits, 3);
    ca_leaf_release(a);

    /* IPv6 with and without brackets share one entry. */
    assert_int_equal(acquire(f->ca, "[2001:db8::1]", &a), 0);
    assert_int_equal(acquire(f->ca, "2001:DB8:0::1", &b), 0);
    assert_ptr_equal(a, b);
    ca_leaf_release(a);
    ca_leaf_release(b);
}

static ca_t *small_ca(const fixture_t *f, size_t cap)
{
    char err[ERRLEN];
    ca_t *ca = NULL;
    assert_int_equal(ca_load(&ca, f->dir, 0, cap, err, sizeof(err)), 0);
    return ca;
}

/* Acquires name and releases it at once; returns 1 on a cache hit. */
static int touch(ca_t *ca, const char *name)
{
    ca_cache_stats_t before, after;
    ca_leaf_t *leaf = NULL;

    ca_cache_get_stats(ca, &before);
    assert_int_equal(acquire(ca, name, &leaf), 0);
    assert_string_equal(ca_leaf_get_name(leaf), name);
    ca_leaf_release(leaf);
    ca_cache_get_stats(ca, &after);
    return after.hits == before.hits + 1;
}

static void test_ca_leaf_cache_evicts_lru(void **state)
{
    fixture_t *f = *state;
    ca_t *ca = small_ca(f, 2);
    ca_cache_stats_t st;

    assert_false(touch(ca, "a"));
    assert_false(touch(ca, "b"));
    assert_false(touch(ca, "c")); /* evicts a */
    ca_cache_get_stats(ca, &st);
    assert_int_equal(st.count, 2);
    assert_int_equal(st.evictions, 1);
    assert_true(touch(ca, "b"));
    assert_true(touch(ca, "c"));
    assert_false(touch(ca, "a")); /* evicts b, the least recently used */
    assert_true(touch(ca, "c"));
    assert_true(touch(ca, "a"));
    assert_false(touch(ca, "b")); /* evicts c */
    assert_true(touch(ca, "a"));
    ca_cache_get_stats(ca, &st);
    assert_int_equal(st.count, 2);
    assert_int_equal(st.cap, 2);
    assert_int_equal(st.evictions, 3);
    assert_int_equal(st.misses, 5);
    assert_int_equal(st.hits, 5);
    ca_free(ca);

    /* Capacity 1 and many names: the count never exceeds the capacity. */
    ca = small_ca(f, 1);
    char name[32];
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof(name), "n%d.example", i % 7);
        touch(ca, name);
        ca_cache_get_stats(ca, &st);
        assert_int_equal(st.count, 1);
    }
    ca_free(ca);
}

/* Many names in a bigger cache: every still-cached name hits, evicted ones miss. */
static void test_ca_leaf_cache_many(void **state)
{
    fixture_t *f = *state;
    enum { CAP = 64, N = 200 };
    ca_t *ca = small_ca(f, CAP);
    char name[32];
    ca_cache_stats_t st;

    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "host%d.example", i);
        assert_false(touch(ca, name));
    }
    for (int i = N - CAP; i < N; i++) {
        snprintf(name, sizeof(name), "host%d.example", i);
        assert_true(touch(ca, name));
    }
    snprintf(name, sizeof(name), "host%d.example", N - CAP - 1);
    assert_false(touch(ca, name));
    ca_cache_get_stats(ca, &st);
    assert_int_equal(st.count, CAP);
    assert_int_equal(st.evictions, N - CAP + 1);
    ca_free(ca);
}

static void test_ca_leaf_survives_eviction(void **state)
{
    fixture_t *f = *state;
    ca_t *ca = small_ca(f, 2);
    ca_leaf_t *held = NULL, *again = NULL;

    assert_int_equal(acquire(ca, "a", &held), 0);
    assert_false(touch(ca, "b"));
    assert_false(touch(ca, "c")); /* a is evicted while held */
    assert_string_equal(ca_leaf_get_name(held), "a");
    assert_int_equal(X509_verify(ca_leaf_get_cert(held), X509_get0_pubkey(ca_get_cert(ca))), 1);
    assert_int_equal(acquire(ca, "a", &again), 0); /* a miss: a new leaf */
    assert_ptr_not_equal(again, held);
    assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca_leaf_get_cert(held)),
                                          X509_get0_serialNumber(ca_leaf_get_cert(again))),
                         0);
    ca_leaf_release(again);
    ca_leaf_release(held);

    /* A retained leaf outlives the cache and the CA object. */
    assert_int_equal(acquire(ca, "b", &held), 0);
    assert_ptr_equal(ca_leaf_retain(held), held);
    ca_leaf_release(held);
    ca_free(ca);
    X509 *cacert = ca_leaf_get_ca_cert(held);
    assert_int_equal(X509_verify(ca_leaf_get_cert(held), X509_get0_pubkey(cacert)), 1);
    assert_int_equal(X509_check_private_key(ca_leaf_get_cert(held), ca_leaf_get_key(held)), 1);
    assert_int_equal(sk_X509_num(ca_leaf_get_chain(held)), 1);
    assert_int_equal(ct_verify_chain(cacert, ca_leaf_get_cert(held)), 1);
    ca_leaf_release(held);
    ca_leaf_release(NULL);
    ca_free(NULL);
}

/* ---- cost ---- */

static double mint_mean_us(ca_t *ca, int n)
{
    char name[64];
    double t0 = ct_now_sec();

    for (int i = 0; i < n; i++) {
        ca_leaf_t *leaf = NULL;
        snprintf(name, sizeof(name), "host%d.bench.example.com", i);
        assert_int_equal(ca_mint_leaf(ca, name, strlen(name), &leaf), 0);
        ca_leaf_release(leaf);
    }
    return (ct_now_sec() - t0) * 1e6 / n;
}

/* Prints the mean cost of a mint (EC and RSA CA) and of a cache hit; asserts nothing on time.
 * Under valgrind (AIRLOCK_SLOW, set by run-all.sh) a few of each: the figures mean nothing
 * there, and the full counts took half a minute of the valgrind stage. */
static void test_ca_leaf_mint_cost(void **state)
{
    fixture_t *f = *state;
    char dir[CT_DIR_LEN], err[ERRLEN];
    ca_t *rsa_ca = NULL;
    ca_leaf_t *leaf = NULL;
    int slow = getenv("AIRLOCK_SLOW") != NULL;
    int mints = slow ? 10 : BENCH_MINTS, mints_rsa = slow ? 3 : BENCH_MINTS_RSA;
    int hits = slow ? 100 : BENCH_HITS;

    double ec_us = mint_mean_us(f->ca, mints);

    EVP_PKEY *key = EVP_RSA_gen(2048);
    X509 *cert = ct_make_ca_cert(key, 1, 1);
    ct_tmpdir(dir);
    ct_write_mitm_pem(dir, key, cert, CT_KEY_TRADITIONAL);
    assert_int_equal(ca_load(&rsa_ca, dir, 0, 0, err, sizeof(err)), 0);
    double rsa_us = mint_mean_us(rsa_ca, mints_rsa);

    assert_int_equal(acquire(f->ca, "cached.example.com", &leaf), 0);
    ca_leaf_release(leaf);
    double t0 = ct_now_sec();
    for (int i = 0; i < hits; i++) {
        assert_int_equal(ca_leaf_acquire(f->ca, "cached.example.com", 18, &leaf), 0);
        ca_leaf_release(leaf);
    }
    double hit_ns = (ct_now_sec() - t0) * 1e9 / hits;

    print_message("mint cost: EC P-256 CA %.1f us/leaf (%d mints), RSA-2048 CA %.1f us/leaf "
                  "(%d mints), cache hit %.0f ns\n",
                  ec_us, mints, rsa_us, mints_rsa, hit_ns);
    ca_free(rsa_ca);
    X509_free(cert);
    EVP_PKEY_free(key);
    ct_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_leaf_name_normalize),
        cmocka_unit_test_setup_teardown(test_ca_leaf_bad_name, setup_ca, teardown_ca),
        cmocka_unit_test_setup_teardown(test_ca_leaf_fields, setup_ca, teardown_ca),
        cmocka_unit_test(test_ca_leaf_validity_inside_ca),
        cmocka_unit_test_setup_teardown(test_ca_leaf_chain_verifies, setup_ca, teardown_ca),
        cmocka_unit_test_setup_teardown(test_ca_leaf_serials_differ, setup_ca, teardown_ca),
        cmocka_unit_test_setup_teardown(test_ca_leaf_cache_hit, setup_ca, teardown_ca),
        cmocka_unit_test_setup_teardown(test_ca_leaf_cache_evicts_lru, setup_ca, teardown_ca),
        cmocka_unit_test_setup_teardown(test_ca_leaf_cache_many, setup_ca, teardown_ca),
        cmocka_unit_test_setup_teardown(test_ca_leaf_survives_eviction, setup_ca, teardown_ca),
        cmocka_unit_test_setup_teardown(test_ca_leaf_mint_cost, setup_ca, teardown_ca),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
