/* aws-chunked re-signer: the chunked/ vectors (SigV4 example, SigV4 trailer example with its
 * errata, the aws-c-auth trailer case, SigV4A verify-only chains with and without trailer),
 * the reference doc's W10 stream, feeding 1 byte at a time / random splits / all at once
 * (identical output), malformed framing, caps and sink errors. */
#include "tests/signing/sig_test_resign.h"

#include <openssl/evp.h>

#include "signing/sig_chunked.h"
#include "signing/sig_v4a.h"

#define DATE "20130524T000000Z"

/* ------------------------------------------------------------------ helpers */

typedef struct sink {
    char *buf;
    size_t len;
    size_t cap;
    int fail_after; /* >0: return an error once this many bytes were taken */
    int calls;
} sink_t;

static int on_sink(void *data, const char *buf, size_t len)
{
    sink_t *s = data;

    s->calls++;
    if (s->fail_after > 0 && s->len + len > (size_t)s->fail_after) {
        return PX_EIO;
    }
    if (s->len + len + 1 > s->cap) {
        s->cap = (s->len + len + 1) * 2;
        s->buf = realloc(s->buf, s->cap);
        assert_non_null(s->buf);
    }
    memcpy(s->buf + s->len, buf, len);
    s->len += len;
    s->buf[s->len] = '\0'; /* for strstr() in the checks */
    return 0;
}

typedef struct stream {
    char *buf;
    size_t len;
} stream_t;

static void st_add(stream_t *s, const void *p, size_t n)
{
    s->buf = realloc(s->buf, s->len + n + 1);
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
}

static void st_adds(stream_t *s, const char *p)
{
    st_add(s, p, strlen(p));
}

/* Appends one chunk of n copies of c with the given signature text. */
static void st_chunk(stream_t *s, const char *size_hex, size_t n, char c, const char *sig)
{
    char *data = malloc(n + 1);

    st_adds(s, size_hex);
    st_adds(s, ";chunk-signature=");
    st_adds(s, sig);
    st_adds(s, "\r\n");
    memset(data, c, n);
    st_add(s, data, n);
    if (strcmp(size_hex, "0") != 0) {
        st_adds(s, "\r\n");
    }
    free(data);
}

/* Feeds in pieces: step 0 = all at once, 1 = byte by byte, else pseudo-random sizes. */
static int feed(sig_chunked_t *c, const char *buf, size_t len, unsigned step)
{
    size_t i = 0;
    unsigned x = 12345u + step;
    int rc = 0;

    while (i < len && rc == 0) {
        size_t n;

        if (step == 0) {
            n = len;
        } else if (step == 1) {
            n = 1;
        } else {
            x = x * 1103515245u + 12345u;
            n = 1 + (x >> 8) % (step * 7);
        }
        if (n > len - i) {
            n = len - i;
        }
        rc = sig_chunked_feed(c, buf + i, n);
        i += n;
    }
    return rc != 0 ? rc : sig_chunked_finish(c);
}

static sig_chunked_config_t v4_cfg(const unsigned char *key, const char *seed, int trailer)
{
    sig_chunked_config_t cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.alg = SIG_ALG_V4;
    cfg.trailer = trailer;
    cfg.amz_date = tu_s(DATE);
    cfg.scope = tu_s("20130524/us-east-1/s3/aws4_request");
    cfg.seed = tu_s(seed);
    cfg.v4_key = key;
    return cfg;
}

/* Runs the re-signer over in with the given split; returns rc, output in out. */
static int run_chunked(const sig_chunked_config_t *cfg, const stream_t *in, unsigned step,
                       sink_t *out)
{
    sig_chunked_t *c = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    assert_int_equal(sig_chunked_new(cfg, on_sink, out, &c), 0);
    rc = feed(c, in->buf, in->len, step);
    if (rc == 0) {
        assert_true(sig_chunked_done(c));
    }
    sig_chunked_free(c);
    return rc;
}

static void s3_key(unsigned char key[32])
{
    assert_int_equal(sig_v4_signing_key(tu_s("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                                        tu_s("20130524"), tu_s("us-east-1"), tu_s("s3"), key),
                     0);
}

/* The seed: re-sign the documented request (headers object + authorization) and check it. */
static void check_seed(const tj_t *doc, const tj_t *headers, const char *authz, const char *creq,
                       sig_result_t *res)
{
    tu_req_t r;
    sig_request_t sr;
    sig_auth_t auth;
    sig_creds_t creds;
    sig_opts_t opts;
    sig_buf_t cb;
    char out[2048];
    size_t n = 0;
    size_t i;

    memset(&r, 0, sizeof(r));
    for (i = 0; i < headers->n; i++) {
        r.headers[i].name = tu_s(headers->keys[i]);
        r.headers[i].value = tu_s(headers->items[i]->str);
    }
    r.nheaders = headers->n;
    sr.method = tu_s("PUT");
    sr.target = tu_s("/examplebucket/chunkObject.txt");
    sr.headers = r.headers;
    sr.nheaders = r.nheaders;
    memset(&creds, 0, sizeof(creds));
    creds.access_key_id = tu_s(tj_str(doc, "access_key_id"));
    creds.secret = tu_s(tj_str(doc, "secret_access_key"));
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = SIG_URI_S3;
    sig_buf_init(&cb, NULL, 0, SIG_CANON_MAX);
    opts.creq = &cb;
    assert_int_equal(sig_auth_parse_header(authz, strlen(authz), &auth), 0);
    if (auth.alg == SIG_ALG_V4) {
        assert_int_equal(sig_resign_header(&sr, &auth, &creds, &opts, out, sizeof(out), &n, res),
                         0);
        assert_mem_str(out, n, authz);
    } else {
        /* ECDSA: the published seed verifies; our canonical request is byte-identical */
        assert_int_equal(sig_verify(&sr, &auth, &creds, &opts, NULL), 0);
    }
    assert_mem_str(cb.base, cb.len, creq);
    sig_buf_free(&cb);
}

/* Builds the 64 KiB + 1 KiB example stream with the given chunk signature texts. */
static void example_stream(stream_t *s, const char *s1, const char *s2, const char *s3)
{
    memset(s, 0, sizeof(*s));
    st_chunk(s, "10000", 65536, 'a', s1);
    st_chunk(s, "400", 1024, 'a', s2);
    st_chunk(s, "0", 0, 'a', s3);
}

/* ------------------------------------------------------------------ SigV4 vectors */

static void test_sig_chunked_v4_example(void **state)
{
    char *text = tu_read(NULL, VEC_DIR "/chunked/sigv4-streaming.json");
    tj_t *doc = tj_parse(text);
    tj_t *ch = tj_get(doc, "chunks");
    const char *zeros = "0000000000000000000000000000000000000000000000000000000000000000";
    sig_chunked_config_t cfg;
    sig_result_t res;
    stream_t want;
    stream_t in;
    sink_t out;
    unsigned steps[] = {0, 1, 2, 5, 100, 4096};
    size_t i;

    (void)state;
    check_seed(doc, tj_get(doc, "headers"), tj_str(doc, "authorization"),
               tj_str(doc, "canonical_request"), &res);
    assert_string_equal(res.signature, tj_str(doc, "seed_signature"));
    example_stream(&want, tj_str(ch->items[0], "signature"), tj_str(ch->items[1], "signature"),
                   tj_str(ch->items[2], "signature"));
    st_adds(&want, "\r\n");
    assert_int_equal(want.len, 66824);
    for (i = 0; i < 3; i++) {
        char *wire = strdup(tj_str(ch->items[i], "wire_header"));

        tu_unescape_crlf(wire);
        assert_non_null(memmem(want.buf, want.len, wire, strlen(wire)));
        free(wire);
    }
    /* the client's (surrogate) chain is replaced by the real one, whatever the split */
    example_stream(&in, zeros, zeros, zeros);
    st_adds(&in, "\r\n");
    cfg = v4_cfg(res.v4_key, res.signature, 0);
    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        assert_int_equal(run_chunked(&cfg, &in, steps[i], &out), 0);
        assert_int_equal(out.len, want.len);
        assert_memory_equal(out.buf, want.buf, want.len);
        free(out.buf);
    }
    /* re-signing the real chain with the real key is the identity */
    assert_int_equal(run_chunked(&cfg, &want, 0, &out), 0);
    assert_int_equal(out.len, want.len);
    assert_memory_equal(out.buf, want.buf, want.len);
    free(out.buf);
    free(in.buf);
    free(want.buf);
    tj_free(doc);
    free(text);
}

static void test_sig_chunked_v4_trailer(void **state)
{
    char *text = tu_read(NULL, VEC_DIR "/chunked/sigv4-streaming-trailer.json");
    tj_t *doc = tj_parse(text);
    tj_t *ch = tj_get(doc, "chunks");
    const char *zeros = "0000000000000000000000000000000000000000000000000000000000000000";
    const char *errata = tj_str(tj_get(doc, "trailer_signature_errata"), "documented_value");
    sig_chunked_config_t cfg;
    sig_result_t res;
    stream_t want;
    stream_t in;
    sink_t out;
    size_t i;

    (void)state;
    check_seed(doc, tj_get(doc, "headers_signed"),
               "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
               "aws4_request, SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;"
               "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer, Signature="
               "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
               tj_str(doc, "canonical_request"), &res);
    assert_string_equal(res.signature, tj_str(doc, "seed_signature"));
    example_stream(&want, tj_str(ch->items[0], "signature"), tj_str(ch->items[1], "signature"),
                   tj_str(ch->items[2], "signature"));
    st_adds(&want, "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:");
    st_adds(&want, tj_str(doc, "trailer_signature"));
    st_adds(&want, "\r\n\r\n");

    /* errata 4: a client that followed the documented trailer signature (-PAYLOAD label)
     * gets the SDK one (-TRAILER label) */
    example_stream(&in, zeros, zeros, zeros);
    st_adds(&in, "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:");
    st_adds(&in, errata);
    st_adds(&in, "\r\n\r\n");
    cfg = v4_cfg(res.v4_key, res.signature, 1);
    for (i = 0; i < 3; i++) {
        assert_int_equal(run_chunked(&cfg, &in, (unsigned)i, &out), 0);
        assert_int_equal(out.len, want.len);
        assert_memory_equal(out.buf, want.buf, want.len);
        free(out.buf);
    }
    free(in.buf);

    /* tolerated layout: an empty line between the final chunk and the trailers is kept */
    example_stream(&in, zeros, zeros, zeros);
    st_adds(&in, "\r\nx-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:");
    st_adds(&in, zeros);
    st_adds(&in, "\r\n\r\n");
    assert_int_equal(run_chunked(&cfg, &in, 1, &out), 0);
    assert_int_equal(out.len, want.len + 2);
    assert_non_null(memmem(out.buf, out.len, tj_str(doc, "trailer_signature"), 64));
    free(out.buf);
    free(in.buf);
    free(want.buf);
    tj_free(doc);
    free(text);
}

static void test_sig_chunked_v4_trailer_aws_c_auth(void **state)
{
    char *text = tu_read(NULL, VEC_DIR "/chunked/sigv4-streaming.json");
    tj_t *doc = tj_parse(text);
    tj_t *ch = tj_get(doc, "chunks");
    tj_t *extra = tj_get(doc, "extra_trailer_case_from_aws_c_auth");
    unsigned char key[32];
    sig_chunked_config_t cfg;
    stream_t in;
    sink_t out;
    char *p;

    (void)state;
    s3_key(key);
    /* trailers are hashed as sorted "name:value\n" lines; names are lower-cased, values
     * trimmed, and the wire keeps the client's text */
    example_stream(&in, tj_str(ch->items[0], "signature"), tj_str(ch->items[1], "signature"),
                   tj_str(ch->items[2], "signature"));
    st_adds(&in, "second:2nd\r\nFirst: 1st \r\nthird:3rd\r\nx-amz-trailer-signature:");
    st_adds(&in, "0000000000000000000000000000000000000000000000000000000000000000\r\n\r\n");
    cfg = v4_cfg(key, tj_str(doc, "seed_signature"), 1);
    assert_int_equal(run_chunked(&cfg, &in, 1, &out), 0);
    assert_int_equal(out.len, in.len);
    p = memmem(out.buf, out.len, "x-amz-trailer-signature:", 24);
    assert_non_null(p);
    assert_memory_equal(p + 24, tj_str(extra, "trailer_signature"), 64);
    assert_non_null(memmem(out.buf, out.len, "First: 1st \r\n", 13));
    free(out.buf);
    free(in.buf);
    tj_free(doc);
    free(text);
}

/* W10 of the reference doc: a SigV4 PUT with its own seed and a 13-byte chunk. */
static void test_sig_chunked_reference_w10(void **state)
{
    sig_header_t h[] = {
        {{"Host", 4}, {"mybucket.s3.amazonaws.com", 25}},
        {{"x-amz-date", 10}, {"20260101T000000Z", 16}},
        {{"x-amz-content-sha256", 20}, {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", 34}},
    };
    const char authz[] = "AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
                         "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                         "Signature=aa00bb11cc22dd33ee44ff5500661177aa00bb11cc22dd33ee44ff55006611"
                         "77";
    sig_request_t sr = {{"PUT", 3}, {"/key", 4}, h, 3};
    sig_creds_t creds;
    sig_auth_t auth;
    sig_opts_t opts;
    sig_result_t res;
    sig_chunked_config_t cfg;
    char out_auth[1024];
    size_t n = 0;
    stream_t in;
    sink_t out;
    char a64[65];
    char b64[65];

    (void)state;
    memset(&creds, 0, sizeof(creds));
    creds.access_key_id = tu_s("AKIAIOSFODNN7EXAMPLE");
    creds.secret = tu_s("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = SIG_URI_S3;
    assert_int_equal(sig_auth_parse_header(authz, sizeof(authz) - 1, &auth), 0);
    assert_int_equal(
        sig_resign_header(&sr, &auth, &creds, &opts, out_auth, sizeof(out_auth), &n, &res), 0);
    assert_string_equal(res.signature,
                        "14c06298e158719addf5b62b8fdfa54dfc5844821b879258f475e268ae902aed");
    memset(a64, 'a', 64);
    a64[64] = '\0';
    memset(b64, 'b', 64);
    b64[64] = '\0';
    memset(&in, 0, sizeof(in));
    st_adds(&in, "d;chunk-signature=");
    st_adds(&in, a64);
    st_adds(&in, "\r\nHello, world!\r\n0;chunk-signature=");
    st_adds(&in, b64);
    st_adds(&in, "\r\n\r\n");
    memset(&cfg, 0, sizeof(cfg));
    cfg.alg = SIG_ALG_V4;
    cfg.amz_date = res.amz_date;
    cfg.scope = auth.scope;
    cfg.seed = tu_s(res.signature);
    cfg.v4_key = res.v4_key;
    assert_int_equal(run_chunked(&cfg, &in, 1, &out), 0);
    assert_mem_str(out.buf, out.len,
                   "d;chunk-signature=25fae9fa796aba3c86e4d1ce1b7c97e14a7d4d4d24c24539d440e5c1589d"
                   "137a\r\nHello, world!\r\n0;chunk-signature=95ef509d267b77fbbeea2ae230f4ee1d61c6"
                   "d5fc4237b76c7751815c3f973159\r\n\r\n");
    free(out.buf);
    free(in.buf);
}

/* ------------------------------------------------------------------ SigV4A vectors */

/* Checks every chunk (and trailer) signature in out against a chain from seed with key;
 * each must keep the width of the corresponding input signature. */
static void verify_v4a_chain(EVP_PKEY *key, const char *seed, const sink_t *out, const stream_t *in,
                             int trailer, const char *trailer_hash)
{
    char prev[SIG_V4A_SIG_MAX + 1];
    const char *p = out->buf;
    const char *q = in->buf;
    const char *end = out->buf + out->len;
    int chunks = 0;

    snprintf(prev, sizeof(prev), "%s", seed);
    for (;;) {
        const char *sig = memmem(p, (size_t)(end - p), ";chunk-signature=", 17);
        const char *qsig = memmem(q, (size_t)(in->buf + in->len - q), ";chunk-signature=", 17);
        const char *eol;
        size_t size = strtoul(p, NULL, 16);
        size_t slen;
        char hash[65];
        char sts[1024];

        if (sig == NULL) {
            break;
        }
        assert_non_null(qsig);
        sig += 17;
        qsig += 17;
        eol = strstr(sig, "\r\n");
        slen = (size_t)(eol - sig);
        assert_int_equal(slen, (size_t)(strstr(qsig, "\r\n") - qsig));
        assert_int_equal(sig_sha256_hex(eol + 2, size, hash), 0);
        hash[64] = '\0';
        snprintf(sts, sizeof(sts),
                 "AWS4-ECDSA-P256-SHA256-PAYLOAD\n" DATE "\n20130524/s3/aws4_request\n%s\n%s\n%s",
                 prev, SIG_EMPTY_SHA256, hash);
        assert_int_equal(sig_v4a_verify(key, sts, strlen(sts), sig, slen), 0);
        while (slen > 0 && sig[slen - 1] == '*') {
            slen--;
        }
        memcpy(prev, sig, slen);
        prev[slen] = '\0';
        chunks++;
        p = eol + 2 + size;
        q = strstr(qsig, "\r\n") + 2 + size;
        if (size == 0) {
            break;
        }
    }
    assert_int_equal(chunks, 3);
    if (trailer) {
        const char *t = memmem(p, (size_t)(end - p), "x-amz-trailer-signature:", 24);
        char sts[1024];
        size_t slen;

        assert_non_null(t);
        t += 24;
        slen = (size_t)(strstr(t, "\r\n") - t);
        snprintf(sts, sizeof(sts),
                 "AWS4-ECDSA-P256-SHA256-TRAILER\n" DATE "\n20130524/s3/aws4_request\n%s\n%s", prev,
                 trailer_hash);
        assert_int_equal(sig_v4a_verify(key, sts, strlen(sts), t, slen), 0);
    }
}

static void v4a_variant(const tj_t *doc, const tj_t *v, int trailer, EVP_PKEY *key)
{
    tj_t *ch = tj_get(v, "chunks");
    const char *seed = tj_str(v, "seed_signature");
    sig_chunked_config_t cfg;
    sig_result_t res;
    stream_t in;
    sink_t out;
    size_t i;

    check_seed(doc, tj_get(v, "headers_signed"), tj_str(v, "authorization"),
               tj_str(v, "canonical_request"), &res);
    /* every published chunk signature verifies over its published string to sign */
    for (i = 0; i < ch->n; i++) {
        const char *sts = tj_str(ch->items[i], "string_to_sign");
        const char *sig = tj_str(ch->items[i], "signature");

        assert_int_equal(sig_v4a_verify(key, sts, strlen(sts), sig, strlen(sig)), 0);
    }
    memset(&in, 0, sizeof(in));
    example_stream(&in, tj_str(ch->items[0], "signature_padded_144"),
                   tj_str(ch->items[1], "signature_padded_144"),
                   tj_str(ch->items[2], "signature_padded_144"));
    if (trailer) {
        tj_t *t = tj_get(v, "trailer");
        char *wire = strdup(tj_str(t, "wire"));

        tu_unescape_crlf(wire);
        st_adds(&in, wire);
        free(wire);
    } else {
        st_adds(&in, "\r\n");
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.alg = SIG_ALG_V4A;
    cfg.trailer = trailer;
    cfg.amz_date = tu_s(DATE);
    cfg.scope = tu_s(tj_str(doc, "credential_scope"));
    cfg.seed = tu_s(seed);
    cfg.v4a_key = key;
    for (i = 0; i < 3; i++) {
        assert_int_equal(run_chunked(&cfg, &in, (unsigned)i * 3, &out), 0);
        assert_int_equal(out.len, in.len); /* 144-wide padded signatures: same length */
        verify_v4a_chain(key, seed, &out, &in, trailer,
                         trailer ? tj_str(tj_get(v, "trailer"), "canonical_trailers_sha256")
                                 : NULL);
        free(out.buf);
    }
    free(in.buf);
}

static void test_sig_chunked_v4a_vectors(void **state)
{
    char *text = tu_read(NULL, VEC_DIR "/chunked/sigv4a-streaming-verify-only.json");
    tj_t *doc = tj_parse(text);
    EVP_PKEY *key = NULL;
    unsigned char x[32];
    unsigned char y[32];
    char hx[65];

    (void)state;
    assert_int_equal(sig_v4a_derive_key(tu_s(tj_str(doc, "access_key_id")),
                                        tu_s(tj_str(doc, "secret_access_key")), &key),
                     0);
    assert_int_equal(sig_v4a_pubkey_xy(key, x, y), 0);
    sig_hex_encode(x, 32, hx);
    assert_mem_str(hx, 64, tj_str(doc, "public_x_hex"));
    sig_hex_encode(y, 32, hx);
    assert_mem_str(hx, 64, tj_str(doc, "public_y_hex"));
    v4a_variant(doc, tj_get(doc, "without_trailer"), 0, key);
    v4a_variant(doc, tj_get(doc, "with_trailer"), 1, key);
    EVP_PKEY_free(key);
    tj_free(doc);
    free(text);
}

static void test_sig_chunked_v4a_unpadded_width(void **state)
{
    EVP_PKEY *key = NULL;
    sig_chunked_config_t cfg;
    stream_t in;
    sink_t out;
    char w140[141];
    int round;

    (void)state;
    /* a client that sends unpadded 140-character signatures keeps its body length */
    assert_int_equal(sig_v4a_derive_key(tu_s("AKIDEXAMPLE"), tu_s("secret"), &key), 0);
    memset(w140, 'a', 140);
    w140[140] = '\0';
    memset(&in, 0, sizeof(in));
    st_chunk(&in, "10", 16, 'x', w140);
    st_chunk(&in, "0", 0, 'x', w140);
    st_adds(&in, "\r\n");
    memset(&cfg, 0, sizeof(cfg));
    cfg.alg = SIG_ALG_V4A;
    cfg.amz_date = tu_s(DATE);
    cfg.scope = tu_s("20130524/s3/aws4_request");
    cfg.seed = tu_s("3044022003c85b459488bd3d7df2e321e0f40a9d2384034b247f3995253c088967f8aff0022"
                    "01c1eb3d2a50bd30ea98805426a2363fd567844d8c6480552151ec671281b8f36");
    cfg.v4a_key = key;
    for (round = 0; round < 8; round++) {
        assert_int_equal(run_chunked(&cfg, &in, (unsigned)round, &out), 0);
        assert_int_equal(out.len, in.len);
        assert_memory_equal(out.buf + out.len - 2, "\r\n", 2);
        free(out.buf);
    }
    free(in.buf);
    EVP_PKEY_free(key);
}

/* ------------------------------------------------------------------ framing errors */

#define S64 "0000000000000000000000000000000000000000000000000000000000000000"
#define S63 "000000000000000000000000000000000000000000000000000000000000000"

static const struct {
    const char *in;
    int trailer;
    size_t max_chunk;
    int rc;
} framing_cases[] = {
    {"5;chunk-signature=" S64 "\r\nhello\r\n0;chunk-signature=" S64 "\r\n\r\n", 0, 0, 0},
    {"5;chunk-signature=" S64 "\r\nhello\r\n0;chunk-signature=" S64 "\r\n\r\n", 1, 0, 0},
    {"0;chunk-signature=" S64 "\r\n\r\n", 0, 0, 0},
    {"0;chunk-signature=" S64 "\r\n\r\n", 1, 0, 0},
    {"0;chunk-signature=" S64 "\r\na:b\r\nx-amz-trailer-signature:" S64 "\r\n\r\n", 1, 0, 0},
    {"0;chunk-signature=" S64 "\r\nx-amz-trailer-signature: " S64 " \r\n\r\n", 1, 0, 0},
    {"10;chunk-signature=" S64 "\r\n0123456789abcdef\r\n0;chunk-signature=" S64 "\r\n\r\n", 0, 16,
     0},
    {"", 0, 0, PX_EPARSE},
    {"zz;chunk-signature=" S64 "\r\n", 0, 0, PX_EPARSE},
    {";chunk-signature=" S64 "\r\n", 0, 0, PX_EPARSE},
    {"5 ;chunk-signature=" S64 "\r\n", 0, 0, PX_EPARSE},
    {"5;chunk-sig=" S64 "\r\n", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S63 "\r\n", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S64 "0\r\n", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S63 "G\r\n", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S63 "*\r\n", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S64 "\n", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S64 "\rX", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S64 "\r\nhello\r\n", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S64 "\r\nhelloXX", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S64 "\r\nhello\rX", 0, 0, PX_EPARSE},
    {"5;chunk-signature=" S64 "\r\nhel", 0, 0, PX_EPARSE},
    {"11;chunk-signature=" S64 "\r\n", 0, 16, PX_ETOOBIG},
    {"1000001;chunk-signature=" S64 "\r\n", 0, 0, PX_ETOOBIG},
    {"ffffffffffffffff;chunk-signature=" S64 "\r\n", 0, 0, PX_ETOOBIG},
    {"00000000000000001;chunk-signature=" S64 "\r\n", 0, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\n\r\nx", 0, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\nX\r\n", 0, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\n", 0, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\na:b\r\n\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\na:b\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\n\r\n\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\nno colon\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\n:value\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\nbad name:value\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\nx-amz-trailer-signature:" S63 "\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\nx-amz-trailer-signature:" S64 "\r\na:b\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\nx-amz-trailer-signature:" S64 "\r\n\r\n\r\n", 1, 0, PX_EPARSE},
    {"0;chunk-signature=" S64 "\r\nx-amz-trailer-signature:" S64 "\r\n", 1, 0, PX_EPARSE},
};

static void test_sig_chunked_framing(void **state)
{
    unsigned char key[32];
    size_t i;
    unsigned step;

    (void)state;
    s3_key(key);
    for (i = 0; i < sizeof(framing_cases) / sizeof(framing_cases[0]); i++) {
        for (step = 0; step < 3; step++) {
            sig_chunked_config_t cfg = v4_cfg(key, S64, framing_cases[i].trailer);
            stream_t in = {(char *)framing_cases[i].in, strlen(framing_cases[i].in)};
            sink_t out;
            int rc;

            cfg.max_chunk = framing_cases[i].max_chunk;
            rc = run_chunked(&cfg, &in, step, &out);
            if (rc != framing_cases[i].rc) {
                fail_msg("case %zu step %u: rc %d want %d", i, step, rc, framing_cases[i].rc);
            }
            if (rc == 0) {
                assert_int_equal(out.len, in.len);
            }
            free(out.buf);
        }
    }
}

static void test_sig_chunked_trailer_caps(void **state)
{
    unsigned char key[32];
    sig_chunked_config_t cfg;
    stream_t in;
    sink_t out;
    char line[64];
    char *longv;
    int i;

    (void)state;
    s3_key(key);
    cfg = v4_cfg(key, S64, 1);
    memset(&in, 0, sizeof(in));
    st_chunk(&in, "0", 0, 'a', S64);
    for (i = 0; i < SIG_TRAILERS_MAX + 1; i++) {
        snprintf(line, sizeof(line), "t%02d:v\r\n", i);
        st_adds(&in, line);
    }
    assert_int_equal(run_chunked(&cfg, &in, 0, &out), PX_ETOOBIG);
    free(out.buf);
    free(in.buf);

    memset(&in, 0, sizeof(in));
    st_chunk(&in, "0", 0, 'a', S64);
    longv = malloc(SIG_TRAILER_MAX + 2);
    memset(longv, 'v', SIG_TRAILER_MAX + 1);
    longv[SIG_TRAILER_MAX + 1] = '\0';
    st_adds(&in, "a:");
    st_adds(&in, longv);
    st_adds(&in, "\r\n");
    assert_int_equal(run_chunked(&cfg, &in, 1, &out), PX_ETOOBIG);
    free(out.buf);
    free(in.buf);
    free(longv);

    /* a chunk header line longer than SIG_CHUNK_LINE_MAX */
    memset(&in, 0, sizeof(in));
    st_adds(&in, "5;chunk-signature=");
    for (i = 0; i < 5; i++) {
        st_adds(&in, S64);
    }
    cfg.trailer = 0;
    assert_int_equal(run_chunked(&cfg, &in, 0, &out), PX_EPARSE);
    free(out.buf);
    free(in.buf);
}

static void test_sig_chunked_errors_sticky(void **state)
{
    unsigned char key[32];
    sig_chunked_config_t cfg;
    sig_chunked_t *c = NULL;
    sink_t out;
    const char good[] = "5;chunk-signature=" S64 "\r\nhello\r\n";

    (void)state;
    s3_key(key);
    cfg = v4_cfg(key, S64, 0);
    memset(&out, 0, sizeof(out));
    /* a sink error stops the re-signer and is returned from then on */
    out.fail_after = 10;
    assert_int_equal(sig_chunked_new(&cfg, on_sink, &out, &c), 0);
    assert_int_equal(sig_chunked_feed(c, good, sizeof(good) - 1), PX_EIO);
    assert_int_equal(sig_chunked_feed(c, good, sizeof(good) - 1), PX_EIO);
    assert_int_equal(sig_chunked_finish(c), PX_EIO);
    assert_false(sig_chunked_done(c));
    sig_chunked_free(c);
    free(out.buf);

    /* a framing error too */
    memset(&out, 0, sizeof(out));
    assert_int_equal(sig_chunked_new(&cfg, on_sink, &out, &c), 0);
    assert_int_equal(sig_chunked_feed(c, "x", 1), 0); /* judged when the line is complete */
    assert_int_equal(sig_chunked_feed(c, "\r\n", 2), PX_EPARSE);
    assert_int_equal(sig_chunked_feed(c, good, sizeof(good) - 1), PX_EPARSE);
    assert_int_equal(out.len, 0);
    sig_chunked_free(c);
    sig_chunked_free(NULL);

    /* nothing is emitted before a chunk is complete */
    memset(&out, 0, sizeof(out));
    assert_int_equal(sig_chunked_new(&cfg, on_sink, &out, &c), 0);
    assert_int_equal(sig_chunked_feed(c, good, sizeof(good) - 3), 0);
    assert_int_equal(out.len, 0);
    assert_int_equal(sig_chunked_feed(c, good + sizeof(good) - 3, 2), 0);
    assert_int_equal(out.len, sizeof(good) - 1);
    assert_int_equal(sig_chunked_finish(c), PX_EPARSE); /* no final chunk */
    sig_chunked_free(c);
    free(out.buf);
}

static void test_sig_chunked_bad_config(void **state)
{
    unsigned char key[32] = {0};
    sig_chunked_config_t cfg = v4_cfg(key, S64, 0);
    sig_chunked_t *c = (sig_chunked_t *)1;
    sink_t out;

    (void)state;
    assert_int_equal(sig_chunked_new(&cfg, NULL, &out, &c), PX_EPARSE);
    assert_null(c);
    cfg.amz_date = tu_s("20130524");
    assert_int_equal(sig_chunked_new(&cfg, on_sink, &out, &c), PX_EPARSE);
    cfg = v4_cfg(NULL, S64, 0);
    assert_int_equal(sig_chunked_new(&cfg, on_sink, &out, &c), PX_EPARSE);
    cfg = v4_cfg(key, "", 0);
    assert_int_equal(sig_chunked_new(&cfg, on_sink, &out, &c), PX_EPARSE);
    cfg = v4_cfg(key, S64, 0);
    cfg.alg = SIG_ALG_V4A; /* no EVP_PKEY */
    assert_int_equal(sig_chunked_new(&cfg, on_sink, &out, &c), PX_EPARSE);
    cfg.alg = 7;
    assert_int_equal(sig_chunked_new(&cfg, on_sink, &out, &c), PX_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sig_chunked_v4_example),
        cmocka_unit_test(test_sig_chunked_v4_trailer),
        cmocka_unit_test(test_sig_chunked_v4_trailer_aws_c_auth),
        cmocka_unit_test(test_sig_chunked_reference_w10),
        cmocka_unit_test(test_sig_chunked_v4a_vectors),
        cmocka_unit_test(test_sig_chunked_v4a_unpadded_width),
        cmocka_unit_test(test_sig_chunked_framing),
        cmocka_unit_test(test_sig_chunked_trailer_caps),
        cmocka_unit_test(test_sig_chunked_errors_sticky),
        cmocka_unit_test(test_sig_chunked_bad_config),
    };

    return cmocka_run_group_tests_name("sig_chunked", tests, NULL, NULL);
}
