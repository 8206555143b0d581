/* Fuzzes the AWS authentication parsers and the canonicalization they feed: the input is used
 * as an Authorization header value and as a presigned query string; whatever parses is then
 * re-signed and verified against a request built around the same bytes. The canonical URI
 * (all modes), canonical query and SignedHeaders parser also get the raw input.
 * Invariants (trap on violation): a successful parse has in-range views and valid fields; a
 * successful re-sign yields output within the cap that parses again with the real key id. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "signing/sig_auth.h"
#include "signing/sig_encode.h"
#include "signing/sig_resign.h"
#include "signing/sig_v4.h"

#define FUZZ_OUT_MAX 8192
#define FUZZ_INPUT_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check_view(sig_str_t v, const char *lo, const char *hi)
{
    if (v.len > 0 && (v.base < lo || v.base + v.len > hi)) {
        __builtin_trap();
    }
}

static void fuzz_check_auth(const sig_auth_t *a, const char *in, size_t len)
{
    const char *lo = a->presigned ? a->store : in;
    const char *hi = a->presigned ? a->store + sizeof(a->store) : in + len;

    if (a->alg != SIG_ALG_V4 && a->alg != SIG_ALG_V4A) {
        __builtin_trap();
    }
    if (a->access_key_id.len == 0 || a->access_key_id.len > SIG_AKID_MAX || a->date.len != 8 ||
        a->service.len == 0 || a->signature.len == 0 || a->signature.len > SIG_SIG_MAX) {
        __builtin_trap();
    }
    if ((a->alg == SIG_ALG_V4) != (a->region.len > 0)) {
        __builtin_trap();
    }
    fuzz_check_view(a->access_key_id, lo, hi);
    fuzz_check_view(a->scope, lo, hi);
    fuzz_check_view(a->signed_headers, lo, hi);
    fuzz_check_view(a->signature, lo, hi);
}

static const sig_creds_t *fuzz_creds(int token)
{
    static sig_creds_t c;

    memset(&c, 0, sizeof(c));
    c.access_key_id.base = "AKIAIOSFODNN7EXAMPLE";
    c.access_key_id.len = 20;
    c.secret.base = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    c.secret.len = 40;
    if (token) {
        c.session_token.base = "real/token+=";
        c.session_token.len = 12;
    }
    return &c;
}

static void fuzz_header(const char *in, size_t len, int flags)
{
    sig_auth_t a;
    sig_header_t h[4];
    sig_request_t req;
    sig_opts_t opts;
    sig_result_t res;
    sig_auth_t again;
    char out[FUZZ_OUT_MAX];
    char date[17];
    size_t n = 0;
    int rc;

    if (sig_auth_parse_header(in, len, &a) != 0) {
        return;
    }
    fuzz_check_auth(&a, in, len);
    /* a request whose date matches the scope, so that signing really runs */
    memcpy(date, a.date.base, 8);
    memcpy(date + 8, "T000000Z", 9);
    h[0] = (sig_header_t){{"Host", 4}, {in, len < 40 ? len : 40}};
    h[1] = (sig_header_t){{"X-Amz-Date", 10}, {date, 16}};
    h[2] = (sig_header_t){{"x-amz-security-token", 20}, {"surrogate", 9}};
    h[3] = (sig_header_t){{"X-Amz-Content-Sha256", 20}, {in, len < 64 ? len : 64}};
    req.method = (sig_str_t){"PUT", 3};
    req.target = (sig_str_t){in, len};
    req.headers = h;
    req.nheaders = 4;
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = (sig_uri_mode_t)(flags % 3);
    rc = sig_resign_header(&req, &a, fuzz_creds(flags & 4), &opts, out, sizeof(out), &n, &res);
    if (rc == 0) {
        if (n > sizeof(out) || sig_auth_parse_header(out, n, &again) != 0 ||
            again.access_key_id.len != 20 || again.alg != a.alg) {
            __builtin_trap();
        }
    }
    (void)sig_verify(&req, &a, fuzz_creds(0), &opts, NULL);
}

static void fuzz_query(const char *in, size_t len, int flags)
{
    sig_auth_t a;
    sig_header_t h[1] = {{{"Host", 4}, {"example.amazonaws.com", 21}}};
    sig_request_t req;
    sig_opts_t opts;
    sig_result_t res;
    char target[FUZZ_INPUT_MAX + 8];
    char out[FUZZ_OUT_MAX];
    size_t n = 0;
    unsigned detected = 0;
    int rc;

    if (sig_auth_parse_query(in, len, &a) != 0) {
        return;
    }
    fuzz_check_auth(&a, in, len);
    memcpy(target, "/p?", 3);
    memcpy(target + 3, in, len);
    req.method = (sig_str_t){"GET", 3};
    req.target = (sig_str_t){target, len + 3};
    req.headers = h;
    req.nheaders = 1;
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = (sig_uri_mode_t)(flags % 3);
    opts.flags = (flags & 8) ? SIG_OPT_UNSIGNED_TOKEN : 0;
    rc = sig_resign_query(&req, &a, fuzz_creds(flags & 4), &opts, out, sizeof(out), &n, &res);
    if (rc == 0) {
        sig_auth_t *again = malloc(sizeof(*again));

        if (n > sizeof(out) || again == NULL || sig_auth_parse_query(out, n, again) != 0 ||
            again->access_key_id.len != 20 ||
            memcmp(again->access_key_id.base, "AKIAIOSFODNN7EXAMPLE", 20) != 0) {
            __builtin_trap();
        }
        free(again);
    }
    (void)sig_verify(&req, &a, fuzz_creds(0), &opts, &detected);
}

static void fuzz_canonical(const char *in, size_t len)
{
    char stack[256];
    sig_buf_t b;
    sig_names_t names;
    int mode;

    for (mode = 0; mode < 3; mode++) {
        sig_buf_init(&b, stack, sizeof(stack), SIG_CANON_MAX);
        (void)sig_canonical_uri(&b, in, len, (sig_uri_mode_t)mode);
        sig_buf_free(&b);
    }
    sig_buf_init(&b, stack, sizeof(stack), SIG_CANON_MAX);
    (void)sig_canonical_query(&b, in, len, SIG_QUERY_SKIP_SIGNATURE);
    sig_buf_free(&b);
    sig_buf_init(&b, stack, sizeof(stack), SIG_CANON_MAX);
    (void)sig_canonical_header_value(&b, in, len);
    if (b.err == 0 && b.len > len) {
        __builtin_trap();
    }
    sig_buf_free(&b);
    if (sig_names_parse(in, len, &names) == 0 &&
        (names.n == 0 || names.n > SIG_SIGNED_HEADERS_MAX)) {
        __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in;
    size_t len;
    int flags;
    char *copy;

    if (size < 1 || size > FUZZ_INPUT_MAX) {
        return 0;
    }
    flags = data[0];
    len = size - 1;
    /* an exact-size heap copy, so that any read past the end is caught */
    copy = malloc(len > 0 ? len : 1);
    if (copy == NULL) {
        return 0;
    }
    if (len > 0) {
        memcpy(copy, data + 1, len);
    }
    in = copy;
    fuzz_header(in, len, flags);
    fuzz_query(in, len, flags);
    fuzz_canonical(in, len);
    free(copy);
    return 0;
}
