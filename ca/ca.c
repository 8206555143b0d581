/* The CA object: load mitmproxy-ca.pem from a confdir, or generate an EC P-256 CA and write the
 * three files mitmproxy would write. Files are written to a temporary name and then published
 * with link() (no-replace, so two processes racing to create a CA agree on one) or rename(),
 * so a concurrent reader never sees half a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "ca/ca_int.h"
#include "base/px_err.h"

#define CA__CERT_MODE 0644
#define CA__DIR_MODE 0700
#define CA__ROOT_CN "airlock CA"
#define CA__ROOT_O "airlock"

/* ---- errors ---- */

static void err_vset(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err == NULL || errlen == 0) {
        return;
    }
    if (vsnprintf(err, errlen, fmt, ap) < 0) {
        err[0] = '\0';
    }
}

void ca__err_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    err_vset(err, errlen, fmt, ap);
    va_end(ap);
}

void ca__err_ssl(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    unsigned long e = ERR_peek_error();

    va_start(ap, fmt);
    err_vset(err, errlen, fmt, ap);
    va_end(ap);
    /* Reason strings name what failed, never the key bytes. */
    if (e != 0 && err != NULL && errlen > 0) {
        size_t used = strlen(err);
        const char *reason = ERR_reason_error_string(e);
        if (reason != NULL) {
            snprintf(err + used, errlen - used, ": %s", reason);
        }
    }
    ERR_clear_error();
}

/* ---- files ---- */

int ca__path_join(char *out, size_t outlen, const char *dir, const char *file, char *err,
                  size_t errlen)
{
    int n = snprintf(out, outlen, "%s/%s", dir, file);

    if (n < 0 || (size_t)n >= outlen) {
        ca__err_set(err, errlen, "confdir path too long");
        return PX_ECONFIG;
    }
    return 0;
}

/* Reads a whole file of at most CA_PEM_MAX bytes into *buf (free with OPENSSL_clear_free). */
static int read_file(const char *path, unsigned char **buf, size_t *len, char *err, size_t errlen)
{
    struct stat st;
    unsigned char *p = NULL;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = PX_EIO;

    *buf = NULL;
    *len = 0;
    if (fd < 0) {
        int e = errno;
        ca__err_set(err, errlen, "cannot open %s: %s", path, strerror(e));
        return e == ENOENT ? PX_ENOENT : PX_EIO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ca__err_set(err, errlen, "%s is not a regular file", path);
        goto done;
    }
    if (st.st_size > CA_PEM_MAX) {
        ca__err_set(err, errlen, "%s is larger than %d bytes", path, CA_PEM_MAX);
        rc = PX_ETOOBIG;
        goto done;
    }
    p = OPENSSL_malloc(CA_PEM_MAX + 1);
    if (p == NULL) {
        ca__err_set(err, errlen, "out of memory");
        rc = PX_ENOMEM;
        goto done;
    }
    for (;;) {
        ssize_t n = read(fd, p + got, CA_PEM_MAX + 1 - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            ca__err_set(err, errlen, "cannot read %s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0) {
            break;
        }
        got += (size_t)n;
        if (got > CA_PEM_MAX) {
            ca__err_set(err, errlen, "%s is larger than %d bytes", path, CA_PEM_MAX);
            rc = PX_ETOOBIG;
            goto done;
        }
    }
    *buf = p;
    *len = got;
    p = NULL;
    rc = 0;
done:
    OPENSSL_clear_free(p, CA_PEM_MAX + 1);
    close(fd);
    return rc;
}

/* Never prompt on a terminal for an encrypted key: refuse it. */
static int no_password_cb(char *buf, int size, int rwflag, void *data)
{
    return -1;
}

/* Parses key and certificate from the PEM bytes, in either order. */
static int parse_pem(const unsigned char *buf, size_t len, const char *path, EVP_PKEY **key,
                     X509 **cert, char *err, size_t errlen)
{
    BIO *bio = BIO_new_mem_buf(buf, (int)len);

    *key = NULL;
    *cert = NULL;
    if (bio == NULL) {
        ca__err_set(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    *key = PEM_read_bio_PrivateKey(bio, NULL, no_password_cb, NULL);
    BIO_free(bio);
    if (*key == NULL) {
        ca__err_ssl(err, errlen, "%s: no readable unencrypted private key", path);
        return PX_EPARSE;
    }
    bio = BIO_new_mem_buf(buf, (int)len);
    if (bio == NULL) {
        ca__err_set(err, errlen, "out of memory");
        goto fail_nomem;
    }
    *cert = PEM_read_bio_X509(bio, NULL, no_password_cb, NULL);
    BIO_free(bio);
    if (*cert == NULL) {
        ca__err_ssl(err, errlen, "%s: no readable certificate", path);
        goto fail_parse;
    }
    if (X509_check_private_key(*cert, *key) != 1) {
        ca__err_ssl(err, errlen, "%s: the private key does not match the certificate", path);
        goto fail_config;
    }
    if (X509_check_ca(*cert) == 0) {
        ca__err_set(err, errlen, "%s: the certificate is not a CA certificate", path);
        goto fail_config;
    }
    return 0;

fail_config:
    X509_free(*cert);
    EVP_PKEY_free(*key);
    *cert = NULL;
    *key = NULL;
    return PX_ECONFIG;
fail_parse:
    EVP_PKEY_free(*key);
    *key = NULL;
    return PX_EPARSE;
fail_nomem:
    EVP_PKEY_free(*key);
    *key = NULL;
    return PX_ENOMEM;
}

static int load_pem_file(const char *path, EVP_PKEY **key, X509 **cert, char *err, size_t errlen)
{
    unsigned char *buf;
    size_t len;
    int rc = read_file(path, &buf, &len, err, errlen);

    if (rc < 0) {
        return rc;
    }
    rc = parse_pem(buf, len, path, key, cert, err, errlen);
    OPENSSL_clear_free(buf, CA_PEM_MAX + 1);
    return rc;
}

/* mkdir -p with mode for the directories it creates. */
int ca__mkdir_p(const char *dir, char *err, size_t errlen)
{
    char tmp[CA_PATH_MAX];
    size_t len = strlen(dir);

    if (len >= sizeof(tmp)) {
        ca__err_set(err, errlen, "confdir path too long");
        return PX_ECONFIG;
    }
    memcpy(tmp, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0') {
            continue;
        }
        char saved = tmp[i];
        tmp[i] = '\0';
        if (mkdir(tmp, CA__DIR_MODE) != 0 && errno != EEXIST) {
            ca__err_set(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
            return PX_EIO;
        }
        tmp[i] = saved;
    }
    return 0;
}

/* Writes data to a new temporary file in dir with mode; its name goes to tmp. */
static int write_temp(const char *dir, const char *file, const char *data, size_t len, mode_t mode,
                      char *tmp, size_t tmplen, char *err, size_t errlen)
{
    int n = snprintf(tmp, tmplen, "%s/.%s.XXXXXX", dir, file);
    int fd;
    size_t off = 0;

    if (n < 0 || (size_t)n >= tmplen) {
        ca__err_set(err, errlen, "confdir path too long");
        return PX_ECONFIG;
    }
    fd = mkstemp(tmp); /* created 0600 */
    if (fd < 0) {
        ca__err_set(err, errlen, "cannot create a file in %s: %s", dir, strerror(errno));
        return PX_EIO;
    }
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            goto fail;
        }
        off += (size_t)w;
    }
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    return 0;
fail:
    ca__err_set(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
    if (fd >= 0) {
        close(fd);
    }
    unlink(tmp);
    return PX_EIO;
}

/* Publishes tmp as dir/file. With noreplace, an existing file wins: returns 1 and drops tmp.
 * Filesystems without hard links fall back to rename(). */
static int publish(const char *tmp, const char *dir, const char *file, int noreplace, char *err,
                   size_t errlen)
{
    char path[CA_PATH_MAX];
    int rc = ca__path_join(path, sizeof(path), dir, file, err, errlen);

    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    if (noreplace) {
        if (link(tmp, path) == 0) {
            unlink(tmp);
            return 0;
        }
        if (errno == EEXIST) {
            unlink(tmp);
            return 1;
        }
        if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS && errno != EXDEV &&
            errno != EMLINK) {
            ca__err_set(err, errlen, "cannot create %s: %s", path, strerror(errno));
            unlink(tmp);
            return PX_EIO;
        }
    }
    if (rename(tmp, path) != 0) {
        ca__err_set(err, errlen, "cannot create %s: %s", path, strerror(errno));
        unlink(tmp);
        return PX_EIO;
    }
    return 0;
}

/* Makes the new directory entries durable: a CA lost to a crash would be regenerated, and
 * every client trusting the old one would break. Best effort. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Writes a PEM of (key if non-NULL, then) cert into dir/file atomically. */
int ca__write_pem_file(const char *dir, const char *file, EVP_PKEY *key, X509 *cert, mode_t mode,
                       int noreplace, char *err, size_t errlen)
{
    char tmp[CA_PATH_MAX];
    char *data = NULL;
    BIO *bio = BIO_new(BIO_s_secmem()); /* cleansed on free: it may hold the key */
    int rc;

    if (bio == NULL) {
        ca__err_set(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    if ((key != NULL && PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) != 1) ||
        PEM_write_bio_X509(bio, cert) != 1) {
        ca__err_ssl(err, errlen, "cannot encode %s", file);
        BIO_free(bio);
        return PX_ECRYPTO;
    }
    long len = BIO_get_mem_data(bio, &data);
    rc = write_temp(dir, file, data, (size_t)len, mode, tmp, sizeof(tmp), err, errlen);
    BIO_free(bio);
    if (rc < 0) {
        return rc;
    }
    return publish(tmp, dir, file, noreplace, err, errlen);
}

int ca__write_cert_files(const char *dir, X509 *cert, char *err, size_t errlen)
{
    int rc = ca__write_pem_file(dir, CA_FILE_CERT_PEM, NULL, cert, CA__CERT_MODE, 0, err, errlen);

    if (rc < 0) {
        return rc;
    }
    rc = ca__write_pem_file(dir, CA_FILE_CERT_CER, NULL, cert, CA__CERT_MODE, 0, err, errlen);
    sync_dir(dir);
    return rc;
}

/* ---- generation ---- */

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
    int ok = ext != NULL && X509_add_ext(x, ext, -1) == 1;

    X509_EXTENSION_free(ext);
    return ok;
}

int ca__generate(const ca__gen_t *g, EVP_PKEY **key_out, X509 **cert_out, char *err, size_t errlen)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name = x != NULL ? X509_get_subject_name(x) : NULL;
    X509V3_CTX ctx;
    time_t now = time(NULL);
    int rc = PX_ECRYPTO;

    if (key == NULL || x == NULL || X509_set_version(x, X509_VERSION_3) != 1 ||
        ca__serial_set_random(x) < 0 ||
        X509_NAME_add_entry_by_NID(name, NID_commonName, V_ASN1_UTF8STRING,
                                   (const unsigned char *)g->cn, -1, -1, 0) != 1 ||
        X509_NAME_add_entry_by_NID(name, NID_organizationName, V_ASN1_UTF8STRING,
                                   (const unsigned char *)CA__ROOT_O, -1, -1, 0) != 1 ||
        X509_set_issuer_name(x, g->issuer_cert != NULL ? X509_get_subject_name(g->issuer_cert)
                                                       : name) != 1 ||
        ASN1_TIME_adj(X509_getm_notBefore(x), now, -CA_ROOT_BACKDATE_DAYS, 0) == NULL ||
        ASN1_TIME_adj(X509_getm_notAfter(x), now, (int)g->days, 0) == NULL ||
        X509_set_pubkey(x, key) != 1) {
        goto fail;
    }
    /* an intermediate lies inside its issuer's validity (made a moment later, it would
     * otherwise outlive it by that moment) */
    if (g->issuer_cert != NULL &&
        ((ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(g->issuer_cert)) > 0 &&
          X509_set1_notAfter(x, X509_get0_notAfter(g->issuer_cert)) != 1) ||
         (ASN1_TIME_compare(X509_get0_notBefore(x), X509_get0_notBefore(g->issuer_cert)) < 0 &&
          X509_set1_notBefore(x, X509_get0_notBefore(g->issuer_cert)) != 1))) {
        goto fail;
    }
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, g->issuer_cert != NULL ? g->issuer_cert : x, x, NULL, NULL, 0);
    if (!add_ext(x, &ctx, NID_basic_constraints, g->bc) ||
        !add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
        (g->issuer_cert != NULL && !add_ext(x, &ctx, NID_authority_key_identifier, "keyid"))) {
        goto fail;
    }
    if (g->nc != NULL) {
        rc = ca__nc_add_ext(x, g->nc);
        if (rc == PX_ECONFIG) {
            ca__err_set(err, errlen,
                        "no host name to permit: a CA constrained to IP addresses "
                        "alone would leave every DNS name open");
            goto fail_quiet;
        }
        if (rc < 0) {
            goto fail;
        }
        rc = PX_ECRYPTO;
    }
    if (X509_sign(x, g->issuer_key != NULL ? g->issuer_key : key, EVP_sha256()) <= 0) {
        goto fail;
    }
    *key_out = key;
    *cert_out = x;
    return 0;
fail:
    ca__err_ssl(err, errlen, "cannot generate a CA");
fail_quiet:
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

/* Loads dir's CA, or with CA_CREATE generates and writes one; *generated tells which. */
static int load_or_create(const char *dir, unsigned flags, EVP_PKEY **key, X509 **cert,
                          int *generated, char *err, size_t errlen)
{
    char path[CA_PATH_MAX];
    struct stat st;
    int rc = ca__path_join(path, sizeof(path), dir, CA_FILE_KEY_CERT, err, errlen);

    *generated = 0;
    if (rc < 0) {
        return rc;
    }
    rc = load_pem_file(path, key, cert, err, errlen);
    if (rc != PX_ENOENT) {
        return rc;
    }
    if (!(flags & CA_CREATE)) {
        if (stat(dir, &st) != 0) {
            ca__err_set(err, errlen, "confdir %s does not exist", dir);
        } else {
            ca__err_set(err, errlen, "no %s in %s", CA_FILE_KEY_CERT, dir);
        }
        return PX_ENOENT;
    }
    rc = ca__mkdir_p(dir, err, errlen);
    if (rc < 0) {
        return rc;
    }
    ca__gen_t g = {.cn = CA__ROOT_CN,
                   .days = CA_ROOT_VALID_DAYS - CA_ROOT_BACKDATE_DAYS,
                   .bc = "critical,CA:TRUE"};
    rc = ca__generate(&g, key, cert, err, errlen);
    if (rc < 0) {
        return rc;
    }
    rc = ca__write_pem_file(dir, CA_FILE_KEY_CERT, *key, *cert, CA__KEY_MODE, 1, err, errlen);
    if (rc != 0) {
        X509_free(*cert);
        EVP_PKEY_free(*key);
        *cert = NULL;
        *key = NULL;
        /* rc 1: another process created the CA first; use theirs. */
        return rc < 0 ? rc : load_pem_file(path, key, cert, err, errlen);
    }
    /* The key file exists from here on, so a crash below leaves a CA whose certificate
     * files ca_init_confdir() rewrites. */
    rc = ca__write_cert_files(dir, *cert, err, errlen);
    if (rc < 0) {
        X509_free(*cert);
        EVP_PKEY_free(*key);
        *cert = NULL;
        *key = NULL;
        return rc;
    }
    *generated = 1;
    return 0;
}

/* ---- the object ---- */

int ca_load(ca_t **out, const char *confdir, unsigned flags, size_t cache_cap, char *err,
            size_t errlen)
{
    EVP_PKEY *key = NULL;
    X509 *cert = NULL;
    ca_t *ca;
    int generated = 0;
    int rc;

    *out = NULL;
    ca__err_set(err, errlen, "%s", "");
    if (cache_cap == 0) {
        cache_cap = CA_CACHE_DEFAULT_CAP;
    }
    if (confdir == NULL || confdir[0] == '\0' || cache_cap > CA_CACHE_MAX_CAP) {
        ca__err_set(err, errlen, "invalid CA options");
        return PX_ECONFIG;
    }
    rc = load_or_create(confdir, flags, &key, &cert, &generated, err, errlen);
    if (rc < 0) {
        return rc;
    }
    ca = calloc(1, sizeof(*ca));
    if (ca == NULL) {
        X509_free(cert);
        EVP_PKEY_free(key);
        ca__err_set(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    ca->key = key;
    ca->generated = generated;
    pthread_mutex_init(&ca->mu, NULL);
    rc = ca__mint_init(ca, cert, err, errlen);
    X509_free(cert); /* the issuer holds its own reference */
    if (rc < 0) {
        goto fail;
    }
    rc = ca__nc_from_cert(ca->issuer->cert, &ca->nc, err, errlen);
    if (rc < 0) {
        goto fail;
    }
    rc = ca__cache_init(&ca->cache, cache_cap);
    if (rc < 0) {
        ca__err_set(err, errlen, "cannot create the certificate cache");
        goto fail;
    }
    ca__err_set(err, errlen, "%s", ""); /* drop the "cannot open" of a created CA */
    *out = ca;
    return 0;
fail:
    ca_free(ca);
    return rc;
}

void ca_free(ca_t *ca)
{
    if (ca == NULL) {
        return;
    }
    ca__cache_cleanup(&ca->cache);
    ca_constraints_free(ca->nc);
    ca__mint_cleanup(ca);
    ca__issuer_release(ca->issuer);
    EVP_PKEY_free(ca->key);
    pthread_mutex_destroy(&ca->mu);
    free(ca);
}

int ca_init_confdir(const char *confdir, int *result, char *err, size_t errlen)
{
    EVP_PKEY *key = NULL;
    X509 *cert = NULL;
    const char *files[] = {CA_FILE_CERT_PEM, CA_FILE_CERT_CER};
    int generated = 0;
    int missing = 0;
    int rc;

    *result = CA_INIT_EXISTED;
    ca__err_set(err, errlen, "%s", "");
    if (confdir == NULL || confdir[0] == '\0') {
        ca__err_set(err, errlen, "no confdir given");
        return PX_ECONFIG;
    }
    rc = load_or_create(confdir, CA_CREATE, &key, &cert, &generated, err, errlen);
    if (rc < 0) {
        return rc;
    }
    if (generated) {
        *result = CA_INIT_CREATED;
        goto done;
    }
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[CA_PATH_MAX];
        rc = ca__path_join(path, sizeof(path), confdir, files[i], err, errlen);
        if (rc < 0) {
            goto done;
        }
        if (access(path, F_OK) != 0) {
            missing = 1;
        }
    }
    if (missing && X509_get_ext_by_NID(cert, NID_name_constraints, -1) >= 0) {
        /* a per-conversation CA: the agents trust its root, which is not kept */
        ca__err_set(err, errlen,
                    "%s holds a per-conversation CA whose certificate files are missing; they "
                    "cannot be rebuilt: make a new CA",
                    confdir);
        rc = PX_ECONFIG;
    } else if (missing) {
        rc = ca__write_cert_files(confdir, cert, err, errlen);
        if (rc == 0) {
            *result = CA_INIT_REPAIRED;
        }
    }
done:
    if (rc == 0) {
        ca__err_set(err, errlen, "%s", "");
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    return rc;
}

int ca_was_generated(const ca_t *ca)
{
    return ca->generated;
}

X509 *ca_get_cert(const ca_t *ca)
{
    return ca->issuer->cert;
}

EVP_PKEY *ca_get_leaf_key(const ca_t *ca)
{
    return ca->issuer->leaf_key;
}

int ca_get_fingerprint(const ca_t *ca, char *buf, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (X509_digest(ca->issuer->cert, EVP_sha256(), md, &n) != 1) {
        ERR_clear_error();
        return PX_ECRYPTO;
    }
    if (len < (size_t)n * 3) {
        return PX_ETOOBIG;
    }
    for (unsigned int i = 0; i < n; i++) {
        buf[3 * i] = hex[md[i] >> 4];
        buf[3 * i + 1] = hex[md[i] & 0xf];
        buf[3 * i + 2] = i + 1 < n ? ':' : '\0';
    }
    return 0;
}

void ca_cache_get_stats(const ca_t *ca, ca_cache_stats_t *out)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&ca->mu; /* the counters' lock, not the CA's state */
    pthread_mutex_lock(mu);
    out->count = ca->cache.count;
    out->cap = ca->cache.cap;
    out->hits = ca->cache.hits;
    out->misses = ca->cache.misses;
    out->evictions = ca->cache.evictions;
    pthread_mutex_unlock(mu);
}

/* ---- per-conversation CAs ---- */

const ca_constraints_t *ca_get_constraints(const ca_t *ca)
{
    return ca->nc;
}

int ca_name_permitted(const ca_t *ca, const char *name, size_t len)
{
    return ca != NULL && (ca->nc == NULL || ca_constraints_permits(ca->nc, name, len));
}

/* The certificate file comes from the confdir, the CA from memory: the agent must get the
 * root that issued the CA airlock signs with, never another one left behind in the confdir. */
int ca_export_cert(const ca_t *ca, const char *confdir, const char *dir, char *err, size_t errlen)
{
    char path[CA_PATH_MAX];
    unsigned char *buf = NULL;
    size_t len = 0;
    X509 *root = NULL;
    BIO *bio = NULL;
    int rc = ca__path_join(path, sizeof(path), confdir, CA_FILE_CERT_PEM, err, errlen);

    if (rc == 0) {
        rc = read_file(path, &buf, &len, err, errlen);
    }
    if (rc < 0) {
        return rc;
    }
    bio = BIO_new_mem_buf(buf, (int)len);
    root = bio != NULL ? PEM_read_bio_X509(bio, NULL, no_password_cb, NULL) : NULL;
    BIO_free(bio);
    OPENSSL_clear_free(buf, CA_PEM_MAX + 1);
    if (root == NULL) {
        ca__err_ssl(err, errlen, "%s: no readable certificate", path);
        return PX_EPARSE;
    }
    if (X509_check_issued(root, ca->issuer->cert) != X509_V_OK) {
        ca__err_set(err, errlen, "%s did not issue the CA in %s/%s", path, confdir,
                    CA_FILE_KEY_CERT);
        rc = PX_ECONFIG;
    } else {
        rc = ca__write_pem_file(dir, CA_FILE_CERT_PEM, NULL, root, CA__CERT_MODE, 0, err, errlen);
    }
    X509_free(root);
    ERR_clear_error();
    return rc;
}

int ca_remove_confdir(const char *confdir)
{
    const char *files[] = {CA_FILE_KEY_CERT, CA_FILE_CERT_PEM, CA_FILE_CERT_CER};
    char path[CA_PATH_MAX];
    int rc = 0;

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        if (ca__path_join(path, sizeof(path), confdir, files[i], NULL, 0) != 0 ||
            (unlink(path) != 0 && errno != ENOENT)) {
            rc = PX_EIO;
        }
    }
    if (rmdir(confdir) != 0 && errno != ENOENT) {
        rc = PX_EIO;
    }
    return rc;
}
