/* Fuzzes the aws-chunked re-signer. Input: byte 0 = flags (bit 0 trailer mode, bit 1 SigV4A,
 * bit 2 a 64-byte chunk cap), bytes 1-2 = seed of the split points, the rest = the body, fed
 * in pieces whose sizes come from that seed (1 byte, random, or all at once).
 * Invariants (trap on violation): SigV4 output (also before an error) is identical whatever
 * the split, and the same error is reported (SigV4A: see below); a body that completes keeps its
 * length exactly; output never exceeds the bytes consumed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/px_err.h"
#include "signing/sig_chunked.h"
#include "signing/sig_v4a.h"

#define FUZZ_BODY_MAX (256 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_sink {
    char *buf;
    size_t len;
    size_t cap;
} fuzz_sink_t;

static int on_fuzz_sink(void *data, const char *buf, size_t len)
{
    fuzz_sink_t *s = data;

    if (s->len + len > s->cap) {
        size_t ncap = (s->len + len) * 2;
        char *p = realloc(s->buf, ncap);

        if (p == NULL) {
            return -1;
        }
        s->buf = p;
        s->cap = ncap;
    }
    memcpy(s->buf + s->len, buf, len);
    s->len += len;
    return 0;
}

static EVP_PKEY *fuzz_v4a_key(void)
{
    static EVP_PKEY *key;
    sig_str_t akid = {"AKIDEXAMPLE", 11};
    sig_str_t secret = {"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 40};

    if (key == NULL && sig_v4a_derive_key(akid, secret, &key) != 0) {
        __builtin_trap();
    }
    return key;
}

/* Runs one pass; step 0 = all at once, 1 = byte by byte, else seeded random sizes. */
static int fuzz_run(const sig_chunked_config_t *cfg, const char *body, size_t len, unsigned step,
                    unsigned seed, fuzz_sink_t *out)
{
    sig_chunked_t *c = NULL;
    size_t i = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    if (sig_chunked_new(cfg, on_fuzz_sink, out, &c) != 0) {
        __builtin_trap();
    }
    rc = 0;
    while (i < len && rc == 0) {
        size_t n;

        if (step == 0) {
            n = len;
        } else if (step == 1) {
            n = 1;
        } else {
            seed = seed * 1103515245u + 12345u;
            n = 1 + (seed >> 16) % 97;
        }
        if (n > len - i) {
            n = len - i;
        }
        rc = sig_chunked_feed(c, body + i, n);
        i += n;
        if (out->len > i) {
            __builtin_trap();
        }
    }
    if (rc == 0) {
        rc = sig_chunked_finish(c);
    }
    if (rc == 0 && (!sig_chunked_done(c) || out->len != len)) {
        __builtin_trap();
    }
    sig_chunked_free(c);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned char key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    sig_chunked_config_t cfg;
    fuzz_sink_t a;
    fuzz_sink_t b;
    char *body;
    size_t len;
    unsigned seed;
    int rc_a;
    int rc_b;

    if (size < 3 || size - 3 > FUZZ_BODY_MAX) {
        return 0;
    }
    seed = (unsigned)data[1] << 8 | data[2];
    len = size - 3;
    body = malloc(len > 0 ? len : 1);
    if (body == NULL) {
        return 0;
    }
    if (len > 0) {
        memcpy(body, data + 3, len);
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.trailer = data[0] & 1;
    cfg.alg = (data[0] & 2) ? SIG_ALG_V4A : SIG_ALG_V4;
    cfg.max_chunk = (data[0] & 4) ? 64 : 0;
    cfg.amz_date = (sig_str_t){"20130524T000000Z", 16};
    cfg.scope = (sig_str_t){"20130524/us-east-1/s3/aws4_request", 34};
    cfg.seed = (sig_str_t){"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", 64};
    cfg.v4_key = key;
    if (cfg.alg == SIG_ALG_V4A) {
        cfg.scope = (sig_str_t){"20130524/s3/aws4_request", 24};
        cfg.v4a_key = fuzz_v4a_key();
    }
    rc_a = fuzz_run(&cfg, body, len, 0, seed, &a);
    rc_b = fuzz_run(&cfg, body, len, seed % 3 == 0 ? 1 : 2, seed, &b);
    /* SigV4A re-signs until the DER fits the client's signature width; for widths under 140
     * (never sent by SDKs, which pad to 144) that may succeed in one run and not the other */
    if (rc_a != rc_b && !(cfg.alg == SIG_ALG_V4A && (rc_a == PX_ESIGNING || rc_b == PX_ESIGNING))) {
        __builtin_trap();
    }
    /* ECDSA signatures are randomized; only SigV4 output can be compared byte for byte */
    if (cfg.alg == SIG_ALG_V4 &&
        (a.len != b.len || (a.len > 0 && memcmp(a.buf, b.buf, a.len) != 0))) {
        __builtin_trap();
    }
    free(a.buf);
    free(b.buf);
    free(body);
    return 0;
}
