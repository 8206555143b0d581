/* Shared by the vector tests: re-sign a parsed vector request through the public API and
 * collect canonical request, string to sign, output and result. */
#ifndef SIG_TEST_RESIGN_H
#define SIG_TEST_RESIGN_H

#include "tests/signing/sig_test_util.h"

#include "base/px_err.h"
#include "signing/sig_auth.h"
#include "signing/sig_resign.h"
#include "signing/sig_v4.h"

#define OUT_MAX 8192

/* Outputs of one re-signing run. */
typedef struct run {
    sig_buf_t creq;
    sig_buf_t sts;
    char out[OUT_MAX];
    size_t out_len;
    sig_result_t res;
    int rc;
} run_t;

TU_FN void run_init(run_t *r)
{
    memset(r, 0, sizeof(*r));
    sig_buf_init(&r->creq, NULL, 0, SIG_CANON_MAX);
    sig_buf_init(&r->sts, NULL, 0, SIG_CANON_MAX);
}

TU_FN void run_free(run_t *r)
{
    sig_buf_free(&r->creq);
    sig_buf_free(&r->sts);
}

/* Re-signs req (Authorization header or presigned query) with creds; fills r. */
TU_FN void resign(tu_req_t *req, int query, const sig_creds_t *creds, sig_uri_mode_t mode,
                  const char *payload, unsigned flags, sig_auth_t *auth, run_t *r, int verify_rc)
{
    sig_request_t sr;
    sig_opts_t opts;
    unsigned detected = 99;
    int idx;

    run_init(r);
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = mode;
    opts.flags = flags;
    opts.creq = &r->creq;
    opts.sts = &r->sts;
    if (payload != NULL) {
        opts.payload_hash = tu_s(payload);
    }
    if (!query) {
        idx = tu_find(req, "authorization");
        assert_true(idx >= 0);
        assert_int_equal(
            sig_auth_parse_header(req->headers[idx].value.base, req->headers[idx].value.len, auth),
            0);
        tu_remove(req, idx);
    } else {
        sig_str_t p;
        sig_str_t q;

        sig_target_split(req->target, &p, &q);
        assert_int_equal(sig_auth_parse_query(q.base, q.len, auth), 0);
    }
    sr.method = req->method;
    sr.target = req->target;
    sr.headers = req->headers;
    sr.nheaders = req->nheaders;
    if (query) {
        r->rc =
            sig_resign_query(&sr, auth, creds, &opts, r->out, sizeof(r->out), &r->out_len, &r->res);
    } else {
        r->rc = sig_resign_header(&sr, auth, creds, &opts, r->out, sizeof(r->out), &r->out_len,
                                  &r->res);
    }
    assert_int_equal(r->rc, 0);
    /* the client's own signature verifies with the same credentials */
    opts.creq = NULL;
    opts.sts = NULL;
    opts.flags = 0;
    assert_int_equal(sig_verify(&sr, auth, creds, &opts, &detected), verify_rc);
    if (verify_rc == 0) {
        assert_int_equal(detected, flags);
    }
    if (query && verify_rc == 0 && payload != NULL && strcmp(payload, SIG_EMPTY_SHA256) == 0) {
        /* without a payload hash, the presigned layout (aws-c-auth's SHA-256 of the empty
         * body instead of UNSIGNED-PAYLOAD) is detected, and re-signing with it agrees */
        char out2[OUT_MAX];
        size_t n2 = 0;
        sig_result_t res2;

        opts.payload_hash.base = NULL;
        opts.payload_hash.len = 0;
        assert_int_equal(sig_verify(&sr, auth, creds, &opts, &detected), 0);
        assert_int_equal(detected, flags | SIG_OPT_EMPTY_PAYLOAD);
        opts.flags = detected;
        assert_int_equal(sig_resign_query(&sr, auth, creds, &opts, out2, sizeof(out2), &n2, &res2),
                         0);
        if (auth->alg == SIG_ALG_V4) { /* ECDSA output is randomized (and varies in length) */
            assert_int_equal(n2, r->out_len);
            assert_memory_equal(out2, r->out, n2);
        }
    }
}

TU_FN void body_hash(const tu_req_t *req, char hex[65])
{
    assert_int_equal(sig_sha256_hex(req->body.base, req->body.len, hex), 0);
    hex[64] = '\0';
}

#endif
