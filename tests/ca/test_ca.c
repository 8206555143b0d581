/* ca/: loading, generating and writing the CA files (mitmproxy's format), ca_init_confdir(),
 * and a mitmproxy-generated CA when AIRLOCK_MITM_CONFDIR names one. Leaves and the cache are
 * in test_ca_leaf.c. */
#include "tests/ca/ca_test_util.h"

#define ERRLEN CA_ERR_LEN

/* ---- helpers ---- */

static void assert_mode(const char *dir, const char *file, mode_t mode)
{
    char path[4096];
    struct stat st;

    ct_path(path, sizeof(path), "%s/%s", dir, file);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, mode);
}

static size_t count_entries(const char *dir)
{
    char cmd[256];
    size_t n = 0;
    ct_path(cmd, sizeof(cmd), "ls -A %s", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    for (int ch = fgetc(p); ch != EOF; ch = fgetc(p)) {
        n += ch == '\n';
    }
    pclose(p);
    return n;
}

/* Mints a leaf for name and checks it chains to the CA (API and `openssl verify`). */
static void assert_mints_and_verifies(ca_t *ca, const char *cafile, int strict)
{
    ca_leaf_t *leaf = NULL;

    assert_int_equal(ca_leaf_acquire(ca, "example.com", 11, &leaf), 0);
    assert_non_null(leaf);
    assert_int_equal(X509_verify(ca_leaf_get_cert(leaf), X509_get0_pubkey(ca_get_cert(ca))), 1);
    if (strict) {
        assert_int_equal(ct_verify_chain(ca_get_cert(ca), ca_leaf_get_cert(leaf)), 1);
    }
    assert_int_equal(
        ct_openssl_verify(cafile, ca_leaf_get_cert(leaf), strict ? CT_VERIFY_STRICT : 0), 0);
    ca_leaf_release(leaf);
}

/* The base64 body's first line of key's PKCS#8 PEM, to prove errors never echo it. */
static void key_fragment(EVP_PKEY *key, char *out, size_t len)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL;
    assert_int_equal(PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL), 1);
    long n = BIO_get_mem_data(bio, &data);
    const char *nl = memchr(data, '\n', (size_t)n);
    assert_non_null(nl);
    snprintf(out, len, "%.16s", nl + 1 + 16);
    BIO_free(bio);
}

/* ---- generation ---- */

static void test_ca_generate_writes_files(void **state)
{
    char dir[CT_DIR_LEN], err[ERRLEN], path[4096], certpem[4096];
    ca_t *ca = NULL, *again = NULL;
    size_t len_pem, len_cer, len_key;
    mode_t old = umask(077); /* the cert files must still come out 0644 */

    (void)state;
    ct_tmpdir(dir);
    assert_int_equal(ca_load(&ca, dir, CA_CREATE, 0, err, sizeof(err)), 0);
    umask(old);
    assert_string_equal(err, "");
    assert_int_equal(ca_was_generated(ca), 1);

    assert_mode(dir, CA_FILE_KEY_CERT, 0600);
    assert_mode(dir, CA_FILE_CERT_PEM, 0644);
    assert_mode(dir, CA_FILE_CERT_CER, 0644);
    assert_int_equal(count_entries(dir), 3); /* no temporary files left behind */

    ct_path(certpem, sizeof(certpem), "%s/%s", dir, CA_FILE_CERT_PEM);
    char *pem = ct_read_file(certpem, &len_pem);
    ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_CERT_CER);
    char *cer = ct_read_file(path, &len_cer);
    ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_KEY_CERT);
    char *key = ct_read_file(path, &len_key);
    assert_int_equal(len_pem, len_cer);
    assert_memory_equal(pem, cer, len_pem);
    assert_true(strncmp(pem, "-----BEGIN CERTIFICATE-----\n", 28) == 0);
    assert_null(strstr(pem, "PRIVATE KEY"));
    /* mitmproxy-ca.pem = key, then exactly the certificate of mitmproxy-ca-cert.pem */
    assert_true(strncmp(key, "-----BEGIN PRIVATE KEY-----\n", 28) == 0);
    assert_true(len_key > len_pem);
    assert_memory_equal(key + len_key - len_pem, pem, len_pem);

    BIO *bio = BIO_new_mem_buf(pem, (int)len_pem);
    X509 *file_cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    assert_non_null(file_cert);
    assert_int_equal(X509_cmp(file_cert, ca_get_cert(ca)), 0);

    /* A second load reads the same CA and generates nothing. */
    assert_int_equal(ca_load(&again, dir, CA_CREATE, 0, err, sizeof(err)), 0);
    assert_int_equal(ca_was_generated(again), 0);
    assert_int_equal(X509_cmp(ca_get_cert(again), ca_get_cert(ca)), 0);
    assert_int_equal(
        EVP_PKEY_eq(X509_get0_pubkey(ca_get_cert(again)), X509_get0_pubkey(ca_get_cert(ca))), 1);
    assert_mints_and_verifies(again, certpem, 1);

    X509_free(file_cert);
    free(pem);
    free(cer);
    free(key);
    ca_free(again);
    ca_free(ca);
    ct_rmtree(dir);
}

static void test_ca_generate_fields(void **state)
{
    char dir[CT_DIR_LEN], err[ERRLEN], buf[256];
    ca_t *ca = NULL;
    int crit = -1;

    (void)state;
    ct_tmpdir(dir);
    time_t now = time(NULL);
    assert_int_equal(ca_load(&ca, dir, CA_CREATE, 0, err, sizeof(err)), 0);
    X509 *x = ca_get_cert(ca);

    assert_int_equal(X509_get_version(x), X509_VERSION_3);
    X509_NAME *subj = X509_get_subject_name(x);
    assert_int_equal(X509_NAME_entry_count(subj), 2);
    assert_int_equal(X509_NAME_get_text_by_NID(subj, NID_commonName, buf, sizeof(buf)), 10);
    assert_string_equal(buf, "airlock CA");
    assert_int_equal(X509_NAME_get_text_by_NID(subj, NID_organizationName, buf, sizeof(buf)), 7);
    assert_string_equal(buf, "airlock");
    assert_int_equal(X509_NAME_cmp(subj, X509_get_issuer_name(x)), 0);

    BIGNUM *serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    assert_false(BN_is_negative(serial));
    assert_false(BN_is_zero(serial));
    assert_true(BN_num_bits(serial) <= 128);
    BN_free(serial);

    time_t nb = ct_time(X509_get0_notBefore(x));
    time_t na = ct_time(X509_get0_notAfter(x));
    assert_true(llabs((long long)(nb - (now - 2 * 86400))) <= 120);
    assert_int_equal(na - nb, (time_t)3650 * 86400);

    BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
    assert_non_null(bc);
    assert_true(bc->ca);
    assert_null(bc->pathlen);
    assert_int_equal(crit, 1);
    BASIC_CONSTRAINTS_free(bc);

    ASN1_BIT_STRING *ku = X509_get_ext_d2i(x, NID_key_usage, &crit, NULL);
    assert_non_null(ku);
    assert_int_equal(crit, 1);
    ASN1_BIT_STRING_free(ku);
    assert_int_equal(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);

    const ASN1_OCTET_STRING *ski = X509_get0_subject_key_id(x);
    assert_non_null(ski);
    assert_int_equal(ASN1_STRING_length(ski), 20);

    EVP_PKEY *pub = X509_get0_pubkey(x);
    assert_int_equal(EVP_PKEY_get_base_id(pub), EVP_PKEY_EC);
    assert_int_equal(EVP_PKEY_get_group_name(pub, buf, sizeof(buf), NULL), 1);
    assert_string_equal(buf, "prime256v1");
    assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
    assert_int_equal(X509_verify(x, pub), 1);
    assert_int_equal(X509_check_ca(x), 1);

    char fp[CA_FINGERPRINT_LEN];
    assert_int_equal(ca_get_fingerprint(ca, fp, sizeof(fp)), 0);
    assert_int_equal(strlen(fp), 95);
    assert_int_equal(ca_get_fingerprint(ca, fp, 10), PX_ETOOBIG);

    ca_free(ca);
    ct_rmtree(dir);
}

/* Creation makes missing parent directories (0700). */
static void test_ca_generate_nested_confdir(void **state)
{
    char dir[CT_DIR_LEN], sub[256], err[ERRLEN];
    ca_t *ca = NULL;
    struct stat st;

    (void)state;
    ct_tmpdir(dir);
    ct_path(sub, sizeof(sub), "%s/a/b/confdir", dir);
    assert_int_equal(ca_load(&ca, sub, CA_CREATE, 0, err, sizeof(err)), 0);
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_mode(sub, CA_FILE_KEY_CERT, 0600);
    ca_free(ca);
    ct_rmtree(dir);
}

/* Processes racing to create one confdir's CA end up agreeing on a single CA. */
static void test_ca_generate_race(void **state)
{
    enum { NPROC = 4 };
    char dir[CT_DIR_LEN], err[ERRLEN], path[4096];
    pid_t pids[NPROC];
    int fds[NPROC];

    (void)state;
    ct_tmpdir(dir);
    fflush(NULL);
    for (int i = 0; i < NPROC; i++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            ca_t *ca = NULL;
            char fp[CA_FINGERPRINT_LEN] = "";
            close(p[0]);
            if (ca_load(&ca, dir, CA_CREATE, 16, err, sizeof(err)) == 0) {
                ca_get_fingerprint(ca, fp, sizeof(fp));
            }
            ssize_t w = write(p[1], fp, sizeof(fp));
            _exit(w == (ssize_t)sizeof(fp) ? 0 : 1);
        }
        close(p[1]);
        fds[i] = p[0];
    }
    char fps[NPROC][CA_FINGERPRINT_LEN];
    for (int i = 0; i < NPROC; i++) {
        int status;
        assert_int_equal(read(fds[i], fps[i], CA_FINGERPRINT_LEN), CA_FINGERPRINT_LEN);
        close(fds[i]);
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(strlen(fps[i]), 95);
        assert_string_equal(fps[i], fps[0]);
    }
    /* ...and the published certificate file is that CA's. */
    ca_t *ca = NULL;
    char fp[CA_FINGERPRINT_LEN];
    assert_int_equal(ca_load(&ca, dir, 0, 16, err, sizeof(err)), 0);
    assert_int_equal(ca_get_fingerprint(ca, fp, sizeof(fp)), 0);
    assert_string_equal(fp, fps[0]);
    ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_CERT_PEM);
    X509 *file_cert = NULL;
    BIO *bio = BIO_new_file(path, "r");
    assert_non_null(bio);
    file_cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    assert_non_null(file_cert);
    assert_int_equal(X509_cmp(file_cert, ca_get_cert(ca)), 0);
    X509_free(file_cert);
    ca_free(ca);
    assert_int_equal(count_entries(dir), 3);
    ct_rmtree(dir);
}

/* ---- loading ---- */

typedef struct load_case {
    const char *label;
    int rsa;
    enum ct_key_fmt fmt;
    const char *marker; /* expected in the written file */
    int sig_nid;        /* expected leaf signature algorithm */
} load_case_t;

static const load_case_t load_cases[] = {
    {"rsa-traditional", 1, CT_KEY_TRADITIONAL, "-----BEGIN RSA PRIVATE KEY-----",
     NID_sha256WithRSAEncryption},
    {"rsa-pkcs8", 1, CT_KEY_PKCS8, "-----BEGIN PRIVATE KEY-----", NID_sha256WithRSAEncryption},
    {"rsa-cert-first", 1, CT_KEY_CERT_FIRST, "-----BEGIN PRIVATE KEY-----",
     NID_sha256WithRSAEncryption},
    {"ec-traditional", 0, CT_KEY_TRADITIONAL, "-----BEGIN EC PRIVATE KEY-----",
     NID_ecdsa_with_SHA256},
    {"ec-pkcs8", 0, CT_KEY_PKCS8, "-----BEGIN PRIVATE KEY-----", NID_ecdsa_with_SHA256},
};

static void test_ca_load_formats(void **state)
{
    EVP_PKEY *rsa = EVP_RSA_gen(2048);
    EVP_PKEY *ec = EVP_EC_gen("P-256");

    (void)state;
    assert_non_null(rsa);
    assert_non_null(ec);
    for (size_t i = 0; i < sizeof(load_cases) / sizeof(load_cases[0]); i++) {
        const load_case_t *c = &load_cases[i];
        char dir[CT_DIR_LEN], err[ERRLEN], path[4096], certfile[4096];
        ca_t *ca = NULL;
        ca_leaf_t *leaf = NULL;
        size_t len;
        EVP_PKEY *key = c->rsa ? rsa : ec;
        X509 *cert = ct_make_ca_cert(key, 1, 1);

        print_message("load case %s\n", c->label);
        ct_tmpdir(dir);
        ct_write_mitm_pem(dir, key, cert, c->fmt);
        ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_KEY_CERT);
        char *data = ct_read_file(path, &len);
        assert_non_null(strstr(data, c->marker));
        free(data);

        assert_int_equal(ca_load(&ca, dir, 0, 0, err, sizeof(err)), 0);
        assert_int_equal(ca_was_generated(ca), 0);
        assert_int_equal(X509_cmp(ca_get_cert(ca), cert), 0);
        /* Loading never writes: the directory still holds the one file. */
        assert_int_equal(count_entries(dir), 1);

        /* The leaf key is a fresh P-256 key, not the CA key (RSA or EC). */
        assert_int_equal(EVP_PKEY_get_base_id(ca_get_leaf_key(ca)), EVP_PKEY_EC);
        assert_int_not_equal(EVP_PKEY_eq(ca_get_leaf_key(ca), key), 1);

        assert_int_equal(ca_leaf_acquire(ca, "api.example.com", 15, &leaf), 0);
        assert_int_equal(X509_get_signature_nid(ca_leaf_get_cert(leaf)), c->sig_nid);
        assert_int_equal(ct_verify_chain(cert, ca_leaf_get_cert(leaf)), 1);
        ct_path(certfile, sizeof(certfile), "%s/ca-cert.pem", dir);
        ct_write_cert(certfile, cert);
        assert_int_equal(ct_openssl_verify(certfile, ca_leaf_get_cert(leaf), CT_VERIFY_STRICT), 0);
        ca_leaf_release(leaf);

        ca_free(ca);
        X509_free(cert);
        ct_rmtree(dir);
    }
    EVP_PKEY_free(ec);
    EVP_PKEY_free(rsa);
}

/* A CA without a SubjectKeyIdentifier still works; its leaves carry no AKI. */
static void test_ca_load_without_ski(void **state)
{
    char dir[CT_DIR_LEN], err[ERRLEN], certfile[4096];
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = ct_make_ca_cert(key, 0, 1);
    ca_t *ca = NULL;
    ca_leaf_t *leaf = NULL;

    (void)state;
    ct_tmpdir(dir);
    ct_write_mitm_pem(dir, key, cert, CT_KEY_TRADITIONAL);
    assert_int_equal(ca_load(&ca, dir, 0, 0, err, sizeof(err)), 0);
    assert_int_equal(ca_leaf_acquire(ca, "example.org", 11, &leaf), 0);
    assert_int_equal(X509_get_ext_by_NID(ca_leaf_get_cert(leaf), NID_authority_key_identifier, -1),
                     -1);
    ct_path(certfile, sizeof(certfile), "%s/ca-cert.pem", dir);
    ct_write_cert(certfile, cert);
    assert_int_equal(ct_openssl_verify(certfile, ca_leaf_get_cert(leaf), 0), 0);
    ca_leaf_release(leaf);
    ca_free(ca);
    X509_free(cert);
    EVP_PKEY_free(key);
    ct_rmtree(dir);
}

/* ---- load errors ---- */

/* Ways to damage mitmproxy-ca.pem. */
enum bad_kind {
    BAD_EMPTY,
    BAD_GARBAGE,
    BAD_TRUNC_KEY,
    BAD_KEY_ONLY,
    BAD_TRUNC_CERT,
    BAD_CERT_ONLY,
    BAD_BASE64,
    BAD_ENCRYPTED,
    BAD_KEY_MISMATCH,
    BAD_NOT_CA,
    BAD_TOO_BIG,
    BAD_DIRECTORY
};

typedef struct bad_case {
    const char *label;
    enum bad_kind kind;
    int rc;
} bad_case_t;

/* Each case writes a damaged mitmproxy-ca.pem built from a good key + cert PEM. */
static void write_bad_pem(const char *dir, const char *good, size_t len, enum bad_kind kind,
                          EVP_PKEY *key, X509 *cert)
{
    char path[4096];
    ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_KEY_CERT);
    const char *cert_at = strstr(good, "-----BEGIN CERTIFICATE-----");
    assert_non_null(cert_at);
    size_t key_len = (size_t)(cert_at - good);

    switch (kind) {
    case BAD_EMPTY: /* empty */
        ct_write_file(path, "", 0, 0600);
        break;
    case BAD_GARBAGE: /* not PEM at all */
        ct_write_file(path, "hello\n", 6, 0600);
        break;
    case BAD_TRUNC_KEY: /* truncated inside the key */
        ct_write_file(path, good, key_len / 2, 0600);
        break;
    case BAD_KEY_ONLY: /* key only */
        ct_write_file(path, good, key_len, 0600);
        break;
    case BAD_TRUNC_CERT: /* truncated inside the certificate */
        ct_write_file(path, good, key_len + (len - key_len) / 2, 0600);
        break;
    case BAD_CERT_ONLY: /* certificate only */
        ct_write_file(path, cert_at, len - key_len, 0600);
        break;
    case BAD_BASE64: { /* base64 garbage in the certificate body */
        char *copy = malloc(len);
        memcpy(copy, good, len);
        memset(copy + key_len + 40, '!', 30);
        ct_write_file(path, copy, len, 0600);
        free(copy);
        break;
    }
    case BAD_ENCRYPTED: /* encrypted key: refused, and never prompts */
        ct_write_mitm_pem(dir, key, cert, CT_KEY_ENCRYPTED);
        break;
    case BAD_KEY_MISMATCH: { /* key of another CA */
        EVP_PKEY *other = EVP_EC_gen("P-256");
        ct_write_mitm_pem(dir, other, cert, CT_KEY_PKCS8);
        EVP_PKEY_free(other);
        break;
    }
    case BAD_NOT_CA: { /* not a CA certificate */
        X509 *ee = ct_make_ca_cert(key, 1, 0);
        ct_write_mitm_pem(dir, key, ee, CT_KEY_PKCS8);
        X509_free(ee);
        break;
    }
    case BAD_TOO_BIG: { /* larger than CA_PEM_MAX */
        size_t big = CA_PEM_MAX + 100;
        char *junk = malloc(big);
        memset(junk, '\n', big);
        memcpy(junk, good, len);
        ct_write_file(path, junk, big, 0600);
        free(junk);
        break;
    }
    case BAD_DIRECTORY: /* a directory where the file should be */
        assert_int_equal(mkdir(path, 0700), 0);
        break;
    }
}

static const bad_case_t bad_cases[] = {
    {"empty", BAD_EMPTY, PX_EPARSE},
    {"garbage", BAD_GARBAGE, PX_EPARSE},
    {"truncated key", BAD_TRUNC_KEY, PX_EPARSE},
    {"key only", BAD_KEY_ONLY, PX_EPARSE},
    {"truncated cert", BAD_TRUNC_CERT, PX_EPARSE},
    {"cert only", BAD_CERT_ONLY, PX_EPARSE},
    {"bad base64", BAD_BASE64, PX_EPARSE},
    {"encrypted", BAD_ENCRYPTED, PX_EPARSE},
    {"key mismatch", BAD_KEY_MISMATCH, PX_ECONFIG},
    {"not a CA", BAD_NOT_CA, PX_ECONFIG},
    {"too big", BAD_TOO_BIG, PX_ETOOBIG},
    {"directory", BAD_DIRECTORY, PX_EIO},
};

static void test_ca_load_corrupt(void **state)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = ct_make_ca_cert(key, 1, 1);
    char frag[32];
    char good_dir[CT_DIR_LEN], path[4096];
    size_t good_len;

    (void)state;
    key_fragment(key, frag, sizeof(frag));
    ct_tmpdir(good_dir);
    ct_write_mitm_pem(good_dir, key, cert, CT_KEY_PKCS8);
    ct_path(path, sizeof(path), "%s/%s", good_dir, CA_FILE_KEY_CERT);
    char *good = ct_read_file(path, &good_len);

    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        for (int create = 0; create <= 1; create++) {
            char dir[CT_DIR_LEN], err[ERRLEN];
            ca_t *ca = (ca_t *)&err; /* must be reset to NULL */
            print_message("corrupt case %s (create %d)\n", bad_cases[i].label, create);
            ct_tmpdir(dir);
            write_bad_pem(dir, good, good_len, bad_cases[i].kind, key, cert);
            int rc = ca_load(&ca, dir, create ? CA_CREATE : 0, 0, err, sizeof(err));
            assert_int_equal(rc, bad_cases[i].rc);
            assert_null(ca);
            assert_true(strlen(err) > 0);
            assert_null(strstr(err, "-----"));
            assert_null(strstr(err, frag));
            int result = -1;
            assert_int_equal(ca_init_confdir(dir, &result, err, sizeof(err)), bad_cases[i].rc);
            ct_rmtree(dir);
        }
    }
    assert_int_equal(ERR_peek_error(), 0); /* the error queue is left clean */
    free(good);
    ct_rmtree(good_dir);
    X509_free(cert);
    EVP_PKEY_free(key);
}

static void test_ca_load_missing(void **state)
{
    char dir[CT_DIR_LEN], sub[256], err[ERRLEN];
    ca_t *ca = NULL;

    (void)state;
    ct_tmpdir(dir);
    ct_path(sub, sizeof(sub), "%s/does-not-exist", dir);
    assert_int_equal(ca_load(&ca, sub, 0, 0, err, sizeof(err)), PX_ENOENT);
    assert_null(ca);
    assert_non_null(strstr(err, "does not exist"));
    assert_int_equal(access(sub, F_OK), -1); /* nothing created */

    /* An existing but empty confdir: also PX_ENOENT, and still nothing written. */
    assert_int_equal(ca_load(&ca, dir, 0, 0, err, sizeof(err)), PX_ENOENT);
    assert_non_null(strstr(err, CA_FILE_KEY_CERT));
    assert_int_equal(count_entries(dir), 0);

    assert_int_equal(ca_load(&ca, "", CA_CREATE, 0, err, sizeof(err)), PX_ECONFIG);
    assert_int_equal(ca_load(&ca, dir, CA_CREATE, CA_CACHE_MAX_CAP + 1, err, sizeof(err)),
                     PX_ECONFIG);
    assert_int_equal(count_entries(dir), 0);
    /* A NULL err buffer is allowed. */
    assert_int_equal(ca_load(&ca, sub, 0, 0, NULL, 0), PX_ENOENT);
    ct_rmtree(dir);
}

/* ---- ca_init_confdir ---- */

static void test_ca_init_confdir(void **state)
{
    char dir[CT_DIR_LEN], sub[256], err[ERRLEN], path[4096];
    int result = -1;
    size_t len1, len2;

    (void)state;
    ct_tmpdir(dir);
    ct_path(sub, sizeof(sub), "%s/confdir", dir);
    assert_int_equal(ca_init_confdir(sub, &result, err, sizeof(err)), 0);
    assert_int_equal(result, CA_INIT_CREATED);
    assert_mode(sub, CA_FILE_KEY_CERT, 0600);
    assert_mode(sub, CA_FILE_CERT_PEM, 0644);
    assert_mode(sub, CA_FILE_CERT_CER, 0644);

    ct_path(path, sizeof(path), "%s/%s", sub, CA_FILE_CERT_PEM);
    char *before = ct_read_file(path, &len1);
    assert_int_equal(ca_init_confdir(sub, &result, err, sizeof(err)), 0);
    assert_int_equal(result, CA_INIT_EXISTED);

    /* A lost certificate file is rewritten from mitmproxy-ca.pem. */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(ca_init_confdir(sub, &result, err, sizeof(err)), 0);
    assert_int_equal(result, CA_INIT_REPAIRED);
    char *after = ct_read_file(path, &len2);
    assert_int_equal(len1, len2);
    assert_memory_equal(before, after, len1);
    assert_mode(sub, CA_FILE_CERT_PEM, 0644);
    assert_int_equal(ca_init_confdir(sub, &result, err, sizeof(err)), 0);
    assert_int_equal(result, CA_INIT_EXISTED);
    assert_int_equal(count_entries(sub), 3);

    free(before);
    free(after);
    ct_rmtree(dir);
}

/* ---- mitmproxy's own CA ---- */

/* Runs when AIRLOCK_MITM_CONFDIR names a confdir mitmproxy created
 * (tests/integration/test_ca_mitmproxy.sh sets it). */
static void test_ca_mitmproxy_confdir(void **state)
{
    const char *confdir = getenv("AIRLOCK_MITM_CONFDIR");
    char err[ERRLEN], certfile[4096];
    ca_t *ca = NULL;

    (void)state;
    if (confdir == NULL || confdir[0] == '\0') {
        fail_msg("AIRLOCK_MITM_CONFDIR not set");
    }
    int rc = ca_load(&ca, confdir, 0, 0, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "ca_load(%s): %s\n", confdir, err);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(ca_was_generated(ca), 0);

    ct_path(certfile, sizeof(certfile), "%s/%s", confdir, CA_FILE_CERT_PEM);
    BIO *bio = BIO_new_file(certfile, "r");
    assert_non_null(bio);
    X509 *file_cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    assert_non_null(file_cert);
    assert_int_equal(X509_cmp(file_cert, ca_get_cert(ca)), 0);
    X509_free(file_cert);
    print_message("mitmproxy CA key type: %s\n",
                  EVP_PKEY_get0_type_name(X509_get0_pubkey(ca_get_cert(ca))));

    assert_mints_and_verifies(ca, certfile, 1);
    ca_leaf_t *leaf = NULL;
    assert_int_equal(ca_leaf_acquire(ca, "10.199.1.100", 12, &leaf), 0);
    assert_int_equal(ct_openssl_verify(certfile, ca_leaf_get_cert(leaf), CT_VERIFY_STRICT), 0);
    ca_leaf_release(leaf);
    ca_free(ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_generate_writes_files),
        cmocka_unit_test(test_ca_generate_fields),
        cmocka_unit_test(test_ca_generate_nested_confdir),
        cmocka_unit_test(test_ca_generate_race),
        cmocka_unit_test(test_ca_load_formats),
        cmocka_unit_test(test_ca_load_without_ski),
        cmocka_unit_test(test_ca_load_corrupt),
        cmocka_unit_test(test_ca_load_missing),
        cmocka_unit_test(test_ca_init_confdir),
    };
    /* a CA that mitmproxy itself wrote: tests/integration/test_ca_mitmproxy.sh makes one and
     * runs this binary again with AIRLOCK_MITM_CONFDIR; only then is the test registered (a
     * plain unit run has nothing to load, and a skipped test is never counted as a pass) */
    const struct CMUnitTest mitm[] = {
        cmocka_unit_test(test_ca_mitmproxy_confdir),
    };
    const char *confdir = getenv("AIRLOCK_MITM_CONFDIR");
    if (confdir != NULL && confdir[0] != '\0')
        return cmocka_run_group_tests(mitm, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
