/* Leaf minting: host names in, X509 leaves out. Everything that is the same for every leaf
 * (the leaf key, the issuer name, BasicConstraints, KeyUsage, EKU, AKI) is built once in
 * ca__mint_init(); a mint only adds the serial, the dates, the names and the signature. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ca/ca_int.h"
#include "base/px_err.h"
#include "base/px_host.h"

#define CA__SERIAL_BYTES 16 /* 128-bit serials */
#define CA__SECS_PER_DAY 86400

/* ---- names ---- */

static int is_dns_byte(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
           ch == '_' || ch == '*';
}

/* Label rules, kept loose on purpose (underscores and '*' do occur in SNI): no empty label
 * and none longer than CA_LABEL_MAX. */
static int dns_name_ok(const char *s, size_t len)
{
    size_t label = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!is_dns_byte(ch)) {
            return 0;
        }
        if (ch == '.') {
            if (label == 0) {
                return 0;
            }
            label = 0;
        } else {
            label++;
            if (label > CA_LABEL_MAX) {
                return 0;
            }
        }
    }
    return label > 0;
}

int ca__name_parse(const char *name, size_t len, ca__name_t *out)
{
    char buf[CA_NAME_MAX + 1];
    int bracketed = 0;

    memset(out, 0, sizeof(*out));
    if (name == NULL || len == 0) {
        return PX_EPARSE;
    }
    if (name[0] == '[') {
        if (len < 3 || name[len - 1] != ']') {
            return PX_EPARSE;
        }
        bracketed = 1;
    }
    int n = px_host_norm(buf, sizeof(buf), name, len);
    if (n <= 0) {
        return PX_EPARSE;
    }
    len = (size_t)n;

    if (bracketed || memchr(buf, ':', len) != NULL) {
        struct in6_addr a6;
        if (strlen(buf) != len || inet_pton(AF_INET6, buf, &a6) != 1) {
            return PX_EPARSE;
        }
        memcpy(out->ip, &a6, 16);
        out->ip_len = 16;
        out->is_ip = 1;
        if (inet_ntop(AF_INET6, &a6, out->text, sizeof(out->text)) == NULL) {
            return PX_EPARSE;
        }
        out->len = strlen(out->text);
        return 0;
    }
    if (!dns_name_ok(buf, len)) {
        return PX_EPARSE;
    }
    struct in_addr a4;
    if (inet_pton(AF_INET, buf, &a4) == 1) {
        memcpy(out->ip, &a4, 4);
        out->ip_len = 4;
        out->is_ip = 1;
        if (inet_ntop(AF_INET, &a4, out->text, sizeof(out->text)) == NULL) {
            return PX_EPARSE;
        }
        out->len = strlen(out->text);
        return 0;
    }
    memcpy(out->text, buf, len + 1);
    out->len = len;
    return 0;
}

int ca_name_normalize(const char *name, size_t len, char *out, size_t outlen, int *is_ip)
{
    ca__name_t n;
    int rc = ca__name_parse(name, len, &n);

    if (rc < 0) {
        return rc;
    }
    if (out == NULL || outlen <= n.len) {
        return PX_ETOOBIG;
    }
    memcpy(out, n.text, n.len + 1);
    if (is_ip != NULL) {
        *is_ip = n.is_ip;
    }
    return 0;
}

/* ---- constant parts ---- */

void ca__issuer_release(ca__issuer_t *issuer)
{
    if (issuer == NULL || __atomic_sub_fetch(&issuer->refs, 1, __ATOMIC_ACQ_REL) > 0) {
        return;
    }
    sk_X509_pop_free(issuer->chain, X509_free);
    EVP_PKEY_free(issuer->leaf_key);
    X509_free(issuer->cert);
    free(issuer);
}

static X509_EXTENSION *ext_basic_constraints(void)
{
    BASIC_CONSTRAINTS *bc = BASIC_CONSTRAINTS_new();
    X509_EXTENSION *ext = NULL;

    if (bc != NULL) {
        bc->ca = 0;
        ext = X509V3_EXT_i2d(NID_basic_constraints, 1, bc);
    }
    BASIC_CONSTRAINTS_free(bc);
    return ext;
}

static X509_EXTENSION *ext_key_usage(void)
{
    ASN1_BIT_STRING *bits = ASN1_BIT_STRING_new();
    X509_EXTENSION *ext = NULL;

    /* Bit 0 is digitalSignature: all an ECDHE-ECDSA server key does. */
    if (bits != NULL && ASN1_BIT_STRING_set_bit(bits, 0, 1) == 1) {
        ext = X509V3_EXT_i2d(NID_key_usage, 1, bits);
    }
    ASN1_BIT_STRING_free(bits);
    return ext;
}

static X509_EXTENSION *ext_server_auth(void)
{
    EXTENDED_KEY_USAGE *eku = sk_ASN1_OBJECT_new_null();
    ASN1_OBJECT *obj = OBJ_nid2obj(NID_server_auth);
    X509_EXTENSION *ext = NULL;

    if (eku != NULL && obj != NULL && sk_ASN1_OBJECT_push(eku, obj) > 0) {
        ext = X509V3_EXT_i2d(NID_ext_key_usage, 0, eku);
    }
    sk_ASN1_OBJECT_free(eku); /* OBJ_nid2obj objects are static */
    return ext;
}

static X509_EXTENSION *ext_authority_key_id(const ASN1_OCTET_STRING *ski)
{
    AUTHORITY_KEYID *akid = AUTHORITY_KEYID_new();
    X509_EXTENSION *ext = NULL;

    if (akid != NULL) {
        akid->keyid = ASN1_OCTET_STRING_dup(ski);
        if (akid->keyid != NULL) {
            ext = X509V3_EXT_i2d(NID_authority_key_identifier, 0, akid);
        }
    }
    AUTHORITY_KEYID_free(akid);
    return ext;
}

/* An EC key holding only the P-256 group: the template d2i_PublicKey() needs. */
static EVP_PKEY *p256_params(void)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *params = NULL;

    if (ctx == NULL || EVP_PKEY_paramgen_init(ctx) != 1 ||
        EVP_PKEY_CTX_set_group_name(ctx, "P-256") != 1 || EVP_PKEY_paramgen(ctx, &params) != 1) {
        EVP_PKEY_free(params);
        params = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return params;
}

/* X509_set_pubkey() of a provider-backed key runs an encoder and a decoder (~170 us with
 * OpenSSL 3.0); of a key with a legacy ASN.1 method it is a plain encode (~4 us). So the
 * certificates get a public-only copy of the leaf key made by d2i_PublicKey(), which yields
 * such a key for EC. If that ever fails or differs, the provider key itself is used. Returns
 * a new reference. */
static EVP_PKEY *public_for_encoding(EVP_PKEY *key)
{
    unsigned char *point = NULL;
    EVP_PKEY *pub = p256_params();
    int len = i2d_PublicKey(key, &point);

    if (pub != NULL && len > 0) {
        const unsigned char *p = point;
        if (d2i_PublicKey(EVP_PKEY_EC, &pub, &p, len) == NULL) {
            EVP_PKEY_free(pub); /* on failure d2i_PublicKey() leaves *a to the caller */
            pub = NULL;
        }
    }
    OPENSSL_free(point);
    if (pub == NULL || EVP_PKEY_eq(pub, key) != 1) {
        EVP_PKEY_free(pub);
        ERR_clear_error();
        if (EVP_PKEY_up_ref(key) != 1) {
            return NULL;
        }
        return key;
    }
    return pub;
}

int ca__mint_init(ca_t *ca, X509 *cert, char *err, size_t errlen)
{
    ca__issuer_t *is = calloc(1, sizeof(*is));
    int id = EVP_PKEY_get_base_id(ca->key);

    if (is == NULL) {
        ca__err_set(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    is->refs = 1;
    is->cert = cert;
    X509_up_ref(cert);
    ca->issuer = is;

    /* EdDSA signs the message itself; every other CA key type signs a SHA-256 digest. */
    ca->md = (id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448) ? NULL : EVP_sha256();
    is->leaf_key = EVP_EC_gen("P-256");
    if (is->leaf_key == NULL) {
        ca__err_ssl(err, errlen, "cannot generate the leaf key");
        return PX_ECRYPTO;
    }
    ca->leaf_pub = public_for_encoding(is->leaf_key);
    if (ca->leaf_pub == NULL) {
        ca__err_ssl(err, errlen, "cannot prepare the leaf public key");
        return PX_ECRYPTO;
    }
    is->chain = sk_X509_new_null();
    if (is->chain == NULL || sk_X509_push(is->chain, cert) <= 0) {
        ca__err_set(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    X509_up_ref(cert);
    struct tm tm;
    if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1) {
        ca->not_after = timegm(&tm); /* no leaf outlives its CA */
    }
    if (ASN1_TIME_to_tm(X509_get0_notBefore(cert), &tm) == 1) {
        ca->not_before = timegm(&tm); /* ... nor starts before it */
    }
    ca->subject = X509_NAME_dup(X509_get_subject_name(cert));
    ca->ext_bc = ext_basic_constraints();
    ca->ext_ku = ext_key_usage();
    ca->ext_eku = ext_server_auth();
    if (ca->subject == NULL || ca->ext_bc == NULL || ca->ext_ku == NULL || ca->ext_eku == NULL) {
        ca__err_ssl(err, errlen, "cannot prepare the leaf template");
        return PX_ECRYPTO;
    }
    /* A CA without an SKI gets leaves without an AKI: there is nothing to match. */
    const ASN1_OCTET_STRING *ski = X509_get0_subject_key_id(cert);
    if (ski != NULL) {
        ca->ext_aki = ext_authority_key_id(ski);
        if (ca->ext_aki == NULL) {
            ca__err_ssl(err, errlen, "cannot encode the authority key identifier");
            return PX_ECRYPTO;
        }
    }
    return 0;
}

void ca__mint_cleanup(ca_t *ca)
{
    X509_EXTENSION_free(ca->ext_aki);
    X509_EXTENSION_free(ca->ext_eku);
    X509_EXTENSION_free(ca->ext_ku);
    X509_EXTENSION_free(ca->ext_bc);
    X509_NAME_free(ca->subject);
    EVP_PKEY_free(ca->leaf_pub);
    ca->leaf_pub = NULL;
    ca->ext_aki = ca->ext_eku = ca->ext_ku = ca->ext_bc = NULL;
    ca->subject = NULL;
}

/* ---- minting ---- */

int ca__serial_set_random(X509 *x)
{
    unsigned char buf[CA__SERIAL_BYTES];
    size_t skip = 0;

    if (RAND_bytes(buf, sizeof(buf)) != 1) {
        return PX_ECRYPTO;
    }
    buf[0] &= 0x7f; /* positive */
    while (skip < sizeof(buf) - 1 && buf[skip] == 0) {
        skip++; /* DER integers carry no leading zero bytes */
    }
    if (buf[skip] == 0) {
        buf[skip] = 1; /* non-zero (odds 2^-127) */
    }
    if (ASN1_STRING_set(X509_get_serialNumber(x), buf + skip, (int)(sizeof(buf) - skip)) != 1) {
        return PX_ENOMEM;
    }
    return 0;
}

static int add_san(X509 *x, const ca__name_t *n, int critical)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    GENERAL_NAME *gn = GENERAL_NAME_new();
    ASN1_STRING *val = n->is_ip ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new();
    int ok = 0;

    if (gens == NULL || gn == NULL || val == NULL) {
        goto done;
    }
    if (n->is_ip) {
        ok = ASN1_OCTET_STRING_set(val, n->ip, (int)n->ip_len);
    } else {
        ok = ASN1_STRING_set(val, n->text, (int)n->len);
    }
    if (ok != 1) {
        ok = 0;
        goto done;
    }
    GENERAL_NAME_set0_value(gn, n->is_ip ? GEN_IPADD : GEN_DNS, val);
    val = NULL;
    if (sk_GENERAL_NAME_push(gens, gn) <= 0) {
        ok = 0;
        goto done;
    }
    gn = NULL;
    ok = X509_add1_ext_i2d(x, NID_subject_alt_name, gens, critical, X509V3_ADD_DEFAULT) == 1;
done:
    ASN1_STRING_free(val);
    GENERAL_NAME_free(gn);
    GENERAL_NAMES_free(gens);
    return ok;
}

/* Builds and signs the certificate. It is not re-parsed: with OpenSSL 3 a parse decodes the
 * public key through the provider decoders, which costs more than the whole mint. */
static X509 *leaf_build(ca_t *ca, const ca__name_t *n)
{
    X509 *x = X509_new();
    X509 *out = NULL;
    /* Under name constraints an IP leaf carries no CN: OpenSSL checks a CN against the DNS
     * constraints when the leaf has no DNS SAN, and an address is in no DNS subtree. */
    int has_cn = n->len <= CA_CN_MAX && !(n->is_ip && ca->nc != NULL);
    time_t now = time(NULL);
    time_t start = now - (time_t)CA_LEAF_BACKDATE_DAYS * CA__SECS_PER_DAY;
    time_t end = now + (time_t)(CA_LEAF_VALID_DAYS - CA_LEAF_BACKDATE_DAYS) * CA__SECS_PER_DAY;
    /* A leaf's validity lies inside its CA's (a CA made minutes ago, a per-conversation CA
     * valid a few days): verifiers check each certificate's own dates, and a leaf that claims
     * more than its issuer vouches for is one a strict checker may refuse. */
    if (ca->not_before > start) {
        start = ca->not_before;
    }
    if (ca->not_after > 0 && ca->not_after < end) {
        end = ca->not_after;
    }

    if (x == NULL || X509_set_version(x, X509_VERSION_3) != 1 || ca__serial_set_random(x) < 0) {
        goto done;
    }
    if (has_cn &&
        X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName, V_ASN1_UTF8STRING,
                                   (const unsigned char *)n->text, (int)n->len, -1, 0) != 1) {
        goto done;
    }
    if (X509_set_issuer_name(x, ca->subject) != 1 ||
        ASN1_TIME_set(X509_getm_notBefore(x), start) == NULL ||
        ASN1_TIME_set(X509_getm_notAfter(x), end) == NULL ||
        X509_set_pubkey(x, ca->leaf_pub) != 1) {
        goto done;
    }
    /* RFC 5280 4.2.1.6: with an empty subject the SAN must be critical. */
    if (X509_add_ext(x, ca->ext_bc, -1) != 1 || X509_add_ext(x, ca->ext_ku, -1) != 1 ||
        X509_add_ext(x, ca->ext_eku, -1) != 1 || !add_san(x, n, !has_cn) ||
        (ca->ext_aki != NULL && X509_add_ext(x, ca->ext_aki, -1) != 1)) {
        goto done;
    }
    if (X509_sign(x, ca->key, ca->md) <= 0) {
        goto done;
    }
    out = x;
    x = NULL;
done:
    X509_free(x);
    return out;
}

int ca__leaf_mint(ca_t *ca, const ca__name_t *n, ca_leaf_t **out)
{
    ca_leaf_t *leaf = calloc(1, sizeof(*leaf));

    *out = NULL;
    if (leaf == NULL) {
        return PX_ENOMEM;
    }
    leaf->cert = leaf_build(ca, n);
    if (leaf->cert == NULL) {
        free(leaf);
        ERR_clear_error();
        return PX_ECRYPTO;
    }
    leaf->refs = 1;
    leaf->issuer = ca->issuer;
    __atomic_add_fetch(&ca->issuer->refs, 1, __ATOMIC_RELAXED);
    memcpy(leaf->name, n->text, n->len + 1);
    leaf->name_len = n->len;
    *out = leaf;
    return 0;
}

int ca_mint_leaf(ca_t *ca, const char *name, size_t len, ca_leaf_t **out)
{
    ca__name_t n;
    int rc;

    *out = NULL;
    rc = ca__name_parse(name, len, &n);
    if (rc < 0) {
        return rc;
    }
    if (ca->nc != NULL && !ca__nc_permits(ca->nc, &n)) {
        return PX_EFORBIDDEN;
    }
    return ca__leaf_mint(ca, &n, out);
}

int ca_leaf_acquire(ca_t *ca, const char *name, size_t len, ca_leaf_t **out)
{
    ca__name_t n;
    ca_leaf_t *leaf;
    int rc;

    *out = NULL;
    rc = ca__name_parse(name, len, &n);
    if (rc < 0) {
        return rc;
    }
    uint64_t hash = ca__cache_hash(&ca->cache, n.text, n.len);
    pthread_mutex_lock(&ca->mu);
    leaf = ca__cache_find(&ca->cache, n.text, n.len, hash);
    if (leaf != NULL) {
        ca->cache.hits++;
        *out = ca_leaf_retain(leaf);
        pthread_mutex_unlock(&ca->mu);
        return 0;
    }
    ca->cache.misses++;
    pthread_mutex_unlock(&ca->mu);
    if (ca->nc != NULL && !ca__nc_permits(ca->nc, &n)) {
        return PX_EFORBIDDEN; /* never minted, so never cached: each try is checked again */
    }
    rc = ca__leaf_mint(ca, &n, &leaf); /* unlocked: signing is the slow part */
    if (rc < 0) {
        return rc;
    }
    leaf->hash = hash;
    pthread_mutex_lock(&ca->mu);
    ca_leaf_t *won = ca__cache_find(&ca->cache, n.text, n.len, hash);
    if (won != NULL) { /* another loop minted the same name meanwhile: one leaf per name */
        *out = ca_leaf_retain(won);
        pthread_mutex_unlock(&ca->mu);
        ca_leaf_release(leaf);
        return 0;
    }
    ca__cache_insert(&ca->cache, leaf);
    *out = leaf;
    pthread_mutex_unlock(&ca->mu);
    return 0;
}

/* ---- leaf references and accessors ---- */

ca_leaf_t *ca_leaf_retain(ca_leaf_t *leaf)
{
    __atomic_add_fetch(&leaf->refs, 1, __ATOMIC_RELAXED);
    return leaf;
}

void ca_leaf_release(ca_leaf_t *leaf)
{
    if (leaf == NULL || __atomic_sub_fetch(&leaf->refs, 1, __ATOMIC_ACQ_REL) > 0) {
        return;
    }
    X509_free(leaf->cert);
    ca__issuer_release(leaf->issuer);
    free(leaf);
}

X509 *ca_leaf_get_cert(const ca_leaf_t *leaf)
{
    return leaf->cert;
}

X509 *ca_leaf_get_ca_cert(const ca_leaf_t *leaf)
{
    return leaf->issuer->cert;
}

EVP_PKEY *ca_leaf_get_key(const ca_leaf_t *leaf)
{
    return leaf->issuer->leaf_key;
}

STACK_OF(X509) * ca_leaf_get_chain(const ca_leaf_t *leaf)
{
    return leaf->issuer->chain;
}

const char *ca_leaf_get_name(const ca_leaf_t *leaf)
{
    return leaf->name;
}
