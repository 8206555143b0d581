/* Helpers shared by the ca/ unit tests: temporary confdirs, CA certificates made the way
 * mitmproxy makes them, PEM files in its format, and `openssl verify` on a leaf. */
#ifndef CA_TEST_UTIL_H
#define CA_TEST_UTIL_H

#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ca/ca.h"
#include "base/px_err.h"

#define CT_DIR_LEN 64
#define CT_FILE_MAX (512 * 1024)

/* Key encodings for ct_write_mitm_pem(). */
enum ct_key_fmt {
    CT_KEY_TRADITIONAL, /* "BEGIN RSA PRIVATE KEY" / "BEGIN EC PRIVATE KEY" */
    CT_KEY_PKCS8,       /* "BEGIN PRIVATE KEY" */
    CT_KEY_CERT_FIRST,  /* PKCS#8, but the certificate comes first */
    CT_KEY_ENCRYPTED    /* "BEGIN ENCRYPTED PRIVATE KEY" (password "secret") */
};

/* Creates a fresh directory under /tmp; dir holds CT_DIR_LEN bytes. */
static inline void ct_tmpdir(char *dir)
{
    snprintf(dir, CT_DIR_LEN, "/tmp/airlock-ca-test-XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static inline int ct_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes dir and everything in it. */
static inline void ct_rmtree(const char *dir)
{
    nftw(dir, ct_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* snprintf into a path buffer of PATH_MAX-ish size, failing the test on truncation. */
static inline void ct_path(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void ct_path(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < len);
}

static inline void ct_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

/* Reads a whole small file into a new NUL-terminated buffer (free()); *len gets its size. */
static inline char *ct_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = calloc(1, CT_FILE_MAX + 1);
    assert_non_null(buf);
    *len = fread(buf, 1, CT_FILE_MAX, f);
    fclose(f);
    return buf;
}

static inline int ct_add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
    int ok = ext != NULL && X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

/* A self-signed CA for key, shaped like mitmproxy's (CN=O=mitmproxy, BC critical, KU, EKU
 * serverAuth, SKI). with_ski 0 drops the SKI; is_ca 0 makes it a plain end-entity cert. */
static inline X509 *ct_make_ca_cert(EVP_PKEY *key, int with_ski, int is_ca)
{
    X509 *x = X509_new();
    X509_NAME *name = X509_get_subject_name(x);
    X509V3_CTX ctx;
    unsigned char serial[20];

    assert_non_null(x);
    assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
    assert_int_equal(RAND_bytes(serial, sizeof(serial)), 1);
    serial[0] &= 0x7f;
    serial[0] |= 0x01;
    assert_int_equal(ASN1_STRING_set(X509_get_serialNumber(x), serial, sizeof(serial)), 1);
    assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                                (const unsigned char *)"mitmproxy", -1, -1, 0),
                     1);
    assert_int_equal(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                                (const unsigned char *)"mitmproxy", -1, -1, 0),
                     1);
    assert_int_equal(X509_set_issuer_name(x, name), 1);
    assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -2L * 86400));
    assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 3648L * 86400));
    assert_int_equal(X509_set_pubkey(x, key), 1);
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    if (is_ca) {
        assert_true(ct_add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE"));
        assert_true(ct_add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign"));
    } else {
        assert_true(ct_add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE"));
        assert_true(ct_add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature"));
    }
    assert_true(ct_add_ext(x, &ctx, NID_ext_key_usage, "serverAuth"));
    if (with_ski) {
        assert_true(ct_add_ext(x, &ctx, NID_subject_key_identifier, "hash"));
    }
    assert_true(X509_sign(x, key, EVP_sha256()) > 0);
    return x;
}

/* Writes dir/mitmproxy-ca.pem: key then certificate (or the other way round). */
static inline void ct_write_mitm_pem(const char *dir, EVP_PKEY *key, X509 *cert,
                                     enum ct_key_fmt fmt)
{
    char path[4096];
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL;

    assert_non_null(bio);
    if (fmt == CT_KEY_CERT_FIRST) {
        assert_int_equal(PEM_write_bio_X509(bio, cert), 1);
    }
    switch (fmt) {
    case CT_KEY_TRADITIONAL:
        assert_int_equal(PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL, NULL),
                         1);
        break;
    case CT_KEY_ENCRYPTED:
        assert_int_equal(
            PEM_write_bio_PKCS8PrivateKey(bio, key, EVP_aes_128_cbc(), "secret", 6, NULL, NULL), 1);
        break;
    default:
        assert_int_equal(PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL), 1);
        break;
    }
    if (fmt != CT_KEY_CERT_FIRST) {
        assert_int_equal(PEM_write_bio_X509(bio, cert), 1);
    }
    long len = BIO_get_mem_data(bio, &data);
    ct_path(path, sizeof(path), "%s/%s", dir, CA_FILE_KEY_CERT);
    ct_write_file(path, data, (size_t)len, 0600);
    BIO_free(bio);
}

static inline void ct_write_cert(const char *path, X509 *cert)
{
    BIO *bio = BIO_new_file(path, "w");
    assert_non_null(bio);
    assert_int_equal(PEM_write_bio_X509(bio, cert), 1);
    assert_int_equal(BIO_free(bio), 1);
}

/* ct_openssl_verify() flags. */
enum ct_verify_flags {
    CT_VERIFY_STRICT = 1, /* add -x509_strict */
    CT_VERIFY_QUIET = 2   /* a failure is expected: print nothing */
};

/* Runs `openssl verify -CAfile cafile -purpose sslserver [-x509_strict] leaf` on leaf written
 * to a temporary file; returns openssl's exit status and prints its output when non-zero. */
static inline int ct_openssl_verify(const char *cafile, X509 *leaf, int flags)
{
    int strict = flags & CT_VERIFY_STRICT;
    char dir[CT_DIR_LEN], leaf_path[128], out_path[128];
    int status = 0;

    ct_tmpdir(dir);
    ct_path(leaf_path, sizeof(leaf_path), "%s/leaf.pem", dir);
    ct_path(out_path, sizeof(out_path), "%s/out.txt", dir);
    ct_write_cert(leaf_path, leaf);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        const char *argv[] = {"openssl",   "verify",  "-CAfile", cafile, "-purpose",
                              "sslserver", leaf_path, NULL,      NULL};
        if (strict) {
            argv[6] = "-x509_strict";
            argv[7] = leaf_path;
        }
        execvp("openssl", (char *const *)argv);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    if (rc != 0 && !(flags & CT_VERIFY_QUIET)) {
        size_t len;
        char *out = ct_read_file(out_path, &len);
        fprintf(stderr, "openssl verify (CA %s) exited %d:\n%s\n", cafile, rc, out);
        free(out);
    }
    ct_rmtree(dir);
    return rc;
}

/* X509_verify_cert() of leaf against a store holding only ca (strict, TLS server purpose);
 * quiet 1 prints nothing on failure. */
static inline int ct_verify_chain_ex(X509 *ca, X509 *leaf, int quiet)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();

    assert_non_null(store);
    assert_non_null(ctx);
    assert_int_equal(X509_STORE_add_cert(store, ca), 1);
    assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx), X509_V_FLAG_X509_STRICT);
    int rc = X509_verify_cert(ctx);
    if (rc != 1 && !quiet) {
        fprintf(stderr, "X509_verify_cert: %s\n",
                X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
    }
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    return rc;
}

static inline int ct_verify_chain(X509 *ca, X509 *leaf)
{
    return ct_verify_chain_ex(ca, leaf, 0);
}

/* Seconds since the epoch of an ASN1_TIME. */
static inline time_t ct_time(const ASN1_TIME *t)
{
    struct tm tm;
    assert_int_equal(ASN1_TIME_to_tm(t, &tm), 1);
    return timegm(&tm);
}

static inline double ct_now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
