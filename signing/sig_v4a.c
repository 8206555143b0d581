#include "signing/sig_v4a.h"

#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>

#include "base/px_err.h"
#include "signing/sig_encode.h"

#define SIG__V4A_INPUT_MAX 1024 /* longest access key id / secret accepted by the KDF */
#define SIG__DER_MAX 72         /* DER ECDSA P-256 signature */

/* n - 2, n being the order of the P-256 group. */
static const unsigned char sig__n_minus_2[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x4f};

/* 1 when k > n-2, computed without branching on k. */
static unsigned sig__above_n_minus_2(const unsigned char k[32])
{
    unsigned borrow = 0;
    int i;

    /* (n-2) - k, least significant byte first; a final borrow means k > n-2. */
    for (i = 31; i >= 0; i--) {
        unsigned d = (unsigned)sig__n_minus_2[i] - (unsigned)k[i] - borrow;

        borrow = (d >> 8) & 1;
    }
    return borrow;
}

static void sig__add_one(unsigned char k[32])
{
    unsigned carry = 1;
    int i;

    for (i = 31; i >= 0; i--) {
        unsigned s = (unsigned)k[i] + carry;

        k[i] = (unsigned char)s;
        carry = s >> 8;
    }
}

/* Builds an EC P-256 EVP_PKEY from d (and its public point d*G). */
static int sig__pkey_from_private(const unsigned char d[32], EVP_PKEY **out)
{
    EC_GROUP *group = NULL;
    EC_POINT *pub = NULL;
    BIGNUM *bn = NULL;
    BN_CTX *bnctx = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char pubbuf[65];
    int rc = PX_ECRYPTO;

    *out = NULL;
    group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    bnctx = BN_CTX_secure_new();
    bn = BN_secure_new();
    if (group == NULL || bnctx == NULL || bn == NULL || BN_bin2bn(d, 32, bn) == NULL) {
        goto fail;
    }
    pub = EC_POINT_new(group);
    if (pub == NULL || EC_POINT_mul(group, pub, bn, NULL, NULL, bnctx) != 1 ||
        EC_POINT_point2oct(group, pub, POINT_CONVERSION_UNCOMPRESSED, pubbuf, sizeof(pubbuf),
                           bnctx) != sizeof(pubbuf)) {
        goto fail;
    }
    bld = OSSL_PARAM_BLD_new();
    if (bld == NULL ||
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, SN_X9_62_prime256v1, 0) !=
            1 ||
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, bn) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pubbuf, sizeof(pubbuf)) !=
            1) {
        goto fail;
    }
    params = OSSL_PARAM_BLD_to_param(bld);
    pctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (params == NULL || pctx == NULL || EVP_PKEY_fromdata_init(pctx) != 1 ||
        EVP_PKEY_fromdata(pctx, out, EVP_PKEY_KEYPAIR, params) != 1) {
        goto fail;
    }
    rc = 0;
fail:
    EVP_PKEY_CTX_free(pctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EC_POINT_free(pub);
    BN_clear_free(bn);
    BN_CTX_free(bnctx);
    EC_GROUP_free(group);
    return rc;
}

int sig_v4a_derive_key(sig_str_t access_key_id, sig_str_t secret, EVP_PKEY **out)
{
    static const char label[] = "AWS4-ECDSA-P256-SHA256";
    unsigned char key[5 + SIG__V4A_INPUT_MAX];
    unsigned char input[4 + sizeof(label) + SIG__V4A_INPUT_MAX + 1 + 4];
    unsigned char k[SIG_SHA256_LEN];
    size_t pos = 0;
    size_t counter_at;
    int counter;
    int rc = PX_ESIGNING;

    *out = NULL;
    if (access_key_id.len > SIG__V4A_INPUT_MAX || secret.len > SIG__V4A_INPUT_MAX) {
        return PX_ETOOBIG;
    }
    memcpy(key, "AWS4A", 5);
    if (secret.len > 0) {
        memcpy(key + 5, secret.base, secret.len);
    }
    /* Fixed input: i = 1 (32-bit), label, 0x00, context = access key id, counter, L = 256. */
    memcpy(input, "\x00\x00\x00\x01", 4);
    pos = 4;
    memcpy(input + pos, label, sizeof(label) - 1);
    pos += sizeof(label) - 1;
    input[pos++] = 0x00;
    if (access_key_id.len > 0) {
        memcpy(input + pos, access_key_id.base, access_key_id.len);
    }
    pos += access_key_id.len;
    counter_at = pos++;
    memcpy(input + pos, "\x00\x00\x01\x00", 4);
    pos += 4;

    for (counter = 1; counter <= SIG_V4A_COUNTER_MAX; counter++) {
        input[counter_at] = (unsigned char)counter;
        if (sig_hmac_sha256(key, 5 + secret.len, input, pos, k) != 0) {
            rc = PX_ECRYPTO;
            break;
        }
        if (!sig__above_n_minus_2(k)) {
            sig__add_one(k);
            rc = sig__pkey_from_private(k, out);
            break;
        }
    }
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(k, sizeof(k));
    return rc;
}

int sig_v4a_sign(EVP_PKEY *key, const char *sts, size_t len, char *hex, size_t cap, size_t *hex_len)
{
    unsigned char der[SIG__DER_MAX + 8];
    size_t der_len = sizeof(der);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int rc = PX_ECRYPTO;

    if (md != NULL && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
        EVP_DigestSign(md, der, &der_len, (const unsigned char *)sts, len) == 1 &&
        der_len * 2 <= cap && der_len * 2 <= SIG_V4A_SIG_MAX) {
        sig_hex_encode(der, der_len, hex);
        *hex_len = der_len * 2;
        rc = 0;
    }
    EVP_MD_CTX_free(md);
    return rc;
}

int sig_v4a_verify(EVP_PKEY *key, const char *sts, size_t len, const char *sig, size_t sig_len)
{
    unsigned char der[SIG__DER_MAX];
    size_t der_len = 0;
    EVP_MD_CTX *md;
    int ok;

    while (sig_len > 0 && sig[sig_len - 1] == '*') {
        sig_len--;
    }
    if (sig_len < 16 || sig_len > SIG_V4A_SIG_MAX ||
        sig_hex_decode(sig, sig_len, der, sizeof(der), &der_len) != 0) {
        return PX_EPARSE;
    }
    md = EVP_MD_CTX_new();
    if (md == NULL) {
        return PX_ENOMEM;
    }
    ok = EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
         EVP_DigestVerify(md, der, der_len, (const unsigned char *)sts, len) == 1;
    EVP_MD_CTX_free(md);
    return ok ? 0 : PX_ESIGNING;
}

int sig_v4a_pubkey_from_xy(const unsigned char x[32], const unsigned char y[32], EVP_PKEY **out)
{
    unsigned char pub[65];
    OSSL_PARAM params[3];
    EVP_PKEY_CTX *pctx;
    int rc = PX_ECRYPTO;

    *out = NULL;
    pub[0] = 0x04;
    memcpy(pub + 1, x, 32);
    memcpy(pub + 33, y, 32);
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
                                                 (char *)SN_X9_62_prime256v1, 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub));
    params[2] = OSSL_PARAM_construct_end();
    pctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (pctx != NULL && EVP_PKEY_fromdata_init(pctx) == 1 &&
        EVP_PKEY_fromdata(pctx, out, EVP_PKEY_PUBLIC_KEY, params) == 1) {
        rc = 0;
    }
    EVP_PKEY_CTX_free(pctx);
    return rc;
}

static int sig__get_bn32(EVP_PKEY *key, const char *name, unsigned char out[32])
{
    BIGNUM *bn = NULL;
    int rc = PX_ECRYPTO;

    if (EVP_PKEY_get_bn_param(key, name, &bn) == 1 && BN_bn2binpad(bn, out, 32) == 32) {
        rc = 0;
    }
    BN_clear_free(bn);
    return rc;
}

int sig_v4a_pubkey_xy(EVP_PKEY *key, unsigned char x[32], unsigned char y[32])
{
    int rc = sig__get_bn32(key, OSSL_PKEY_PARAM_EC_PUB_X, x);

    return rc != 0 ? rc : sig__get_bn32(key, OSSL_PKEY_PARAM_EC_PUB_Y, y);
}

int sig_v4a_private_bytes(EVP_PKEY *key, unsigned char d[32])
{
    return sig__get_bn32(key, OSSL_PKEY_PARAM_PRIV_KEY, d);
}
