#include "signing/sig_encode.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/crypto.h>

#include "base/px_err.h"
#include "base/px_grow.h"

static const char sig__hex_upper[] = "0123456789ABCDEF";
static const char sig__hex_lower[] = "0123456789abcdef";

void sig_buf_init(sig_buf_t *b, char *storage, size_t size, size_t max)
{
    b->base = storage;
    b->len = 0;
    b->cap = storage != NULL ? size : 0;
    b->max = max;
    b->heap = 0;
    b->err = 0;
}

void sig_buf_free(sig_buf_t *b)
{
    if (b->heap) {
        free(b->base);
    }
    b->base = NULL;
    b->len = 0;
    b->cap = 0;
    b->heap = 0;
}

static int sig__buf_grow(sig_buf_t *b, size_t need)
{
    if (b->heap) {
        b->err = px_grow(&b->base, &b->cap, need, 1, 256, b->max);
        return b->err;
    }
    /* The caller's storage stays where it is: the bytes move to a new heap array, doubling
     * from that storage's size (256 at least). */
    char *p = NULL;
    size_t cap = 0;
    b->err = px_grow(&p, &cap, need, 1, b->cap < 256 ? 256 : b->cap, b->max);
    if (b->err != 0)
        return b->err;
    if (b->len > 0) {
        memcpy(p, b->base, b->len);
    }
    b->base = p;
    b->cap = cap;
    b->heap = 1;
    return 0;
}

int sig_buf_add(sig_buf_t *b, const void *s, size_t len)
{
    if (b->err != 0) {
        return b->err;
    }
    if (len == 0) {
        return 0;
    }
    if (len > b->max - b->len) {
        b->err = PX_ETOOBIG;
        return b->err;
    }
    if (b->len + len > b->cap && sig__buf_grow(b, b->len + len) != 0) {
        return b->err;
    }
    memcpy(b->base + b->len, s, len);
    b->len += len;
    return 0;
}

int sig_buf_addc(sig_buf_t *b, char c)
{
    return sig_buf_add(b, &c, 1);
}

int sig_buf_adds(sig_buf_t *b, const char *s)
{
    return sig_buf_add(b, s, strlen(s));
}

int sig_is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

int sig_uri_encode(sig_buf_t *out, const char *src, size_t len, int keep_slash)
{
    size_t i = 0;

    while (i < len) {
        size_t run = i;
        unsigned char c;
        char esc[3];

        /* Copy runs of bytes that need no escaping in one append. */
        while (run < len &&
               (sig_is_unreserved((unsigned char)src[run]) || (keep_slash && src[run] == '/'))) {
            run++;
        }
        if (run > i) {
            sig_buf_add(out, src + i, run - i);
            i = run;
            continue;
        }
        c = (unsigned char)src[i];
        esc[0] = '%';
        esc[1] = sig__hex_upper[c >> 4];
        esc[2] = sig__hex_upper[c & 15];
        sig_buf_add(out, esc, 3);
        i++;
    }
    return out->err;
}

static int sig__hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

int sig_uri_decode(sig_buf_t *out, const char *src, size_t len)
{
    size_t i = 0;

    while (i < len) {
        const char *pct = memchr(src + i, '%', len - i);
        size_t run = pct != NULL ? (size_t)(pct - (src + i)) : len - i;
        int hi;
        int lo;

        if (run > 0) {
            sig_buf_add(out, src + i, run);
            i += run;
            continue;
        }
        if (len - i < 3) {
            return PX_EPARSE;
        }
        hi = sig__hexval((unsigned char)src[i + 1]);
        lo = sig__hexval((unsigned char)src[i + 2]);
        if (hi < 0 || lo < 0) {
            return PX_EPARSE;
        }
        sig_buf_addc(out, (char)(hi << 4 | lo));
        i += 3;
    }
    return out->err;
}

void sig_hex_encode(const unsigned char *in, size_t len, char *out)
{
    size_t i;

    for (i = 0; i < len; i++) {
        out[2 * i] = sig__hex_lower[in[i] >> 4];
        out[2 * i + 1] = sig__hex_lower[in[i] & 15];
    }
}

int sig_hex_decode(const char *in, size_t len, unsigned char *out, size_t cap, size_t *outlen)
{
    size_t i;

    if (len % 2 != 0) {
        return PX_EPARSE;
    }
    if (len / 2 > cap) {
        return PX_ETOOBIG;
    }
    for (i = 0; i < len; i += 2) {
        int hi = sig__hexval((unsigned char)in[i]);
        int lo = sig__hexval((unsigned char)in[i + 1]);

        if (hi < 0 || lo < 0) {
            return PX_EPARSE;
        }
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    *outlen = len / 2;
    return 0;
}

int sig_sha256(const void *data, size_t len, unsigned char out[SIG_SHA256_LEN])
{
    unsigned int n = 0;

    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != SIG_SHA256_LEN) {
        return PX_ECRYPTO;
    }
    return 0;
}

int sig_sha256_hex(const void *data, size_t len, char out[SIG_SHA256_HEX_LEN])
{
    unsigned char md[SIG_SHA256_LEN];
    int rc = sig_sha256(data, len, md);

    if (rc == 0) {
        sig_hex_encode(md, sizeof(md), out);
    }
    return rc;
}

/* HMAC-SHA256 (RFC 2104) on a caller's digest context: cheaper than HMAC(), which fetches
 * and sets up a MAC object on every call, and the signing-key chain runs five in a row. */
static int sig__hmac(EVP_MD_CTX *md, const EVP_MD *sha, const void *key, size_t klen,
                     const void *data, size_t dlen, unsigned char out[SIG_SHA256_LEN])
{
    unsigned char k[64];
    unsigned char pad[64];
    unsigned char inner[SIG_SHA256_LEN];
    size_t i;
    int ok;

    memset(k, 0, sizeof(k));
    if (klen > sizeof(k)) {
        if (EVP_Digest(key, klen, k, NULL, sha, NULL) != 1) {
            return PX_ECRYPTO;
        }
    } else if (klen > 0) {
        memcpy(k, key, klen);
    }
    for (i = 0; i < sizeof(pad); i++) {
        pad[i] = k[i] ^ 0x36;
    }
    ok = EVP_DigestInit_ex(md, sha, NULL) == 1 && EVP_DigestUpdate(md, pad, sizeof(pad)) == 1 &&
         EVP_DigestUpdate(md, data, dlen) == 1 && EVP_DigestFinal_ex(md, inner, NULL) == 1;
    for (i = 0; i < sizeof(pad); i++) {
        pad[i] = k[i] ^ 0x5c;
    }
    ok = ok && EVP_DigestInit_ex(md, sha, NULL) == 1 &&
         EVP_DigestUpdate(md, pad, sizeof(pad)) == 1 &&
         EVP_DigestUpdate(md, inner, sizeof(inner)) == 1 && EVP_DigestFinal_ex(md, out, NULL) == 1;
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
    OPENSSL_cleanse(inner, sizeof(inner));
    return ok ? 0 : PX_ECRYPTO;
}

int sig_hmac_chain(const sig_str_t *steps, size_t nsteps, const void *key, size_t klen,
                   unsigned char out[SIG_SHA256_LEN])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_MD *sha = EVP_MD_fetch(NULL, "SHA256", NULL);
    unsigned char k[SIG_SHA256_LEN];
    size_t i;
    int rc = md != NULL && sha != NULL && nsteps > 0 ? 0 : PX_ECRYPTO;

    for (i = 0; i < nsteps && rc == 0; i++) {
        rc = sig__hmac(md, sha, i == 0 ? key : k, i == 0 ? klen : sizeof(k), steps[i].base,
                       steps[i].len, i + 1 == nsteps ? out : k);
    }
    OPENSSL_cleanse(k, sizeof(k));
    EVP_MD_free(sha);
    EVP_MD_CTX_free(md);
    return rc;
}

int sig_hmac_sha256(const void *key, size_t klen, const void *data, size_t dlen,
                    unsigned char out[SIG_SHA256_LEN])
{
    sig_str_t step = {data, dlen};

    return sig_hmac_chain(&step, 1, key, klen, out);
}

int sig_str_ieq(const char *s, size_t len, const char *lower)
{
    size_t i;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (lower[i] == '\0') {
            return 0;
        }
        if (c >= 'A' && c <= 'Z') {
            c = (unsigned char)(c + ('a' - 'A'));
        }
        if (c != (unsigned char)lower[i]) {
            return 0;
        }
    }
    return lower[len] == '\0';
}

int sig_is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}
