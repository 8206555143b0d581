/* ca/: name constraints of a per-conversation CA. Built from host patterns and from allowlists
 * of every format (through the proxy's px_caconv, the code `airlock ca init --per-conversation`
 * runs); written into a CA that OpenSSL enforces; read back by ca_load(); and honoured by the
 * ca module itself: a leaf inside is minted and verifies, a leaf outside is never minted. */
#include "tests/ca/ca_test_util.h"

#include "addons/addon_policy.h"
#include "proxy/px_caconv.h"

#define ERRLEN 1024

/* ---- helpers ---- */

static void describe(const ca_constraints_t *c, char *buf, size_t len)
{
    size_t n = ca_constraints_describe(c, buf, len);
    assert_true(n < len);
}

/* Loads an allowlist from text in format fmt and builds its constraints; returns the code. */
static int from_allowlist(const char *text, addon_policy_format_t fmt, char *desc, size_t dlen,
                          char *err)
{
    addon_policy_t *p = NULL;
    ca_constraints_t *c = ca_constraints_new();
    assert_non_null(c);
    int rc = addon_policy_load_buffer_as("allow", text, strlen(text), fmt, &p, err, ERRLEN);
    if (rc != 0) {
        fprintf(stderr, "allowlist did not load: %s\n", err);
    }
    assert_int_equal(rc, 0);
    rc = px_caconv_constraints(p, c, err, ERRLEN);
    if (rc == 0) {
        describe(c, desc, dlen);
    }
    ca_constraints_free(c);
    addon_policy_unref(p);
    return rc;
}

/* A confdir with a per-conversation CA for patterns (NULL-terminated), loaded. */
static ca_t *make_conv_ca(char *dir, const char *const *patterns, int days)
{
    char err[ERRLEN];
    ca_constraints_t *c = ca_constraints_new();
    ca_t *ca = NULL;

    assert_non_null(c);
    for (size_t i = 0; patterns[i] != NULL; i++) {
        assert_int_equal(ca_constraints_add_host(c, patterns[i], strlen(patterns[i]), err, ERRLEN),
                         0);
    }
    ct_tmpdir(dir);
    assert_int_equal(ca_init_constrained(dir, c, days, err, ERRLEN), 0);
    ca_constraints_free(c);
    assert_int_equal(ca_load(&ca, dir, 0, 0, err, ERRLEN), 0);
    assert_non_null(ca_get_constraints(ca));
    return ca;
}

/* Signs a leaf for name (DNS or IP SAN) with the CA key in dir/mitmproxy-ca.pem, by hand:
 * what an attacker holding the key could make, bypassing the ca module's own check. */
static X509 *sign_by_hand(const char *dir, const char *name, int is_ip)
{
    char path[4096];
    char san[300];
    X509V3_CTX ctx;

    ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_KEY_CERT);
    BIO *bio = BIO_new_file(path, "r");
    assert_non_null(bio);
    EVP_PKEY *cakey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    assert_non_null(cakey);
    assert_int_equal(BIO_reset(bio), 0);
    X509 *cacert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    assert_non_null(cacert);
    BIO_free(bio);

    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    assert_non_null(key);
    assert_non_null(x);
    assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
    assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 4242), 1);
    assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(cacert)), 1);
    assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
    assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 86400));
    assert_int_equal(X509_set_pubkey(x, key), 1);
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cacert, x, NULL, NULL, 0);
    snprintf(san, sizeof(san), "critical,%s:%s", is_ip ? "IP" : "DNS", name);
    assert_true(ct_add_ext(x, &ctx, NID_subject_alt_name, san));
    assert_true(ct_add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE"));
    assert_true(ct_add_ext(x, &ctx, NID_ext_key_usage, "serverAuth"));
    assert_true(ct_add_ext(x, &ctx, NID_authority_key_identifier, "keyid"));
    assert_true(X509_sign(x, cakey, EVP_sha256()) > 0);
    X509_free(cacert);
    EVP_PKEY_free(cakey);
    EVP_PKEY_free(key);
    return x;
}

/* dir/mitmproxy-ca-cert.pem: the certificate the agent trusts (a new reference). */
static X509 *read_root(const char *dir)
{
    char path[4096];
    ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_CERT_PEM);
    BIO *bio = BIO_new_file(path, "r");
    assert_non_null(bio);
    X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    assert_non_null(x);
    BIO_free(bio);
    return x;
}

/* X509_verify_cert()'s error (X509_V_OK when it verifies) for leaf, sent with the chain
 * inter (NULL: none), by a client trusting root alone; strict, TLS server purpose. */
static int verify_error(X509 *root, X509 *inter, X509 *leaf)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    STACK_OF(X509) *chain = sk_X509_new_null();
    assert_non_null(chain);
    if (inter != NULL) {
        assert_true(sk_X509_push(chain, inter) > 0);
    }
    assert_int_equal(X509_STORE_add_cert(store, root), 1);
    assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, chain), 1);
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx), X509_V_FLAG_X509_STRICT);
    int rc = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    sk_X509_free(chain);
    return rc;
}

/* `openssl verify -CAfile dir/mitmproxy-ca-cert.pem -untrusted <intermediate> -x509_strict
 * -purpose sslserver leaf`: its exit status. */
static int openssl_verify(const char *dir, X509 *inter, X509 *leaf)
{
    char tmp[CT_DIR_LEN], ipath[128], lpath[128], cmd[1024];
    ct_tmpdir(tmp);
    ct_path(ipath, sizeof(ipath), "%s/inter.pem", tmp);
    ct_path(lpath, sizeof(lpath), "%s/leaf.pem", tmp);
    ct_write_cert(ipath, inter);
    ct_write_cert(lpath, leaf);
    ct_path(
        cmd, sizeof(cmd),
        "openssl verify -CAfile %s/%s -untrusted %s -x509_strict -purpose sslserver %s >/dev/null",
        dir, CA_FILE_CERT_PEM, ipath, lpath);
    fflush(NULL);
    int st = system(cmd);
    ct_rmtree(tmp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* ---- constraints from host patterns ---- */

static void test_ca_constraints_patterns(void **state)
{
    static const struct {
        const char *patterns; /* space-separated */
        const char *want;     /* describe(), or NULL when the last pattern is refused */
    } cases[] = {
        {"github.com", "DNS:github.com"},
        {".github.com", "DNS:github.com"},
        {"*.github.com", "DNS:github.com"},
        {"api?.example.com", "DNS:example.com"},
        {"bucket-*.s3.amazonaws.com", "DNS:s3.amazonaws.com"},
        {"*.s3.*.amazonaws.com", "DNS:amazonaws.com"},
        {"*github.com", "DNS:com"},
        {"api.github.com github.com", "DNS:github.com"},
        {"github.com api.github.com .github.com", "DNS:github.com"},
        {"a.example.com b.example.com example.com", "DNS:example.com"},
        {"Example.COM.", "DNS:example.com"},
        {"pypi.org files.pythonhosted.org", "DNS:pypi.org, DNS:files.pythonhosted.org"},
        {"10.0.0.1", "IP:10.0.0.1/32"},
        {"2001:db8::1", "IP:2001:db8::1/128"},
        {"[2001:db8::1] 10.0.0.1 10.0.0.1", "IP:2001:db8::1/128, IP:10.0.0.1/32"},
        {"*", NULL},
        {"*.*", NULL},
        {"10.0.0.*", NULL},
        {"github.*", NULL},
        {"api.github.com ?", NULL},
        {"a..b", NULL},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ca_constraints_t *c = ca_constraints_new();
        char words[256], err[ERRLEN], got[1024];
        int rc = 0;
        snprintf(words, sizeof(words), "%s", cases[i].patterns);
        for (char *save = NULL, *w = strtok_r(words, " ", &save); w != NULL;
             w = strtok_r(NULL, " ", &save)) {
            rc = ca_constraints_add_host(c, w, strlen(w), err, ERRLEN);
            if (rc != 0) {
                break;
            }
        }
        if (cases[i].want == NULL) {
            assert_true(rc < 0);
            assert_true(strlen(err) > 0);
        } else {
            assert_int_equal(rc, 0);
            describe(c, got, sizeof(got));
            if (strcmp(got, cases[i].want) != 0) {
                fprintf(stderr, "case %zu (%s): got '%s', want '%s'\n", i, cases[i].patterns, got,
                        cases[i].want);
            }
            assert_string_equal(got, cases[i].want);
        }
        ca_constraints_free(c);
    }
}

static void test_ca_constraints_refusal_names_pattern(void **state)
{
    char err[ERRLEN];
    ca_constraints_t *c = ca_constraints_new();
    (void)state;
    assert_int_equal(ca_constraints_add_host(c, "*", 1, err, ERRLEN), PX_EPARSE);
    assert_non_null(strstr(err, "'*'"));
    assert_non_null(strstr(err, "cannot be limited"));
    ca_constraints_free(c);
}

static void test_ca_constraints_permits(void **state)
{
    static const char *const pats[] = {".github.com", "pypi.org", "10.0.0.1", "2001:db8::1"};
    static const struct {
        const char *name;
        int ok;
    } cases[] = {
        {"github.com", 1},      {"api.github.com", 1},  {"A.B.GitHub.com.", 1},
        {"pypi.org", 1},        {"files.pypi.org", 1},  {"evilgithub.com", 0},
        {"github.com.evil", 0}, {"hub.com", 0},         {"example.com", 0},
        {"10.0.0.1", 1},        {"10.0.0.2", 0},        {"[2001:db8::1]", 1},
        {"2001:db8::2", 0},     {"::ffff:10.0.0.1", 0}, {"", 0},
    };
    char err[ERRLEN];
    ca_constraints_t *c = ca_constraints_new();
    (void)state;
    for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
        assert_int_equal(ca_constraints_add_host(c, pats[i], strlen(pats[i]), err, ERRLEN), 0);
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = ca_constraints_permits(c, cases[i].name, strlen(cases[i].name));
        if (got != cases[i].ok) {
            fprintf(stderr, "%s: got %d\n", cases[i].name, got);
        }
        assert_int_equal(got, cases[i].ok);
    }
    assert_int_equal(ca_constraints_permits(NULL, "anything.example", 16), 1);
    ca_constraints_free(c);
}

/* ---- constraints from allowlists (every format) ---- */

static void test_ca_constraints_from_allowlists(void **state)
{
    static const struct {
        addon_policy_format_t fmt;
        const char *text;
        const char *want; /* NULL: refused */
    } cases[] = {
        {ADDON_POLICY_FORMAT_NATIVE,
         "domains:\n  - .example.com\n  - pypi.org\nurl_prefixes:\n  - host: api.github.com\n"
         "    path: /repos/*\n  - host: \"*.githubusercontent.com\"\n"
         "block:\n  - \"*.evil.example.com\"\n",
         "DNS:example.com, DNS:pypi.org, DNS:api.github.com, DNS:githubusercontent.com"},
        {ADDON_POLICY_FORMAT_NATIVE, "{\"domains\": [\"github.com\", \"10.1.2.3\"]}",
         "DNS:github.com, IP:10.1.2.3/32"},
        {ADDON_POLICY_FORMAT_DOMAIN_LIST, ".squid-cache.org\nwww.example.com\n# c\n\n.github.com\n",
         "DNS:squid-cache.org, DNS:www.example.com, DNS:github.com"},
        {ADDON_POLICY_FORMAT_AGENTBOX,
         "[network]\nallow_hosts = [\"github.com\", \"*.githubusercontent.com\", "
         "{ host = \"sso.internal\", ports = [8443] }]\nblock_hosts = [\"api.openai.com\"]\n",
         "DNS:platform.openai.com, DNS:chatgpt.com, DNS:chat.openai.com, DNS:auth.openai.com, "
         "DNS:api.anthropic.com, DNS:github.com, DNS:githubusercontent.com, DNS:sso.internal"},
        {ADDON_POLICY_FORMAT_NATIVE, "domains:\n  - github.com\n  - \"*\"\n", NULL},
        {ADDON_POLICY_FORMAT_DOMAIN_LIST, "github.com\n192.168.*\n", NULL},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char got[1024] = "", err[ERRLEN] = "";
        int rc = from_allowlist(cases[i].text, cases[i].fmt, got, sizeof(got), err);
        if (cases[i].want == NULL) {
            assert_true(rc < 0);
            assert_non_null(strstr(err, "domains[1]"));
            continue;
        }
        if (rc != 0 || strcmp(got, cases[i].want) != 0) {
            fprintf(stderr, "case %zu: rc %d '%s' (%s), want '%s'\n", i, rc, got, err,
                    cases[i].want);
        }
        assert_int_equal(rc, 0);
        assert_string_equal(got, cases[i].want);
    }
}

/* ---- the CA ---- */

static void test_ca_constraints_ca_file(void **state)
{
    static const char *const pats[] = {".github.com", "10.0.0.1", NULL};
    char dir[CT_DIR_LEN], got[1024];
    (void)state;
    ca_t *ca = make_conv_ca(dir, pats, 7);
    X509 *cert = ca_get_cert(ca);

    describe(ca_get_constraints(ca), got, sizeof(got));
    assert_string_equal(got, "DNS:github.com, IP:10.0.0.1/32");
    int crit = 0;
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(cert, NID_name_constraints, &crit, NULL);
    assert_non_null(nc);
    assert_int_equal(crit, 1);
    assert_int_equal(sk_GENERAL_SUBTREE_num(nc->permittedSubtrees), 2);
    assert_null(nc->excludedSubtrees);
    NAME_CONSTRAINTS_free(nc);
    /* days, not years; pathlen 0 */
    time_t now = time(NULL);
    time_t end = ct_time(X509_get0_notAfter(cert));
    assert_true(end > now + 7 * 86400 - 120 && end < now + 7 * 86400 + 120);
    BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(cert, NID_basic_constraints, NULL, NULL);
    assert_non_null(bc);
    assert_true(bc->ca);
    assert_non_null(bc->pathlen);
    assert_int_equal(ASN1_INTEGER_get(bc->pathlen), 0);
    BASIC_CONSTRAINTS_free(bc);
    /* The agent trusts a root that is constrained the same way, whose key was thrown away:
     * the only key in the confdir is the intermediate's. */
    X509 *root = read_root(dir);
    assert_int_not_equal(X509_cmp(root, cert), 0);
    assert_int_equal(X509_check_issued(root, cert), X509_V_OK);
    assert_int_equal(X509_check_issued(root, root), X509_V_OK);
    crit = 0;
    nc = X509_get_ext_d2i(root, NID_name_constraints, &crit, NULL);
    assert_non_null(nc);
    assert_int_equal(crit, 1);
    NAME_CONSTRAINTS_free(nc);
    assert_true(ct_time(X509_get0_notAfter(root)) < now + 8 * 86400);
    /* the intermediate lies inside the root's validity, though made a moment later */
    assert_true(ct_time(X509_get0_notAfter(cert)) <= ct_time(X509_get0_notAfter(root)));
    assert_true(ct_time(X509_get0_notBefore(cert)) >= ct_time(X509_get0_notBefore(root)));
    X509_free(root);
    ca_free(ca);
    ct_rmtree(dir);
}

static void test_ca_constraints_excludes_all_addresses_without_ip(void **state)
{
    static const char *const pats[] = {"example.com", NULL};
    char dir[CT_DIR_LEN], got[1024];
    (void)state;
    ca_t *ca = make_conv_ca(dir, pats, 1);
    describe(ca_get_constraints(ca), got, sizeof(got));
    assert_string_equal(got,
                        "DNS:example.com, excluded IP:0.0.0.0/0, excluded IP:::/0");
    ca_leaf_t *leaf = NULL;
    assert_int_equal(ca_leaf_acquire(ca, "127.0.0.1", 9, &leaf), PX_EFORBIDDEN);
    assert_null(leaf);
    X509 *root = read_root(dir);
    X509 *x = sign_by_hand(dir, "127.0.0.1", 1);
    assert_int_equal(verify_error(root, ca_get_cert(ca), x), X509_V_ERR_EXCLUDED_VIOLATION);
    X509_free(x);
    X509_free(root);
    ca_free(ca);
    ct_rmtree(dir);
}

static void test_ca_constraints_leaf_inside(void **state)
{
    static const char *const pats[] = {".github.com", "pypi.org", "10.0.0.1", "2001:db8::1", NULL};
    static const char *const names[] = {"github.com", "api.github.com", "x.y.github.com",
                                        "pypi.org",   "10.0.0.1",       "[2001:db8::1]"};
    char dir[CT_DIR_LEN];
    (void)state;
    ca_t *ca = make_conv_ca(dir, pats, 7);
    X509 *root = read_root(dir);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        ca_leaf_t *leaf = NULL;
        assert_int_equal(ca_name_permitted(ca, names[i], strlen(names[i])), 1);
        assert_int_equal(ca_leaf_acquire(ca, names[i], strlen(names[i]), &leaf), 0);
        X509 *x = ca_leaf_get_cert(leaf);
        int err = verify_error(root, ca_get_cert(ca), x);
        if (err != X509_V_OK) {
            fprintf(stderr, "%s: %s\n", names[i], X509_verify_cert_error_string(err));
        }
        assert_int_equal(err, X509_V_OK);
        assert_int_equal(openssl_verify(dir, ca_get_cert(ca), x), 0);
        /* no leaf outlives its CA */
        assert_true(ct_time(X509_get0_notAfter(x)) <= ct_time(X509_get0_notAfter(ca_get_cert(ca))));
        ca_leaf_release(leaf);
    }
    X509_free(root);
    ca_free(ca);
    ct_rmtree(dir);
}

static void test_ca_constraints_leaf_outside_refused(void **state)
{
    static const char *const pats[] = {".github.com", "10.0.0.1", NULL};
    static const char *const names[] = {"example.com", "evilgithub.com", "github.com.evil.net",
                                        "10.0.0.2",    "2001:db8::1",    "localhost"};
    char dir[CT_DIR_LEN];
    ca_cache_stats_t st;
    (void)state;
    ca_t *ca = make_conv_ca(dir, pats, 7);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        ca_leaf_t *leaf = (ca_leaf_t *)1;
        assert_int_equal(ca_name_permitted(ca, names[i], strlen(names[i])), 0);
        assert_int_equal(ca_leaf_acquire(ca, names[i], strlen(names[i]), &leaf), PX_EFORBIDDEN);
        assert_null(leaf);
        leaf = (ca_leaf_t *)1;
        assert_int_equal(ca_mint_leaf(ca, names[i], strlen(names[i]), &leaf), PX_EFORBIDDEN);
        assert_null(leaf);
    }
    ca_cache_get_stats(ca, &st);
    assert_int_equal(st.count, 0); /* nothing minted, nothing cached */
    /* The same CA's key can still sign outside, by hand: clients that honour name
     * constraints (OpenSSL here) reject it. */
    X509 *root = read_root(dir);
    X509 *inter = ca_get_cert(ca);
    X509 *x = sign_by_hand(dir, "example.com", 0);
    assert_int_equal(verify_error(root, inter, x), X509_V_ERR_PERMITTED_VIOLATION);
    X509_free(x);
    x = sign_by_hand(dir, "10.0.0.2", 1);
    assert_int_equal(verify_error(root, inter, x), X509_V_ERR_PERMITTED_VIOLATION);
    X509_free(x);
    x = sign_by_hand(dir, "api.github.com", 0);
    assert_int_equal(verify_error(root, inter, x), X509_V_OK);
    X509_free(x);
    X509_free(root);
    ca_free(ca);
    ct_rmtree(dir);
}

/* A CA made elsewhere with constraints (excluded subtrees, a leading-dot base) is honoured too. */
static void test_ca_constraints_foreign_ca(void **state)
{
    char dir[CT_DIR_LEN], err[ERRLEN];
    X509V3_CTX ctx;
    ca_t *ca = NULL;
    (void)state;
    ct_tmpdir(dir);
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = ct_make_ca_cert(key, 1, 1);
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    assert_true(ct_add_ext(cert, &ctx, NID_name_constraints,
                           "critical,permitted;DNS:.example.com,permitted;DNS:example.org,"
                           "excluded;DNS:bad.example.com,permitted;email:x@example.com"));
    assert_true(X509_sign(cert, key, EVP_sha256()) > 0);
    ct_write_mitm_pem(dir, key, cert, CT_KEY_PKCS8);
    assert_int_equal(ca_load(&ca, dir, 0, 0, err, ERRLEN), 0);
    static const struct {
        const char *name;
        int ok;
    } cases[] = {
        {"a.example.com", 1},     {"example.com", 0}, {"bad.example.com", 0},
        {"x.bad.example.com", 0}, {"example.org", 1}, {"a.example.org", 1},
        {"example.net", 0},       {"10.0.0.1", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ca_leaf_t *leaf = NULL;
        int rc = ca_leaf_acquire(ca, cases[i].name, strlen(cases[i].name), &leaf);
        assert_int_equal(rc, cases[i].ok ? 0 : PX_EFORBIDDEN);
        if (leaf != NULL) {
            assert_int_equal(verify_error(cert, NULL, ca_leaf_get_cert(leaf)), X509_V_OK);
        }
        ca_leaf_release(leaf);
    }
    ca_free(ca);
    X509_free(cert);
    EVP_PKEY_free(key);
    ct_rmtree(dir);
}

static void test_ca_constraints_unconstrained_ca(void **state)
{
    char dir[CT_DIR_LEN], err[ERRLEN];
    ca_t *ca = NULL;
    ca_leaf_t *leaf = NULL;
    (void)state;
    ct_tmpdir(dir);
    assert_int_equal(ca_load(&ca, dir, CA_CREATE, 0, err, ERRLEN), 0);
    assert_null(ca_get_constraints(ca));
    assert_int_equal(ca_name_permitted(ca, "anything.example", 16), 1);
    assert_int_equal(ca_leaf_acquire(ca, "anything.example", 16, &leaf), 0);
    ca_leaf_release(leaf);
    ca_free(ca);
    ct_rmtree(dir);
}

static void test_ca_constraints_init_errors(void **state)
{
    char dir[CT_DIR_LEN], err[ERRLEN];
    ca_constraints_t *c = ca_constraints_new();
    (void)state;
    ct_tmpdir(dir);
    assert_int_equal(ca_constraints_add_host(c, "10.0.0.1", 8, err, ERRLEN), 0);
    /* addresses alone would leave every DNS name open */
    assert_int_equal(ca_init_constrained(dir, c, 7, err, ERRLEN), PX_ECONFIG);
    assert_non_null(strstr(err, "DNS"));
    assert_int_equal(ca_constraints_add_host(c, "example.com", 11, err, ERRLEN), 0);
    assert_int_equal(ca_init_constrained(dir, c, 0, err, ERRLEN), PX_ECONFIG);
    assert_int_equal(ca_init_constrained(dir, c, CA_CONV_MAX_DAYS + 1, err, ERRLEN), PX_ECONFIG);
    assert_int_equal(ca_init_constrained(dir, c, CA_CONV_MAX_DAYS, err, ERRLEN), 0);
    /* never replaces a CA */
    assert_int_equal(ca_init_constrained(dir, c, 7, err, ERRLEN), PX_ECONFIG);
    assert_non_null(strstr(err, "already holds a CA"));
    /* its certificate files are the root's, which is not kept: `ca init` cannot rebuild them
     * from the intermediate, and says so rather than hand agents the wrong certificate */
    char path[4096];
    int result = -1;
    ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_CERT_PEM);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(ca_init_confdir(dir, &result, err, ERRLEN), PX_ECONFIG);
    assert_non_null(strstr(err, "cannot be rebuilt"));
    assert_int_equal(access(path, F_OK), -1);
    ca_constraints_free(c);
    ct_rmtree(dir);
}

static void test_ca_constraints_cap(void **state)
{
    char err[ERRLEN], name[64];
    ca_constraints_t *c = ca_constraints_new();
    int rc = 0;
    (void)state;
    for (int i = 0; i <= CA_CONSTRAINTS_MAX && rc == 0; i++) {
        snprintf(name, sizeof(name), "h%d.example", i);
        rc = ca_constraints_add_host(c, name, strlen(name), err, ERRLEN);
    }
    assert_int_equal(rc, PX_ETOOBIG);
    assert_int_equal(ca_constraints_count(c), CA_CONSTRAINTS_MAX);
    ca_constraints_free(c);
}

/* px_caconv_create: the file-level path of `airlock ca init --per-conversation`. */
static void test_ca_constraints_create_from_file(void **state)
{
    char dir[CT_DIR_LEN], conf[4096], allow[4096], err[ERRLEN];
    char *desc = NULL;
    ca_t *ca = NULL;
    (void)state;
    ct_tmpdir(dir);
    ct_path(allow, sizeof(allow), "%s/allowlist.txt", dir);
    ct_path(conf, sizeof(conf), "%s/conf", dir);
    const char *list = "# a domain list\n.github.com\npypi.org\n";
    ct_write_file(allow, list, strlen(list), 0644);
    assert_int_equal(
        px_caconv_create(conf, allow, ADDON_POLICY_FORMAT_AUTO, 3, "10.9.8.7", &desc, err, ERRLEN),
        0);
    assert_string_equal(desc, "DNS:github.com, DNS:pypi.org, IP:10.9.8.7/32");
    free(desc);
    assert_int_equal(ca_load(&ca, conf, 0, 0, err, ERRLEN), 0);
    assert_int_equal(ca_name_permitted(ca, "api.github.com", 14), 1);
    assert_int_equal(ca_name_permitted(ca, "example.com", 11), 0);
    assert_int_equal(ca_name_permitted(ca, "10.9.8.7", 8), 1);
    assert_int_equal(ca_name_permitted(ca, "10.9.8.6", 8), 0);
    ca_free(ca);
    /* a missing allowlist is an error, not an empty CA */
    ct_path(allow, sizeof(allow), "%s/missing.txt", dir);
    ct_path(conf, sizeof(conf), "%s/conf2", dir);
    assert_true(
        px_caconv_create(conf, allow, ADDON_POLICY_FORMAT_AUTO, 3, NULL, NULL, err, ERRLEN) < 0);
    ct_rmtree(dir);
}

/* px_caconv_sandbox: one sandbox's CA under --sandboxes --ca-per-conversation. */
static int sandbox_ca(const char *priv, const char *pub, const char *list, ca_t **ca, char **desc,
                      char *err)
{
    addon_policy_t *p = NULL;
    assert_int_equal(addon_policy_load_buffer_as("allow", list, strlen(list),
                                                 ADDON_POLICY_FORMAT_AUTO, &p, err, ERRLEN),
                     0);
    px_caconv_sb_t a = {priv, pub, p, "allow", 3, "10.0.0.1"};
    int created = -1;
    int rc = px_caconv_sandbox(&a, ca, &created, desc, err, ERRLEN);
    assert_int_equal(created, rc == 0 && *desc != NULL);
    addon_policy_unref(p);
    return rc;
}

static void test_ca_constraints_sandbox_ca(void **state)
{
    char dir[CT_DIR_LEN], priv[4096], pub[4096], path[4096], err[ERRLEN];
    char *desc = NULL;
    ca_t *ca = NULL, *again = NULL;
    struct stat st;
    size_t len;
    (void)state;
    ct_tmpdir(dir);
    ct_path(priv, sizeof(priv), "%s/conf/sandbox-ca/a", dir);
    ct_path(pub, sizeof(pub), "%s/a", dir);
    assert_int_equal(mkdir(pub, 0755), 0);
    assert_int_equal(sandbox_ca(priv, pub, "a.test\n", &ca, &desc, err), 0);
    assert_string_equal(desc, "DNS:a.test, IP:10.0.0.1/32");
    free(desc);
    assert_int_equal(ca_name_permitted(ca, "www.a.test", 10), 1);
    assert_int_equal(ca_name_permitted(ca, "b.test", 6), 0);
    /* the sandbox's directory gets the root certificate only; the key stays in priv */
    ct_path(path, sizeof(path), "%s/%s", pub, CA_FILE_CERT_PEM);
    char *text = ct_read_file(path, &len);
    assert_non_null(strstr(text, "BEGIN CERTIFICATE"));
    assert_null(strstr(text, "PRIVATE KEY"));
    free(text);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    ct_path(path, sizeof(path), "%s/%s", pub, CA_FILE_KEY_CERT);
    assert_int_equal(access(path, F_OK), -1);
    ct_path(path, sizeof(path), "%s/%s", priv, CA_FILE_KEY_CERT);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* a second start reuses it */
    assert_int_equal(sandbox_ca(priv, pub, "a.test\nb.test\n", &again, &desc, err), 0);
    assert_null(desc);
    assert_int_equal(X509_cmp(ca_get_cert(ca), ca_get_cert(again)), 0);
    assert_int_equal(ca_name_permitted(again, "b.test", 6), 0);
    ca_free(again);
    /* a root that did not issue the CA is never handed out */
    char priv2[4096];
    ct_path(priv2, sizeof(priv2), "%s/conf/sandbox-ca/b", dir);
    assert_int_equal(sandbox_ca(priv2, pub, "b.test\n", &again, &desc, err), 0);
    free(desc);
    ca_free(again);
    ct_path(path, sizeof(path), "%s/%s", priv2, CA_FILE_CERT_PEM);
    text = ct_read_file(path, &len);
    ct_path(path, sizeof(path), "%s/%s", priv, CA_FILE_CERT_PEM);
    ct_write_file(path, text, len, 0644);
    free(text);
    assert_true(sandbox_ca(priv, pub, "a.test\n", &again, &desc, err) < 0);
    assert_non_null(strstr(err, "did not issue"));
    assert_null(again);
    ct_path(path, sizeof(path), "%s/%s", priv, CA_FILE_KEY_CERT);
    assert_int_equal(access(path, F_OK), 0); /* not made by this call: not removed */
    /* an unconstrained CA is refused */
    int result;
    ct_path(path, sizeof(path), "%s/conf/sandbox-ca/plain", dir);
    assert_int_equal(ca_init_confdir(path, &result, err, ERRLEN), 0);
    assert_true(sandbox_ca(path, pub, "a.test\n", &again, &desc, err) < 0);
    assert_non_null(strstr(err, "no name constraints"));
    /* an allowlist no constraint can hold: refused, nothing left behind */
    ct_path(path, sizeof(path), "%s/conf/sandbox-ca/star", dir);
    assert_true(sandbox_ca(path, pub, "*\n", &again, &desc, err) < 0);
    assert_non_null(strstr(err, "host pattern '*'"));
    assert_int_equal(access(path, F_OK), -1);
    /* removal: the key and the directory go; the loaded CA still signs */
    assert_int_equal(ca_remove_confdir(priv), 0);
    assert_int_equal(access(priv, F_OK), -1);
    ca_leaf_t *leaf = NULL;
    assert_int_equal(ca_leaf_acquire(ca, "a.test", 6, &leaf), 0);
    ca_leaf_release(leaf);
    ca_free(ca);
    assert_int_equal(ca_name_permitted(NULL, "a.test", 6), 0);
    ct_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_constraints_patterns),
        cmocka_unit_test(test_ca_constraints_refusal_names_pattern),
        cmocka_unit_test(test_ca_constraints_permits),
        cmocka_unit_test(test_ca_constraints_from_allowlists),
        cmocka_unit_test(test_ca_constraints_ca_file),
        cmocka_unit_test(test_ca_constraints_excludes_all_addresses_without_ip),
        cmocka_unit_test(test_ca_constraints_leaf_inside),
        cmocka_unit_test(test_ca_constraints_leaf_outside_refused),
        cmocka_unit_test(test_ca_constraints_foreign_ca),
        cmocka_unit_test(test_ca_constraints_unconstrained_ca),
        cmocka_unit_test(test_ca_constraints_init_errors),
        cmocka_unit_test(test_ca_constraints_cap),
        cmocka_unit_test(test_ca_constraints_create_from_file),
        cmocka_unit_test(test_ca_constraints_sandbox_ca),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
